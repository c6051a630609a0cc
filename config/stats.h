// The crawl's one stats object, Scrapy's StatsCollector: keys read `component/event[/qualifier]`.
//
//   stats.inc_value("bloomfilter/filtered");
//   stats.set_value("finish_reason", "finished");
//   stats.max_value("request_depth_max", depth);
//
// It lives in the bottom module because every module reports into it. Thread-safe: the event-loop
// thread and worker threads may report concurrently. Hot paths should add a batch's count in one
// call rather than one call per item.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace crawler {

/// Now in UTC as start_time and finish_time hold it: "2026-11-24T18:40:00.123456".
std::string utc_timestamp();

class stats {
 public:
  void inc_value(std::string_view key, std::int64_t count = 1);
  void set_value(std::string_view key, nlohmann::json value);
  /// Keeps the larger of the stored value and `value` (starts at `value`).
  void max_value(std::string_view key, std::int64_t value);
  void min_value(std::string_view key, std::int64_t value);
  // inc_value, max_value and min_value on a key that set_value gave something other than a
  // number throw std::invalid_argument naming the key and what it holds.

  std::optional<nlohmann::json> get_value(std::string_view key) const;
  /// The integer value of `key`, or `fallback` when it was never set.
  std::int64_t get_int(std::string_view key, std::int64_t fallback = 0) const;

  /// The stats only inc_value has written: counts that add up across a fleet's workers (not
  /// maxima, times or reasons).
  std::map<std::string, std::int64_t> counters() const;

  /// Every stat as one JSON object with sorted keys (what STATS_FILE holds).
  nlohmann::json to_json() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, nlohmann::json, std::less<>> values_;
  std::set<std::string, std::less<>> counter_keys_;
};

}  // namespace crawler
