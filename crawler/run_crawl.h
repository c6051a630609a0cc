// Running a crawl: the few lines a program needs, and what `crawler crawl` does.
//
//   int main() {
//     my_spider spider;
//     crawler::settings settings = crawler::settings_for(spider, {"LOG_LEVEL=INFO"});
//     crawler::crawl_options options;
//     options.pipelines.push_back(std::make_unique<my_pipeline>());
//     auto result = crawler::run_crawl(spider, settings, std::move(options));
//     return result.finish_reason == "finished" ? 0 : 1;
//   }
//
// run_crawl configures logging from LOG_LEVEL, runs the engine on one event loop on the calling
// thread, logs "Crawled N pages (at X pages/min), scraped M items (at Y items/min)" every
// LOGSTATS_INTERVAL seconds, dumps the stats at the end as Scrapy does and writes them as JSON to
// STATS_FILE when it is set. Ctrl-C (SIGINT) or SIGTERM closes the spider gracefully, downloads in
// flight finish and JOBDIR keeps the queue; a second one stops at once, putting the requests in
// flight back in the queue first.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "crawler/middleware.h"
#include "crawler/pipeline.h"
#include "crawler/spider.h"

namespace crawler {

/// The settings a crawl of `spider` runs on: built-in defaults, then the spider's custom_settings,
/// then each `KEY=VALUE` override in order. Throws settings_error naming the key.
settings settings_for(const spider& spider, const std::vector<std::string>& overrides,
                      const nlohmann::json& file_settings = nlohmann::json::object());

struct crawl_options {
  std::vector<std::unique_ptr<item_pipeline>> pipelines;
  std::vector<std::unique_ptr<downloader_middleware>> downloader_middlewares;
  std::vector<std::unique_ptr<spider_middleware>> spider_middlewares;
  /// Whether SIGINT/SIGTERM stop the crawl (a program embedding several crawls may say no).
  bool handle_signals = true;
  /// Whether a crawl that scraped no item ends with a WARNING saying why (robots.txt, offsite,
  /// HTTP errors, selectors that found nothing). Commands that fetch pages, not items, say no.
  bool expects_items = true;
};

struct crawl_result {
  std::string finish_reason;
  nlohmann::json stats;
};

/// Crawls until the spider closes. Throws settings_error for a bad setting and std::runtime_error
/// (or redis_error, dupefilter_error) when the crawl cannot start; what() names the problem.
crawl_result run_crawl(spider& spider, const settings& settings, crawl_options options = {});

}  // namespace crawler
