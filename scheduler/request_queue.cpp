#include "scheduler/request_queue.h"

#include "config/settings.h"

namespace crawler {

// libstdc++'s deque allocates blocks of 512 bytes, or one element when it is larger: at 256 bytes
// two requests share a block (one 512-byte allocation); at 257 each takes a block of its own and
// a queue of requests costs a quarter more memory. A crawl's peak memory is mostly its queue.
static_assert(sizeof(request) <= 256, "a request grew past two per memory_queue deque block");

queue_order queue_order_from(const settings& settings) {
  auto name = settings.get_string("SCHEDULER_MEMORY_QUEUE");
  if (name == "lifo" || name == "scrapy.squeues.LifoMemoryQueue") return queue_order::lifo;
  if (name == "fifo" || name == "scrapy.squeues.FifoMemoryQueue") return queue_order::fifo;
  throw settings_error("SCHEDULER_MEMORY_QUEUE: unknown queue \"" + name +
                       "\"; valid values are lifo and fifo");
}

void memory_queue::push(request request) {
  by_priority_[request.priority].push_back(std::move(request));
  ++size_;
}

std::optional<request> memory_queue::pop() {
  if (by_priority_.empty()) return std::nullopt;
  auto level = by_priority_.begin();
  auto& requests = level->second;
  std::optional<request> next;
  if (order_ == queue_order::lifo) {
    next.emplace(std::move(requests.back()));
    requests.pop_back();
  } else {
    next.emplace(std::move(requests.front()));
    requests.pop_front();
  }
  if (requests.empty()) by_priority_.erase(level);
  --size_;
  return next;
}

void memory_queue::for_each(const std::function<void(const request&)>& visit) const {
  for (const auto& [priority, requests] : by_priority_) {
    for (const auto& request : requests) visit(request);
  }
}

}  // namespace crawler
