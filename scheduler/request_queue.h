// The scheduler's in-memory frontier: requests ordered by priority, then FIFO or LIFO.
//
//   crawler::memory_queue queue{crawler::queue_order::lifo};   // Scrapy's default: depth-first
//   queue.push(std::move(request));
//   while (auto next = queue.pop()) download(*next);
//
// Larger priorities pop first (Scrapy's order). Within one priority, `lifo` pops the newest request
// (depth-first, Scrapy's LifoMemoryQueue) and `fifo` the oldest (breadth-first). Not thread-safe:
// the engine's loop owns it.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string_view>

#include "request/request.h"

namespace crawler {

class settings;

enum class queue_order { lifo, fifo };

/// Reads SCHEDULER_MEMORY_QUEUE ("lifo", "fifo", or Scrapy's class paths
/// scrapy.squeues.LifoMemoryQueue / FifoMemoryQueue). Throws settings_error for anything else.
queue_order queue_order_from(const settings& settings);

class memory_queue {
 public:
  explicit memory_queue(queue_order order) : order_(order) {}

  void push(request request);
  /// The next request, or nullopt when the queue is empty.
  std::optional<request> pop();
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Visits every queued request in push order within each priority, so pushing them again in the
  /// visited order rebuilds the same queue (how JOBDIR saves and restores it).
  void for_each(const std::function<void(const request&)>& visit) const;

 private:
  queue_order order_;
  std::map<int, std::deque<request>, std::greater<>> by_priority_;
  std::size_t size_ = 0;
};

}  // namespace crawler
