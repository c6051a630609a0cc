// How long to wait before trying Redis again: the one backoff policy of everything that waits on
// it (the client's reconnects, a fleet worker's polls of an empty or unreachable queue, outcomes
// waiting to be stored), each with its own first and longest wait.
//
//   crawler::redis::backoff reconnect{100ms, 5s};
//   timer.expires_after(reconnect.next());   // 100 ms, 200 ms, 400 ms, ... 5 s, 5 s
//   reconnect.reset();                       // it answered: the next wait is 100 ms again
#pragma once

#include <algorithm>
#include <chrono>

namespace crawler::redis {

class backoff {
 public:
  using duration = std::chrono::milliseconds;

  constexpr backoff(duration first, duration longest) : first_(first), longest_(longest) {}

  /// The wait to use now; each call doubles the next one, up to `longest`.
  duration next() {
    auto wait = next_;
    next_ = std::min(next_ * 2, longest_);
    return wait;
  }
  /// The wait next() would give, without using it (for a log line).
  duration peek() const { return next_; }
  /// Back to the first wait, after a success.
  void reset() { next_ = first_; }

 private:
  duration first_, longest_;
  duration next_ = first_;
};

}  // namespace crawler::redis
