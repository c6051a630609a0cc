// The host frontier of one process (SCHEDULER_QUEUE_CLASS = "host" with SCHEDULER=memory): a
// queue per host, and turns between hosts by the time each may next be fetched, as the fleet's
// frontier does in Redis (fleet/redis_queue.h), so one process crawling many sites behaves as a
// fleet does.
//
//   crawler::host_queue frontier{queue_order::lifo, {.limit = 8, .delay = 0.5}};
//   frontier.push(std::move(request));
//   if (auto next = frontier.pop()) download(*next);          // a due host's, or nullopt
//   else if (auto when = frontier.next_due()) wake_at(*when);
//   frontier.done(crawler::pacing_host(next));                // its host has room again
//
// pop() gives a request only of a host that is due and holds fewer than `limit` requests handed
// out and not done; giving one puts the host's time off by its delay (DOWNLOAD_DELAY, or what
// set_pace reported: a Crawl-delay, AutoThrottle), times 0.5 to 1.5 when randomized. Within a
// host, requests go by priority, then the queue order. Hosts that are due go longest-waiting
// first. So a slow host holds at most `limit` of the crawl's downloads, and a delayed one none.
// Not thread-safe: the engine's loop owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "scheduler/host_pace.h"
#include "scheduler/packed_requests.h"
#include "scheduler/request_queue.h"

namespace crawler {

class host_queue final : public request_frontier {
 public:
  using clock = std::chrono::steady_clock;
  struct pace {
    std::size_t limit = 8;   // CONCURRENT_REQUESTS_PER_DOMAIN; 0: no limit
    double delay = 0;        // DOWNLOAD_DELAY, in seconds
    bool randomize = true;   // RANDOMIZE_DOWNLOAD_DELAY
  };

  /// `now` is the clock (tests give their own).
  host_queue(queue_order order, pace pace, std::function<clock::time_point()> now = clock::now);
  ~host_queue() override;

  void push(request request) override;
  /// The next request of a host that is due and below its limit, or nullopt.
  std::optional<request> pop() override;
  std::size_t size() const override { return size_; }
  /// Host by host, each in its own order.
  void for_each(const std::function<void(const request&)>& visit) const override;

  /// A request pop() gave is done (downloaded, or put back): its host has room again.
  void done(const std::string& host);
  /// What a download of `host` said of its pace: its delay from now on, and a hold.
  void set_pace(const std::string& host, const host_pace& pace);
  /// When the next host waiting for its time is due; nullopt when none waits (every host with
  /// requests is at its limit, or none has any).
  std::optional<clock::time_point> next_due() const;

 private:
  struct host_state {
    std::map<int, packed_requests, std::greater<>> by_priority;  // packed_requests.h
    std::size_t queued = 0, running = 0;
    clock::time_point due{};
    std::optional<double> delay;  // set_pace's, else pace_.delay
    bool listed = false;          // in ready_, under (due, turn)
    std::uint64_t turn = 0;
  };
  // Hosts due at the same time take turns in the order they were listed.
  using listing = std::tuple<clock::time_point, std::uint64_t, std::string>;

  host_state& state_of(const std::string& host);
  // Lists the host in ready_ when it has requests and room; unlists it otherwise.
  void relist(const std::string& host, host_state& state);
  // Forgets the host once nothing of it is queued or running and its time has come.
  void forget_if_idle(const std::string& host, const host_state& state);

  queue_order order_;
  pace pace_;
  request_packer packer_;  // before hosts_, whose queues hold it
  std::function<clock::time_point()> now_;
  std::unordered_map<std::string, host_state> hosts_;
  std::set<listing> ready_;
  // Idle hosts whose delay still runs: kept until then, so a new request waits it out.
  std::set<std::pair<clock::time_point, std::string>> cooling_;
  std::size_t size_ = 0;
  std::uint64_t turns_ = 0;
  std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace crawler
