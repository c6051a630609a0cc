#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string_view>
#include <thread>

#include "config/file_writes.h"
#include "config/log.h"
#include "config/redact.h"
#include "config/settings.h"
#include "config/stats.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/cli/detail/lines.h"
#include "request/canonical_url.h"
#include "dedup/dupefilter.h"

namespace crawler::cli {
namespace {

namespace asio = boost::asio;

struct dedup_options {
  std::vector<std::string> overrides;
  std::vector<std::string> urls;
  std::string spider = "dedup";
  bool seed_scenario = false;
};

constexpr std::size_t batch_size = 100;  // a page's worth of links per dupefilter call

// Feeds URLs through the configured dupefilter in page-sized batches and prints the new ones.
class url_deduplicator {
 public:
  url_deduplicator(dedup::rfp_dupefilter& filter, dedup::fingerprint_scheme scheme)
      : filter_(filter), scheme_(scheme) {}

  // `source` and `line` say where the URL came from, for the message when it is not one.
  bool add(std::string_view url, std::string_view source, std::size_t line = 0) {
    try {
      fingerprints_.push_back(dedup::request_fingerprint("GET", url, "", scheme_));
      urls_.emplace_back(url);
    } catch (const dedup::url_error& error) {
      std::cerr << "crawler dedup: " << source << (line ? ":" + std::to_string(line) : "") << ": "
                << redact(error.what()) << '\n';
      return false;
    }
    if (urls_.size() == batch_size) flush();
    return true;
  }

  void flush() {
    if (urls_.empty()) return;
    auto flags = filter_.async_seen(fingerprints_, asio::use_future).get();
    for (std::size_t i = 0; i < urls_.size(); ++i) {
      if (flags[i]) {
        filter_.log("<GET " + urls_[i] + ">");
      } else {
        std::cout << urls_[i] << '\n';
      }
    }
    urls_.clear();
    fingerprints_.clear();
  }

 private:
  dedup::rfp_dupefilter& filter_;
  dedup::fingerprint_scheme scheme_;
  std::vector<std::string> urls_;
  std::vector<dedup::fingerprint> fingerprints_;
};

int run(const dedup_options& options) {
  crawler::settings settings;
  settings.set("LOG_LEVEL", "INFO");
  for (const auto& override : options.overrides) settings.set_from_string(override);
  remember_secrets(settings);
  configure_logging(settings);
  auto scheme = dedup::fingerprint_scheme_from(settings);
  auto log = get_logger("crawler");

  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread loop([&io] { io.run(); });
  struct stop_loop {
    asio::io_context& io;
    std::thread& thread;
    decltype(work)& guard;
    ~stop_loop() {
      guard.reset();
      io.stop();
      thread.join();
    }
  } stopper{io, loop, work};

  crawler::stats stats;
  auto filter = dedup::make_dupefilter({settings, stats, options.spider, io.get_executor()});
  filter->async_open(asio::use_future).get();
  log->info("Dupefilter: {}", filter->backend());

  url_deduplicator deduplicator(*filter, scheme);
  bool all_ok = true;
  if (options.seed_scenario) {
    // The seed articles' scenario: ?wd=0..9, then ?wd=0..99: 110 requests, 10 of them duplicates.
    for (int round : {10, 100}) {
      for (int i = 0; i < round; ++i)
        deduplicator.add("http://127.0.0.1:8080/s?wd=" + std::to_string(i), "seed");
    }
  }
  for (const auto& source : options.urls) {
    std::FILE* file = source == "-" ? stdin : std::fopen(source.c_str(), "rb");
    if (!file) {
      std::cerr << "crawler dedup: cannot read " << source << '\n';
      all_ok = false;
      continue;
    }
    const std::string where = source == "-" ? "stdin" : source;
    bool read = detail::for_each_line(file, [&](std::string_view line, std::size_t number) {
      if (!line.empty()) all_ok &= deduplicator.add(line, where, number);
    });
    if (file != stdin) std::fclose(file);
    if (!read) {
      std::cerr << "crawler dedup: cannot read " << source << '\n';
      all_ok = false;
    }
  }
  deduplicator.flush();
  std::cout.flush();
  filter->async_close(asio::use_future).get();
  log->info("Dumping crawler stats:\n{}", stats.to_json().dump(1));
  if (settings.has("STATS_FILE")) {
    try {
      write_destination(settings.get_string("STATS_FILE"), stats.to_json().dump(1) + '\n');
    } catch (const std::exception& error) {
      std::cerr << "crawler dedup: STATS_FILE: " << error.what() << '\n';
      all_ok = false;
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace

void add_dedup_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<dedup_options>();
  CLI::App* command = app.add_subcommand(
      "dedup",
      "Print the URLs of FILEs (or - for stdin) that the configured dupefilter has not seen");
  // One value per -s: `-s K=V FILE` leaves FILE to the positional argument.
  command->add_option("-s,--set", options->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->add_option("--spider", options->spider, "spider name used in Redis keys")
      ->capture_default_str();
  command->add_flag("--seed-scenario", options->seed_scenario,
                    "feed the seed article's 10 + 100 test URLs (10 duplicates) first");
  command->add_option("files", options->urls,
                      "files of URLs, one per line; - reads standard input");
  command->callback([options, &exit_status] {
    exit_status = run_command("dedup", [&] { return run(*options); });
  });
}

}  // namespace crawler::cli
