#include "config/crawl_clock.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace crawler {
namespace {

// The driven time in clock ticks, read from any thread (callbacks run on the parse pool too).
std::atomic<bool> driven{false};
std::atomic<crawl_clock::rep> driven_ticks{0};

// A driven clock moves between two looks of the loop: the loop must look again soon.
constexpr crawl_clock::duration driven_look_interval = std::chrono::milliseconds(1);

}  // namespace

crawl_clock::time_point crawl_clock::now() noexcept {
  if (driven.load(std::memory_order_acquire)) {
    return time_point(duration(driven_ticks.load(std::memory_order_acquire)));
  }
  return time_point(std::chrono::steady_clock::now().time_since_epoch());
}

double seconds_since(crawl_clock::time_point then) noexcept {
  return std::chrono::duration<double>(crawl_clock::now() - then).count();
}

crawl_clock::duration to_clock_duration(double seconds) noexcept {
  return std::chrono::duration_cast<crawl_clock::duration>(std::chrono::duration<double>(seconds));
}

crawl_clock::duration crawl_clock_wait_traits::to_wait_duration(const crawl_clock::duration& d) {
  if (!driven.load(std::memory_order_acquire)) return d;
  return std::min(d, driven_look_interval);
}

crawl_clock::duration crawl_clock_wait_traits::to_wait_duration(const crawl_clock::time_point& t) {
  return to_wait_duration(std::max(t - crawl_clock::now(), crawl_clock::duration::zero()));
}

driven_clock::driven_clock(crawl_clock::duration since_epoch) {
  if (driven.exchange(true, std::memory_order_acq_rel)) {
    throw std::logic_error("driven_clock: the crawl's clock is driven already");
  }
  driven_ticks.store(since_epoch.count(), std::memory_order_release);
}

driven_clock::~driven_clock() {
  driven.store(false, std::memory_order_release);
}

void driven_clock::advance(crawl_clock::duration by) {
  if (by < crawl_clock::duration::zero()) {
    throw std::invalid_argument("driven_clock::advance: the clock never goes back");
  }
  driven_ticks.fetch_add(by.count(), std::memory_order_acq_rel);
}

}  // namespace crawler
