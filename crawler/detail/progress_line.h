// The live status line of a crawl on a terminal (PROGRESS, on by default; off when standard error
// is not a terminal, so logs written to files and CI stay clean). Rewritten in place four times a
// second under the log lines:
//
//   0:42 | 12,345 pages 294/s | 11,902 items | 1,204 queued | 16 in flight | 3,411 dupes | 2 errors
//
// with CLOSESPIDER_PAGECOUNT or CLOSESPIDER_ITEMCOUNT, a bar toward the limit after it. The line
// fits the terminal's width, read at every draw so a resized window is followed: on a narrow one
// the least wanted parts go first (dupes, in flight, errors, queued, the bar), and what still
// does not fit is cut, so it never wraps (a wrapped line leaves a stale row at each redraw).
// Erased when the crawl ends, before the stats are dumped; finish() then writes one summary line
// in its place, the last thing the crawl prints:
//
//   Done in 0:42 (finished): 12,345 pages (294/s), 11,902 items, 3,411 dupes, 2 errors
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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

  /// Erases the line and stops drawing it.
  void erase();
  /// Writes the summary of a crawl that ended with `finish_reason`, fitted to the terminal, and a
  /// newline.
  void finish(const std::string& finish_reason);

 private:
  void draw();
  std::string text(std::size_t width) const;

  boost::asio::steady_timer timer_;
  stats& stats_;
  crawl_gauges gauges_;
  std::chrono::steady_clock::time_point started_;
  std::int64_t page_limit_, item_limit_;
  bool erased_ = false;
};

/// `n` with thousands separated by commas: 12345 -> "12,345".
std::string with_commas(std::int64_t n);

/// One part of a status line, and how much it is wanted: when the line is too wide for the
/// terminal, parts go from the highest rank down; rank 0 parts always stay.
struct line_part {
  std::string text;
  int rank = 0;
};

/// `parts` joined with `separator`, without the highest ranks that do not fit in `width`
/// columns; cut to `width` when even the rank 0 parts do not. Parts are ASCII.
std::string fit_line(const std::vector<line_part>& parts, std::string_view separator,
                     std::size_t width);

/// The terminal's width in columns on standard error; 80 when it cannot be read.
std::size_t terminal_columns();

}  // namespace crawler::detail
