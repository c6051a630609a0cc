// Scrapy's MemoryUsage extension (MEMUSAGE_ENABLED, on by default): the process's peak resident
// memory, read at start and every MEMUSAGE_CHECK_INTERVAL_SECONDS, kept in memusage/startup and
// memusage/max. Past MEMUSAGE_WARNING_MB it warns once (memusage/warning_reached); past
// MEMUSAGE_LIMIT_MB it logs an error and closes the spider with "memusage_exceeded"
// (memusage/limit_reached). 0 turns a threshold off, as in Scrapy.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>

#include "config/log.h"
#include "config/settings.h"
#include "config/stats.h"

namespace crawler::detail {

class memory_usage {
 public:
  /// `close(reason)` closes the spider; it is called at most once.
  memory_usage(boost::asio::io_context& io, const settings& settings, stats& stats,
               std::function<void(std::string)> close);

 private:
  void check();

  boost::asio::steady_timer timer_;
  stats& stats_;
  std::function<void(std::string)> close_;
  double interval_;
  std::int64_t limit_bytes_, warning_bytes_;
  bool warned_ = false, closed_ = false;
  std::shared_ptr<spdlog::logger> logger_;
};

/// The process's peak resident set size in bytes (getrusage's ru_maxrss, as Scrapy reads it).
std::int64_t peak_resident_bytes();

}  // namespace crawler::detail
