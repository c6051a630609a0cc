// Scrapy's PeriodicLog extension: every LOGSTATS_INTERVAL seconds, and once more as the crawl
// closes, one INFO line on the "periodic_log" logger holding a JSON object (sorted keys, indented
// by 4) with any of:
//
//   "stats": the stats (PERIODIC_LOG_STATS),
//   "delta": how much each numeric stat changed since the last line (PERIODIC_LOG_DELTA),
//   "time":  log_interval, start_time, utcnow, log_interval_real, elapsed
//            (PERIODIC_LOG_TIMING_ENABLED).
//
// PERIODIC_LOG_STATS and PERIODIC_LOG_DELTA take true, or {"include": [...], "exclude": [...]}:
// a stat whose name contains an excluded substring is left out; with includes, only a stat whose
// name contains one of them is kept. Nothing is logged when none of the three is set, or when
// LOGSTATS_INTERVAL is 0. A crawl's memory over time, for one: include "scheduler/" (the queue is
// enqueued - dequeued) and "memusage/" with MEMUSAGE_CHECK_INTERVAL_SECONDS as short.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/log.h"
#include "config/settings.h"
#include "config/stats.h"

namespace crawler::detail {

class periodic_log {
 public:
  /// Throws settings_error naming the setting (and its "include"/"exclude") when one is malformed.
  periodic_log(boost::asio::io_context& io, const settings& settings, stats& stats);

  /// The last line, as the crawl closes (before the stats are dumped); the timer stops.
  void close();

 private:
  // Which stat names a section keeps.
  struct filter {
    std::vector<std::string> include, exclude;
    bool allows(const std::string& name) const;
  };
  static std::optional<filter> read_filter(const settings& settings, const char* key);

  void log();
  void tick();  // logs, and again after the interval

  boost::asio::steady_timer timer_;
  stats& stats_;
  double interval_;
  std::optional<filter> stats_filter_, delta_filter_;
  bool timing_ = false;
  bool closed_ = false;
  std::map<std::string, nlohmann::json> previous_;  // numeric stats at the last line, for delta
  std::chrono::steady_clock::time_point started_, last_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace crawler::detail
