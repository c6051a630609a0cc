// The clock a crawl reads for every decision that depends on time: download delays, AutoThrottle,
// idle slots, robots.txt lifetimes, REDIS_FAILURE_TIMEOUT, a fleet's MAX_IDLE_TIME_BEFORE_CLOSE,
// and the timers that wait for them. It runs with the machine's monotonic clock
// (std::chrono::steady_clock, whose epoch is usually the machine's boot), unless a test drives it:
//
//   crawler::driven_clock clock;                    // stands 1 s after the epoch, and stays there
//   ... start a crawl with DOWNLOAD_DELAY=600 ...   // the first request of a slot goes at once
//   clock.advance(std::chrono::seconds(600));       // the next one is due: its timer fires
//
// So "600 s pass" is a step of a test, not a wait, and "the machine booted a second ago" is a
// state a test can set on any machine. Nothing may assume the clock is far from its epoch: a
// time_point{} is a moment like any other, not "long ago".
//
// Timers on this clock are crawl_timer (Asio's basic_waitable_timer): while the clock is driven,
// the loop looks at it at least once a millisecond, so a timer fires as soon as a test's advance()
// makes it due.
#pragma once

#include <boost/asio/basic_waitable_timer.hpp>
#include <chrono>

namespace crawler {

struct crawl_clock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<crawl_clock>;
  static constexpr bool is_steady = true;

  /// The machine's steady_clock, or the driven time while a driven_clock lives.
  static time_point now() noexcept;
};

/// Seconds from `then` to now on the crawl's clock.
double seconds_since(crawl_clock::time_point then) noexcept;

/// `seconds` as the clock's duration (rounded toward zero).
crawl_clock::duration to_clock_duration(double seconds) noexcept;

/// How long Asio's loop may sleep before it looks at the clock again: as long as the timer's
/// due time when the machine's clock runs, at most a millisecond while a test drives it.
struct crawl_clock_wait_traits {
  static crawl_clock::duration to_wait_duration(const crawl_clock::duration& d);
  static crawl_clock::duration to_wait_duration(const crawl_clock::time_point& t);
};

using crawl_timer = boost::asio::basic_waitable_timer<crawl_clock, crawl_clock_wait_traits>;

/// For tests: while one lives, crawl_clock stands still at the time it was given and moves only
/// by advance(). One at a time in a process (a second one throws std::logic_error).
class driven_clock {
 public:
  /// Stops the clock `since_epoch` after its epoch: by default, a machine booted 1 s ago.
  explicit driven_clock(crawl_clock::duration since_epoch = std::chrono::seconds(1));
  ~driven_clock();
  driven_clock(const driven_clock&) = delete;
  driven_clock& operator=(const driven_clock&) = delete;

  /// Moves the clock `by` forward (never back: a negative step throws std::invalid_argument).
  void advance(crawl_clock::duration by);
};

}  // namespace crawler
