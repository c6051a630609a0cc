// `crawler genspider NAME DOMAIN [--template basic|crawl|cpp]`: a working start, as `scrapy
// genspider` writes one: a crawl file that `crawler check` passes and `crawler run` runs, or a C++
// spider with the CMakeLists.txt that builds it against the installed package.
#include <algorithm>
#include <boost/url/parse.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "crawler/cli/detail/commands.h"

namespace crawler::cli {
namespace {

// A crawl file: basic has an item per start page (what Scrapy's basic template leaves as `pass`),
// crawl adds Scrapy's rule that follows "Items/" links to parse_item. Fields to fill in.
constexpr const char* crawl_file_template = R"({
  "settings": {"ROBOTSTXT_OBEY": true},
  "spider": {
    "name": "{name}",
    "allowed_domains": ["{host}"],
    "start_urls": ["{start}"],{rules}
    "callbacks": {
      "{callback}": {"fields": {"url": "$url", "title": "title::text"}}
    }
  }
}
)";

constexpr const char* crawl_rules =
    R"(
    "rules": [{"allow": ["Items/"], "callback": "parse_item", "follow": true}],)";

constexpr const char* cpp_template =
    R"(// {name}: crawls {host}. Build it with the CMakeLists.txt beside it, then
//   ./build/{name} crawl {name} -O items.jsonl
// (every `crawler` subcommand is there: list, fetch, check, ...).
#include <crawler/cli/main.h>
#include <crawler/crawl_spider.h>

namespace {

class {name}_spider : public crawler::crawl_spider {
 public:
  {name}_spider() : crawl_spider("{name}") {
    allowed_domains = {"{host}"};
    start_urls = {"{start}"};
    // Scrapy's Rule(LinkExtractor(allow=r"Items/"), callback="parse_item", follow=True).
    rules.push_back({crawler::link_extractor({.allow = {R"re(Items/)re"}}), "parse_item"});
    rules.back().follow = true;
    callback("parse_item", &{name}_spider::parse_item);
  }

  void parse_item(const crawler::response& response, crawler::output& out) {
    out.item({{"url", response.url}, {"title", response.css("title::text").get("")}});
  }
};

}  // namespace

CRAWLER_REGISTER_SPIDER({name}_spider, "Crawls {host}");

int main(int argc, char** argv) { return crawler::cli::main(argc, argv); }
)";

constexpr const char* cmake_template =
    R"(# {name}: a program of its own with the {name} spider and every `crawler` subcommand,
# built against the installed crawler package:
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=<where crawler is installed> && cmake --build build
cmake_minimum_required(VERSION 3.25)
project({name} LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(crawler REQUIRED)
add_executable({name} {name}.cpp)
target_link_libraries({name} PRIVATE crawler::cli)
)";

std::string fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    std::string placeholder = "{" + key + "}";
    for (auto at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + value.size())) {
      text.replace(at, placeholder.size(), value);
    }
  }
  return text;
}

struct genspider_options {
  std::string name, domain, template_name = "basic", dir = ".";
  bool force = false;
};

int generate(const genspider_options& options) {
  // The name is a spider name and, for C++, part of a class name: letters, digits, '_'.
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (options.name.empty() || std::isdigit(static_cast<unsigned char>(options.name[0])) ||
      !std::all_of(options.name.begin(), options.name.end(), word)) {
    std::cerr << "crawler genspider: NAME \"" << options.name
              << "\" must be letters, digits and '_', not starting with a digit\n";
    return 2;
  }
  // DOMAIN as Scrapy takes it: a domain, or a URL whose scheme and host:port are kept.
  std::string given = options.domain.find("://") == std::string::npos
                          ? "https://" + options.domain
                          : options.domain;
  auto url = boost::urls::parse_uri(given);
  if (!url || url->host().empty()) {
    std::cerr << "crawler genspider: DOMAIN \"" << options.domain
              << "\" is neither a domain nor a URL\n";
    return 2;
  }
  std::string host = url->host();
  std::string start =
      std::string(url->scheme()) + "://" + std::string(url->encoded_host_and_port()) + "/";
  std::map<std::string, std::string> values{
      {"name", options.name}, {"host", host}, {"start", start}};

  std::map<std::filesystem::path, std::string> files;
  auto dir = std::filesystem::path(options.dir);
  if (options.template_name == "basic" || options.template_name == "crawl") {
    bool crawl = options.template_name == "crawl";
    values["rules"] = crawl ? crawl_rules : "";
    values["callback"] = crawl ? "parse_item" : "parse_start_url";
    files[dir / (options.name + ".json")] = fill(crawl_file_template, values);
  } else {  // cpp: a folder of its own, a CMake project
    files[dir / options.name / (options.name + ".cpp")] = fill(cpp_template, values);
    files[dir / options.name / "CMakeLists.txt"] = fill(cmake_template, values);
  }
  for (const auto& [path, text] : files) {
    if (std::filesystem::exists(path) && !options.force) {
      std::cerr << "crawler genspider: " << path.string()
                << " already exists (--force replaces it)\n";
      return 1;
    }
  }
  for (const auto& [path, text] : files) {
    std::filesystem::create_directories(path.parent_path().empty() ? "." : path.parent_path());
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::cerr << "crawler genspider: cannot write " << path.string() << '\n';
      return 1;
    }
  }
  std::cout << "Created spider '" << options.name << "' using template '" << options.template_name
            << "' in " << (options.template_name == "cpp" ? (dir / options.name).string() + "/"
                                                          : files.begin()->first.string())
            << '\n';
  return 0;
}

}  // namespace

void add_genspider_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<genspider_options>();
  CLI::App* command = app.add_subcommand(
      "genspider", "Write a new spider for DOMAIN: a crawl file (basic, crawl) or C++ (cpp)");
  command->add_option("name", options->name, "the spider's name")->required();
  command->add_option("domain", options->domain, "the domain (or a URL) it crawls")->required();
  command->add_option("-t,--template", options->template_name, "basic (default), crawl or cpp")
      ->check(CLI::IsMember({"basic", "crawl", "cpp"}));
  command->add_option("-d,--dir", options->dir, "where to write it (default: here)");
  command->add_flag("--force", options->force, "replace files that exist");
  command->callback([options, &exit_status] { exit_status = generate(*options); });
}

}  // namespace crawler::cli
