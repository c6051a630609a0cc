// The live status line of a crawl on a terminal (PROGRESS, on by default; off when standard error
// is not a terminal, so logs written to files and CI stay clean). Rewritten in place four times a
// second under the log lines:
//
//   0:42 | 12,345 pages 294/s | 11,902 items | 1,204 queued | 16 in flight | 3,411 dupes | 2 errors
//
// with CLOSESPIDER_PAGECOUNT or CLOSESPIDER_ITEMCOUNT, a bar toward the limit after it. Erased
// when the crawl ends, before the stats are dumped.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "config/settings.h"
#include "config/stats.h"

namespace crawler::detail {

/// What the line shows of the engine beside the stats: requests queued and in flight, read on
/// the loop at each draw. The line knows nothing else of the engine.
struct crawl_gauges {
  std::function<std::size_t()> queued;
  std::function<std::size_t()> in_flight;
};

class progress_line {
 public:
  /// Whether a crawl with `settings` draws the line: PROGRESS and a terminal on standard error.
  static bool wanted(const settings& settings);

  progress_line(boost::asio::io_context& io, const settings& settings, stats& stats,
                crawl_gauges gauges);
  ~progress_line();  // erases the line
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

 private:
  void draw();
  std::string text() const;

  boost::asio::steady_timer timer_;
  stats& stats_;
  crawl_gauges gauges_;
  std::chrono::steady_clock::time_point started_;
  std::int64_t page_limit_, item_limit_;
};

/// `n` with thousands separated by commas: 12345 -> "12,345".
std::string with_commas(std::int64_t n);

}  // namespace crawler::detail
