#include "scheduler/host_queue.h"

#include <algorithm>

namespace crawler {

host_queue::host_queue(queue_order order, pace pace, std::function<clock::time_point()> now)
    : order_(order), pace_(pace), now_(std::move(now)) {}

host_queue::~host_queue() = default;

host_queue::host_state& host_queue::state_of(const std::string& host) {
  return hosts_[host];
}

void host_queue::relist(const std::string& host, host_state& state) {
  bool room = pace_.limit == 0 || state.running < pace_.limit;
  bool wanted = state.queued > 0 && room;
  if (state.listed && !wanted) {
    ready_.erase({state.due, state.turn, host});
    state.listed = false;
  } else if (!state.listed && wanted) {
    state.turn = ++turns_;
    ready_.insert({state.due, state.turn, host});
    state.listed = true;
  }
}

void host_queue::forget_if_idle(const std::string& host, const host_state& state) {
  if (state.queued > 0 || state.running > 0) return;
  if (state.due > now_()) {
    cooling_.insert({state.due, host});
    return;
  }
  hosts_.erase(host);
}

void host_queue::push(request request) {
  auto host = pacing_host(request);
  auto& state = state_of(host);
  if (state.queued == 0 && state.running == 0) cooling_.erase({state.due, host});
  state.by_priority.try_emplace(request.priority, packer_, request.priority)
      .first->second.push_back(request);
  ++state.queued;
  ++size_;
  relist(host, state);
}

std::optional<request> host_queue::pop() {
  auto now = now_();
  // Idle hosts whose time has come need not be remembered.
  while (!cooling_.empty() && cooling_.begin()->first <= now) {
    auto host = cooling_.begin()->second;
    cooling_.erase(cooling_.begin());
    if (auto found = hosts_.find(host);
        found != hosts_.end() && found->second.queued == 0 && found->second.running == 0) {
      hosts_.erase(found);
    }
  }
  if (ready_.empty() || std::get<0>(*ready_.begin()) > now) return std::nullopt;
  auto host = std::get<2>(*ready_.begin());
  ready_.erase(ready_.begin());
  auto& state = hosts_.at(host);
  state.listed = false;
  auto level = state.by_priority.begin();
  auto& requests = level->second;
  auto next = order_ == queue_order::fifo ? requests.pop_front() : requests.pop_back();
  if (requests.empty()) state.by_priority.erase(level);
  --state.queued;
  --size_;
  ++state.running;
  double delay = state.delay.value_or(pace_.delay);
  if (delay > 0 && pace_.randomize) {
    delay = std::uniform_real_distribution<double>(0.5 * delay, 1.5 * delay)(random_);
  }
  state.due = now + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(delay));
  relist(host, state);
  return next;
}

void host_queue::done(const std::string& host) {
  auto found = hosts_.find(host);
  if (found == hosts_.end() || found->second.running == 0) return;
  auto& state = found->second;
  --state.running;
  relist(host, state);
  forget_if_idle(host, state);
}

void host_queue::set_pace(const std::string& host, const host_pace& pace) {
  auto found = hosts_.find(host);
  if (found == hosts_.end()) return;  // nothing of it queued or running: nothing to pace
  auto& state = found->second;
  state.delay = pace.delay;
  if (pace.hold <= 0) return;
  auto until = now_() + std::chrono::duration_cast<clock::duration>(
                            std::chrono::duration<double>(pace.hold));
  if (until <= state.due) return;
  bool listed = state.listed;
  if (listed) ready_.erase({state.due, state.turn, host});
  bool cooling = cooling_.erase({state.due, host}) > 0;
  state.due = until;
  if (listed) ready_.insert({state.due, state.turn, host});
  if (cooling) cooling_.insert({state.due, host});
}

std::optional<host_queue::clock::time_point> host_queue::next_due() const {
  if (ready_.empty()) return std::nullopt;
  return std::get<0>(*ready_.begin());
}

void host_queue::for_each(const std::function<void(const request&)>& visit) const {
  for (const auto& [host, state] : hosts_) {
    // Pushed again in this order, each host's queue is rebuilt as it was.
    for (const auto& level : state.by_priority) level.second.for_each(visit);
  }
}

}  // namespace crawler
