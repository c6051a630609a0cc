// `crawler crawl`, `crawler list`, `crawler fetch` and `crawler version`.
#include <curl/curl.h>
#include <hiredis/hiredis.h>

#include <boost/version.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "config/redact.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/config_spider.h"
#include "crawler/run_crawl.h"
#include "crawler/feeds.h"

namespace crawler::cli {
namespace {

struct crawl_options_cli {
  std::string spider;
  std::vector<std::string> arguments;
  std::vector<std::string> overrides;
  std::vector<std::string> append_feeds;
  std::vector<std::string> overwrite_feeds;
  std::string log_level;
  bool nolog = false;
};

std::pair<std::string, std::string> split_argument(const std::string& text) {
  auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw settings_error("-a " + text + ": a spider argument must be NAME=VALUE");
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

std::string known_spiders() {
  std::string names;
  for (const auto* entry : registered_spiders()) names += (names.empty() ? "" : ", ") + entry->name;
  return names.empty() ? "none" : names;
}

void add_common_options(CLI::App* command, crawl_options_cli& options) {
  // One value per flag: `-s K=V NAME` leaves NAME to the positional argument.
  command->add_option("-s,--set", options.overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->add_option("-L,--loglevel", options.log_level,
                      "log level: DEBUG, INFO, WARNING, ERROR or CRITICAL");
  command->add_flag("--nolog", options.nolog, "log only critical messages");
}

settings crawl_settings(const spider& spider, const crawl_options_cli& options,
                        const nlohmann::json& file_settings = nlohmann::json::object()) {
  auto settings = settings_for(spider, options.overrides, file_settings);
  if (!options.log_level.empty()) settings.set("LOG_LEVEL", options.log_level, "-L");
  if (options.nolog) settings.set("LOG_LEVEL", "CRITICAL", "--nolog");
  auto feeds = settings.get("FEEDS");
  for (const auto& path : options.append_feeds) feeds[path] = feed_for_file(path, false);
  for (const auto& path : options.overwrite_feeds) feeds[path] = feed_for_file(path, true);
  settings.set("FEEDS", feeds, "-o");
  return settings;
}

// 0 when the crawl ended as crawls end (finished, a CLOSESPIDER_* limit, a shutdown); 1 when what
// it stores into failed (Redis, JOBDIR, a feed), so scripts and schedulers see it.
int exit_status_for(const crawl_result& result) {
  const auto& reason = result.finish_reason;
  bool failed = reason == "redis_unavailable" || reason == "jobdir_write_failed" ||
                reason == "feed_write_failed";
  return failed ? 1 : 0;
}

int run_crawl_command(const crawl_options_cli& options) {
  const auto* entry = find_spider(options.spider);
  if (!entry) {
    std::cerr << "crawler crawl: unknown spider \"" << options.spider
              << "\"; known spiders: " << known_spiders() << '\n';
    return 2;
  }
  auto spider = entry->make();
  for (const auto& argument : options.arguments) {
    auto [key, value] = split_argument(argument);
    spider->set_argument(key, value);
  }
  auto settings = crawl_settings(*spider, options);
  return exit_status_for(run_crawl(*spider, settings));
}

void add_feed_options(CLI::App* command, crawl_options_cli& options) {
  command
      ->add_option("-o,--output", options.append_feeds,
                   "append scraped items to FILE (.jsonl, .jl, .json, .csv)")
      ->allow_extra_args(false);
  command
      ->add_option("-O,--overwrite-output", options.overwrite_feeds,
                   "write scraped items to FILE, replacing it")
      ->allow_extra_args(false);
}

int run_config_command(const std::string& file, const crawl_options_cli& options) {
  auto config = load_crawl_config_file(file);
  auto settings = crawl_settings(*config.spider, options, config.settings);
  return exit_status_for(run_crawl(*config.spider, settings));
}

// `scrapy fetch`: one request, every status passed through, the body (or headers) on stdout.
class fetch_spider : public spider {
 public:
  fetch_spider(std::string url, bool headers, bool redirect)
      : spider("fetch"), url_(std::move(url)), headers_(headers), redirect_(redirect) {
    // Every status reaches parse; redirects are still followed unless --no-redirect.
    custom_settings["HTTPERROR_ALLOW_ALL"] = true;
  }

  void start_requests(output& out) override {
    crawler::request request{url_};
    request.dont_filter = true;
    if (!redirect_) request.meta["dont_redirect"] = true;
    out.request(std::move(request));
  }

  void parse(const response& response, output&) override {
    fetched = true;
    // As Scrapy prints them: a line each, "\n"-ended; the body is followed by a "\n" too.
    if (headers_) {
      for (const auto& [name, value] : response.request.headers) {
        std::cout << "> " << name << ": " << value << '\n';
      }
      std::cout << ">\n";
      for (const auto& [name, value] : response.headers) {
        std::cout << "< " << name << ": " << value << '\n';
      }
    } else {
      std::cout << response.body << '\n';
    }
    std::cout.flush();
  }

  bool fetched = false;

 private:
  std::string url_;
  bool headers_;
  bool redirect_;
};

}  // namespace

void add_crawl_commands(CLI::App& app, int& exit_status) {
  auto crawl = std::make_shared<crawl_options_cli>();
  CLI::App* command = app.add_subcommand("crawl", "Run the spider NAME");
  command->add_option("spider", crawl->spider, "the spider's name (see `crawler list`)")
      ->required();
  command->add_option("-a", crawl->arguments, "spider argument NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  add_feed_options(command, *crawl);
  add_common_options(command, *crawl);
  command->callback([crawl, &exit_status] {
    try {
      exit_status = run_crawl_command(*crawl);
    } catch (const std::exception& error) {
      std::cerr << "crawler crawl: " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });

  struct run_options {
    crawl_options_cli common;
    std::string file;
  };
  auto run = std::make_shared<run_options>();
  CLI::App* run_command =
      app.add_subcommand("run", "Run the crawl a JSON file describes (settings + spider)");
  run_command->add_option("file", run->file, "the crawl file (see config/examples/)")->required();
  add_feed_options(run_command, run->common);
  add_common_options(run_command, run->common);
  run_command->callback([run, &exit_status] {
    try {
      exit_status = run_config_command(run->file, run->common);
    } catch (const std::exception& error) {
      std::cerr << "crawler run: " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });

  auto check_file = std::make_shared<std::string>();
  CLI::App* check = app.add_subcommand(
      "check", "Check a crawl file without fetching anything: every problem, with its JSON path");
  check->add_option("file", *check_file, "the crawl file")->required();
  check->callback([check_file, &exit_status] {
    try {
      auto config = load_crawl_config_file(*check_file);
      const auto& spider = *config.spider;
      std::cout << *check_file << ": OK: spider \"" << spider.name() << "\", "
                << spider.start_urls.size() << " start URLs, "
                << spider.rules.size() << " rules\n";
      exit_status = 0;
    } catch (const config_error& error) {
      std::cerr << redact(error.what()) << '\n';  // a line a problem
      exit_status = 1;
    } catch (const std::exception& error) {
      std::cerr << "crawler check: " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });

  CLI::App* list = app.add_subcommand("list", "List the spiders compiled in");
  list->callback([] {
    for (const auto* entry : registered_spiders()) std::cout << entry->name << '\n';
  });

  struct fetch_options {
    crawl_options_cli common;
    std::string url;
    bool headers = false;
    bool no_redirect = false;
  };
  auto fetch = std::make_shared<fetch_options>();
  CLI::App* fetch_command =
      app.add_subcommand("fetch", "Download URL with the crawler's downloader and print the body");
  fetch_command->add_option("url", fetch->url, "the URL to fetch")->required();
  fetch_command->add_flag("--headers", fetch->headers,
                          "print the request and response headers instead of the body");
  fetch_command->add_flag("--no-redirect", fetch->no_redirect, "do not follow redirects");
  add_common_options(fetch_command, fetch->common);
  fetch_command->callback([fetch, &exit_status] {
    try {
      fetch_spider spider{fetch->url, fetch->headers, !fetch->no_redirect};
      auto settings = crawl_settings(spider, fetch->common);
      run_crawl(spider, settings);
      exit_status = spider.fetched ? 0 : 1;
    } catch (const std::exception& error) {
      std::cerr << "crawler fetch: " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });

  auto verbose = std::make_shared<bool>(false);
  CLI::App* version = app.add_subcommand("version", "Print the crawler's version");
  version->add_flag("-v,--verbose", *verbose, "also print the versions of the libraries");
  version->callback([verbose] {
    std::cout << "crawler " << CRAWLER_VERSION << '\n';
    if (!*verbose) return;
    std::cout << "libcurl   : " << curl_version() << '\n'
              << "Boost     : " << BOOST_VERSION / 100000 << '.' << BOOST_VERSION / 100 % 1000
              << '.' << BOOST_VERSION % 100 << '\n'
              << "hiredis   : " << HIREDIS_MAJOR << '.' << HIREDIS_MINOR << '.' << HIREDIS_PATCH
              << '\n';
  });
}

}  // namespace crawler::cli
