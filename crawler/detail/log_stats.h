// Scrapy's LogStats extension: every LOGSTATS_INTERVAL seconds, one line of progress with rates
// per minute, "Crawled N pages (at X pages/min), scraped M items (at Y items/min)", read from the
// crawl's stats. The first line is logged by start(), once the spider has opened; an interval of
// 0 or less logs nothing.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>

#include "config/log.h"
#include "config/stats.h"

namespace crawler::detail {

class log_stats {
 public:
  log_stats(boost::asio::io_context& io, stats& stats, double interval);
  /// Logs the first line and the next every interval.
  void start();

 private:
  void log();

  boost::asio::steady_timer timer_;
  stats& stats_;
  double interval_;
  std::int64_t last_pages_ = 0, last_items_ = 0;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace crawler::detail
