// `crawler crawl`, `crawler list`, `crawler fetch` and `crawler version`.
#include <curl/curl.h>
#include <hiredis/hiredis.h>

#include <boost/version.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "config/log.h"
#include "config/redact.h"
#include "crawler/builtin_middlewares.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/components.h"
#include "crawler/config_spider.h"
#include "crawler/crawl_spider.h"
#include "crawler/feeds.h"
#include "crawler/run_crawl.h"
#include "scheduler/scheduler.h"

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

// Every -a NAME=VALUE, by name (the last of a name wins): the spider's arguments, and what a
// crawl file's start URLs may name.
spider_arguments arguments_by_name(const std::vector<std::string>& arguments) {
  spider_arguments by_name;
  for (const auto& argument : arguments) {
    auto [key, value] = split_argument(argument);
    by_name[key] = value;
  }
  return by_name;
}

// The settings of a crawl file that failed to load, each valid one on its own (the invalid ones
// were named already), and its spider's name: what `check` looks for components and feeds in.
std::pair<settings, std::string> valid_settings_of(const std::string& file) {
  settings valid;
  std::string name = "spider";
  std::ifstream in(file);
  auto document = nlohmann::json::parse(in, nullptr, false);
  if (!document.is_object()) return {valid, name};
  if (auto own = document.find("user_settings"); own != document.end() && own->is_object()) {
    for (const auto& [key, value] : own->items()) {
      try {
        valid.declare(key, value, "user_settings");
      } catch (const settings_error&) {
      }
    }
  }
  if (auto found = document.find("settings"); found != document.end() && found->is_object()) {
    for (const auto& [key, value] : found->items()) {
      try {
        valid.merge_json(nlohmann::json{{key, value}}, "settings");
      } catch (const settings_error&) {
      }
    }
  }
  if (auto spider = document.find("spider"); spider != document.end() && spider->is_object()) {
    name = spider->value("name", name);
  }
  return {valid, name};
}

// "1 rule", "2 rules".
std::string counted(std::size_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string known_spiders() {
  std::string names;
  for (const auto* entry : registered_spiders()) names += (names.empty() ? "" : ", ") + entry->name;
  return names.empty() ? "none" : names;
}

// One line: the name nobody registered and the names somebody did. A crawl file given where a
// spider's name goes (Scrapy's `scrapy runspider FILE` habit) is pointed at `crawler run`.
void say_unknown_spider(std::string_view command, const std::string& name) {
  std::cerr << "crawler " << command << ": unknown spider \"" << name
            << "\"; known spiders: " << known_spiders();
  std::error_code ignored;
  if (name.ends_with(".json") || std::filesystem::is_regular_file(name, ignored)) {
    std::cerr << " (a crawl file runs with `crawler run " << name << "`)";
  }
  std::cerr << '\n';
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
  for (const auto& argument : options.append_feeds) {
    auto [uri, feed] = feed_for_file(argument, false);
    feeds[uri] = std::move(feed);
  }
  for (const auto& argument : options.overwrite_feeds) {
    auto [uri, feed] = feed_for_file(argument, true);
    feeds[uri] = std::move(feed);
  }
  settings.set("FEEDS", feeds, "-o");
  return settings;
}

// 0 when the crawl ended as crawls end (finished, a CLOSESPIDER_* limit, a shutdown); 1 when what
// it stores into failed (Redis, JOBDIR, a feed), so scripts and schedulers see it; 2 when Redis
// refused what the fleet asks in a way no retry fixes (a key of the wrong type), or its queue holds
// entries in the other form than SCHEDULER_SERIALIZER's: a setup error.
int exit_status_for(const crawl_result& result) {
  const auto& reason = result.finish_reason;
  if (reason == "redis_error" || reason == "queue_form_mismatch") return 2;
  bool failed = reason == "redis_unavailable" || reason == "redis_state_lost" ||
                reason == "jobdir_write_failed" || reason == "feed_write_failed" ||
                reason == "queue_segments_failed";
  return failed ? 1 : 0;
}

int run_crawl_command(const crawl_options_cli& options) {
  const auto* entry = find_spider(options.spider);
  if (!entry) {
    say_unknown_spider("crawl", options.spider);
    return 2;
  }
  auto spider = entry->make();
  for (const auto& [key, value] : arguments_by_name(options.arguments)) {
    spider->set_argument(key, value);
  }
  auto settings = crawl_settings(*spider, options);
  return exit_status_for(run_crawl(*spider, settings));
}

void add_feed_options(CLI::App* command, crawl_options_cli& options) {
  command
      ->add_option("-o,--output", options.append_feeds,
                   "append scraped items to FILE (.jsonl, .jl, .json, .csv, .xml; or FILE:FORMAT)")
      ->allow_extra_args(false);
  command
      ->add_option("-O,--overwrite-output", options.overwrite_feeds,
                   "write scraped items to FILE, replacing it")
      ->allow_extra_args(false);
}

int run_config_command(const std::string& file, const crawl_options_cli& options) {
  auto arguments = arguments_by_name(options.arguments);
  auto config = load_crawl_config_file(file, arguments);
  for (const auto& unreachable : config.unreachable) {
    get_logger("crawler")->warn("{}: {}", file, unreachable);
  }
  for (const auto& [key, value] : arguments) config.spider->set_argument(key, value);
  auto settings = crawl_settings(*config.spider, options, config.settings);
  if (config.push_only && !scheduler_is_redis(settings.get_string("SCHEDULER"))) {
    throw config_error(file + ": spider.start_urls: is required with SCHEDULER=" +
                       settings.get_string("SCHEDULER") +
                       " (only a fleet's workers wait for pushed URLs)");
  }
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

// `scrapy parse`: one page through one callback, printing the items and requests it yields, a
// block per level; with --depth N the requests are followed N - 1 levels further, each through
// the callback it names.
class parse_spider : public spider {
 public:
  parse_spider(spider& inner, request first, int depth)
      : spider(inner.name()), inner_(inner), first_(std::move(first)), depth_(depth) {
    custom_settings = inner.custom_settings;
    user_settings = inner.user_settings;
    allowed_domains = inner.allowed_domains;
    parses_html = inner.parses_html;
    callback("_parse_command", &parse_spider::on_page);
  }

  void start_requests(output& out) override { out.request(wrapped(first_, 1)); }

  void on_page(const response& response, output& out) {
    const auto& meta = response.meta();
    auto level = meta.value("_parse_level", 1);
    output produced;
    inner_.call(meta.value("_parse_callback", std::string()), response, produced);
    auto& found = levels[level];
    for (auto& item : produced.items) found.items.push_back(std::move(item));
    for (const auto& request : produced.requests) found.requests.push_back(request.describe());
    ++pages;
    if (level >= depth_) return;
    for (auto& request : produced.requests) out.request(wrapped(std::move(request), level + 1));
  }

  /// What the pages of each level yielded, a block per level, as Scrapy prints it at the end.
  void print(std::ostream& out) const {
    for (const auto& [level, found] : levels) {
      out << ">>> STATUS DEPTH LEVEL " << level << " <<<\n"
          << "# Scraped Items  " << std::string(60, '-') << '\n';
      for (const auto& item : found.items) out << item.dump() << '\n';
      out << "\n# Requests  " << std::string(65, '-') << '\n';
      for (const auto& request : found.requests) out << request << '\n';
      out << '\n';
    }
  }

  struct yielded {
    std::vector<crawler::item> items;
    std::vector<std::string> requests;
  };
  std::map<int, yielded> levels;
  int pages = 0;

 private:
  // The request as this spider sends it: its callback kept in meta, to be run by on_page.
  static request wrapped(request original, int level) {
    original.meta["_parse_callback"] = original.callback;
    original.meta["_parse_level"] = level;
    original.callback = "_parse_command";
    return original;
  }

  spider& inner_;
  request first_;
  int depth_;
};

struct parse_options {
  crawl_options_cli common;
  std::string url, config, callback;
  bool rules = false;
  int depth = 1;
};

int run_parse_command(const parse_options& options) {
  std::unique_ptr<spider> owned;
  nlohmann::json file_settings = nlohmann::json::object();
  auto arguments = arguments_by_name(options.common.arguments);
  if (!options.config.empty()) {
    auto config = load_crawl_config_file(options.config, arguments);
    file_settings = config.settings;
    owned = std::move(config.spider);
  } else {
    const auto* entry = find_spider(options.common.spider);
    if (!entry) {
      say_unknown_spider("parse", options.common.spider);
      return 2;
    }
    owned = entry->make();
  }
  for (const auto& [key, value] : arguments) owned->set_argument(key, value);
  request first{options.url, options.callback};
  first.dont_filter = true;
  if (options.rules) {
    // As `scrapy parse --rules`: the first rule whose link extractor takes the URL decides.
    auto* crawling = dynamic_cast<crawl_spider*>(owned.get());
    std::size_t index = 0;
    while (crawling && index < crawling->rules.size() &&
           !crawling->rules[index].link_extractor.matches(options.url)) {
      ++index;
    }
    if (!crawling || index == crawling->rules.size()) {
      std::cerr << "crawler parse: no rule of spider " << owned->name() << " takes " << options.url
                << '\n';
      return 2;
    }
    first.callback = crawl_spider::rule_callback;
    first.meta["rule"] = index;
  } else if (!options.callback.empty() && !owned->has_callback(options.callback)) {
    std::cerr << "crawler parse: spider " << owned->name() << " has no callback \""
              << options.callback << "\"\n";
    return 2;
  }
  parse_spider spider{*owned, std::move(first), options.depth};
  auto settings = crawl_settings(spider, options.common, file_settings);
  crawl_options pages_only;  // parse prints what the callback yields; the feeds get nothing
  pages_only.expects_items = false;
  auto result = run_crawl(spider, settings, std::move(pages_only));
  spider.print(std::cout);
  if (spider.pages == 0) {
    std::cerr << "crawler parse: no response reached a callback (" << result.finish_reason << ")\n";
    return 1;
  }
  return exit_status_for(result);
}

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
    exit_status = run_command("crawl", [&] { return run_crawl_command(*crawl); });
  });

  struct run_options {
    crawl_options_cli common;
    std::string file;
  };
  auto run = std::make_shared<run_options>();
  CLI::App* run_subcommand =
      app.add_subcommand("run", "Run the crawl a JSON file describes (settings + spider)");
  run_subcommand->add_option("file", run->file, "the crawl file (see config/examples/)")
      ->required();
  // As `scrapy runspider -a`: http_user and http_pass, say, stay out of the file.
  run_subcommand->add_option("-a", run->common.arguments, "spider argument NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  add_feed_options(run_subcommand, run->common);
  add_common_options(run_subcommand, run->common);
  run_subcommand->callback([run, &exit_status] {
    exit_status = run_command("run", [&] { return run_config_command(run->file, run->common); });
  });

  auto parse = std::make_shared<parse_options>();
  CLI::App* parse_command = app.add_subcommand(
      "parse", "Run one page through a callback and print the items and requests it yields");
  parse_command->add_option("url", parse->url, "the page")->required();
  auto* config_option =
      parse_command->add_option("-c,--config", parse->config, "the crawl file of the spider");
  parse_command->add_option("--spider", parse->common.spider, "a compiled-in spider instead")
      ->excludes(config_option);
  parse_command->add_option("--callback", parse->callback, "the callback (default: parse)");
  parse_command->add_flag("-r,--rules", parse->rules,
                          "the callback of the first rule whose link extractor takes URL");
  parse_command->add_option("-d,--depth", parse->depth, "levels of requests to follow (1)")
      ->check(CLI::Range(1, 1000));
  parse_command->add_option("-a", parse->common.arguments, "spider argument NAME=VALUE")
      ->allow_extra_args(false);
  add_common_options(parse_command, parse->common);
  parse_command->callback([parse, &exit_status] {
    if (parse->config.empty() && parse->common.spider.empty()) {
      std::cerr << "crawler parse: give the spider with --config FILE.json or --spider NAME\n";
      exit_status = 2;
      return;
    }
    exit_status = run_command("parse", [&] { return run_parse_command(*parse); });
  });

  auto check_file = std::make_shared<std::string>();
  auto check_arguments = std::make_shared<std::vector<std::string>>();
  CLI::App* check = app.add_subcommand(
      "check", "Check a crawl file without fetching anything: every problem, with its JSON path");
  check->add_option("file", *check_file, "the crawl file")->required();
  check->add_option("-a", *check_arguments, "spider argument NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  check->callback([check_file, check_arguments, &exit_status] {
    try {
      auto arguments = arguments_by_name(*check_arguments);
      register_builtin_middlewares();
      // One pass finds every problem: the file's own, and what `crawler run` would stop at
      // before fetching (components by name, feed options), the latter over the settings that
      // are valid on their own even when others are not.
      std::vector<std::string> problems;
      std::optional<crawl_config> config;
      try {
        config = load_crawl_config_file(*check_file, arguments);
        for (const auto& unreachable : config->unreachable) {
          problems.push_back(*check_file + ": " + unreachable);
        }
      } catch (const config_error& error) {
        std::istringstream lines(error.what());
        for (std::string line; std::getline(lines, line);) problems.push_back(line);
      }
      auto [settings, name] = config
                                  ? std::pair(settings_for(*config->spider, {}, config->settings),
                                              config->spider->name())
                                  : valid_settings_of(*check_file);
      feed_exporter::uri_parameters parameters(arguments.begin(), arguments.end());
      parameters["name"] = name;
      parameters["time"] = "time";
      for (const auto& problem : component_problems(settings)) {
        problems.push_back(*check_file + ": settings." + problem);
      }
      for (const auto& problem : feed_exporter::problems(settings, parameters)) {
        problems.push_back(*check_file + ": settings." + problem);
      }
      if (!problems.empty()) {
        for (const auto& problem : problems) std::cerr << redact(problem) << '\n';
        exit_status = 1;
        return;
      }
      const auto& spider = *config->spider;
      std::cout << *check_file << ": OK: spider \"" << spider.name() << "\", "
                << counted(spider.start_urls.size(), "start URL") << ", "
                << counted(spider.rules.size(), "rule") << "\n";
      exit_status = 0;
    } catch (const std::exception& error) {
      std::cerr << "crawler check: " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });

  CLI::App* list = app.add_subcommand("list", "List the spiders compiled in");
  list->callback([] {
    for (const auto* entry : registered_spiders()) std::cout << entry->name << '\n';
  });

  CLI::App* components = app.add_subcommand("components",
                                            "List the pipelines, middlewares and extensions "
                                            "registered, by the setting that enables them");
  components->callback([] {
    register_builtin_middlewares();
    settings defaults;
    auto print = [&]<class Component>(std::type_identity<Component>) {
      auto setting = std::string(component_kind<Component>::setting);
      std::cout << setting << '\n';
      auto base = component_kind<Component>::base;
      auto orders = base.empty() ? nlohmann::json::object() : defaults.get(base);
      for (const auto& name : registered_components<Component>()) {
        std::cout << "  " << name;
        if (orders.contains(name)) std::cout << "  " << orders[name].dump() << " (" << base << ")";
        std::cout << '\n';
      }
    };
    print(std::type_identity<item_pipeline>{});
    print(std::type_identity<downloader_middleware>{});
    print(std::type_identity<spider_middleware>{});
    print(std::type_identity<extension>{});
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
    exit_status = run_command("fetch", [&] {
      fetch_spider spider{fetch->url, fetch->headers, !fetch->no_redirect};
      // The body is the output: the log says only what went wrong, unless -L asks for more.
      auto common = fetch->common;
      common.overrides.insert(common.overrides.begin(), {"LOG_LEVEL=WARNING", "PROGRESS=false"});
      auto settings = crawl_settings(spider, common);
      crawl_options pages_only;
      pages_only.expects_items = false;
      run_crawl(spider, settings, std::move(pages_only));
      return spider.fetched ? 0 : 1;
    });
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
