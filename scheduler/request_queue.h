// The scheduler's frontier: requests ordered by priority, then FIFO or LIFO, in memory (packed to
// about their URL's length: packed_requests.h), and past SCHEDULER_MEMORY_QUEUE_LIMIT on disk.
//
//   crawler::memory_queue queue{crawler::queue_order::lifo};   // Scrapy's default: depth-first
//   queue.push(std::move(request));
//   while (auto next = queue.pop()) download(*next);
//
// Larger priorities pop first (Scrapy's order). Within one priority, `lifo` pops the newest request
// (depth-first, Scrapy's LifoMemoryQueue) and `fifo` the oldest (breadth-first). Not thread-safe:
// the engine's loop owns it.
//
// With a memory limit, the requests that will pop last are written to segment files, a line per
// request, and read back, whole segments at a time, when their turn comes: a FIFO level keeps its
// oldest requests in memory and appends new ones to its last segment; a LIFO level keeps its
// newest in memory and writes its oldest out; the lowest priorities go first. The order is the
// one the same pushes give without a limit. Segments are a cache of the queue, not its record:
// JOBDIR's journal is what a crash resumes from, so they are not synced and a new queue deletes
// whatever a killed one left.
#pragma once

#include <cstddef>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "request/request.h"
#include "scheduler/packed_requests.h"

namespace crawler {

class settings;

enum class queue_order { lifo, fifo };

/// Reads SCHEDULER_MEMORY_QUEUE ("lifo", "fifo", or Scrapy's class paths
/// scrapy.squeues.LifoMemoryQueue / FifoMemoryQueue). Throws settings_error for anything else.
queue_order queue_order_from(const settings& settings);

/// Where and how a memory_queue keeps the requests past its memory limit.
struct spill_options {
  /// Requests kept in memory at most (SCHEDULER_MEMORY_QUEUE_LIMIT); 0: all of them, no files.
  std::size_t memory_limit = 0;
  /// The folder of the segment files, made private (0700) and emptied first; removed with the
  /// queue. Empty: a new folder under the system's temporary directory.
  std::filesystem::path directory;
  /// One request as one line of a segment (no newline in it), and that line back. decode throws
  /// for a line it cannot read, naming `where` (the file and line).
  std::function<std::string(const request&)> encode;
  std::function<request(std::string_view line, const std::string& where)> decode;
};

/// What the memory scheduler queues into: a memory_queue, or the host frontier (host_queue.h).
class request_frontier {
 public:
  virtual ~request_frontier() = default;
  virtual void push(request request) = 0;
  /// The next request, or nullopt when none may go now (the queue is empty, or, for the host
  /// frontier, no host is due).
  virtual std::optional<request> pop() = 0;
  virtual std::size_t size() const = 0;
  bool empty() const { return size() == 0; }
  /// Requests held in memory; the other size() - in_memory() are in segment files.
  virtual std::size_t in_memory() const { return size(); }
  /// The folder of the segment files (empty without a memory limit).
  virtual const std::filesystem::path& segments_directory() const;
  /// Visits every queued request so that pushing them again in the visited order rebuilds the
  /// same queue (how JOBDIR saves and restores it).
  virtual void for_each(const std::function<void(const request&)>& visit) const = 0;
  /// What went wrong with the segment files, "" while nothing has.
  virtual const std::string& spill_failure() const;
};

class memory_queue final : public request_frontier {
 public:
  explicit memory_queue(queue_order order, spill_options spill = {});
  ~memory_queue() override;  // removes the segment files and their folder
  memory_queue(const memory_queue&) = delete;
  memory_queue& operator=(const memory_queue&) = delete;

  void push(request request) override;
  /// The next request, or nullopt when the queue is empty.
  std::optional<request> pop() override;
  std::size_t size() const override { return size_; }
  /// Requests held in memory; the other size() - in_memory() are in segment files.
  std::size_t in_memory() const override { return in_memory_; }
  /// The folder of the segment files (empty without a memory limit).
  const std::filesystem::path& segments_directory() const override { return spill_.directory; }
  /// Visits every queued request in push order within each priority, so pushing them again in the
  /// visited order rebuilds the same queue (how JOBDIR saves and restores it). Segments are read
  /// one at a time.
  void for_each(const std::function<void(const request&)>& visit) const override;
  /// What went wrong with the segment files, "" while nothing has. A request that could not be
  /// written stays in memory (past the limit); one that could not be read back is lost to this
  /// queue, and JOBDIR's journal, if any, still holds it.
  const std::string& spill_failure() const override { return failure_; }

 private:
  struct segment {
    std::filesystem::path path;
    std::size_t count = 0;
  };
  struct level {
    level(request_packer& packer, int priority) : memory(packer, priority) {}
    packed_requests memory;  // a fifth of the requests' size (packed_requests.h)
    // FIFO: the requests after `memory`, oldest segment first. LIFO: the requests before it,
    // oldest segment first.
    std::deque<segment> disk;
  };
  using levels = std::map<int, level, std::greater<>>;

  void enforce_limit();
  bool spill(level& level, std::size_t count);
  void append_to_disk(int priority, level& level, request request);
  void load(level& level);
  std::vector<request> read_segment(const segment& segment) const;
  void close_tail() const;
  std::filesystem::path next_path();
  void failed(std::string what) const;

  queue_order order_;
  spill_options spill_;
  request_packer packer_;  // before by_priority_, whose levels hold it
  levels by_priority_;
  std::size_t size_ = 0, in_memory_ = 0, next_segment_ = 0;
  // FIFO: the last segment of one level, open for appending (which level: tail_priority_).
  mutable std::FILE* tail_ = nullptr;
  mutable std::optional<int> tail_priority_;
  mutable std::string failure_;
};

}  // namespace crawler
