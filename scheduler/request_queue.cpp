#include "scheduler/request_queue.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "config/file_writes.h"
#include "config/settings.h"

namespace crawler {

const std::filesystem::path& request_frontier::segments_directory() const {
  static const std::filesystem::path none;
  return none;
}

const std::string& request_frontier::spill_failure() const {
  static const std::string none;
  return none;
}

queue_order queue_order_from(const settings& settings) {
  auto name = settings.get_string("SCHEDULER_MEMORY_QUEUE");
  if (name == "lifo" || name == "scrapy.squeues.LifoMemoryQueue") return queue_order::lifo;
  if (name == "fifo" || name == "scrapy.squeues.FifoMemoryQueue") return queue_order::fifo;
  throw settings_error("SCHEDULER_MEMORY_QUEUE: unknown queue \"" + name +
                       "\"; valid values are lifo and fifo");
}

namespace {

// Without JOBDIR the segments are a cache that only their crawl reads: the folders a killed crawl
// left (crawler-queue-<pid>-..., its process gone) are removed by the next one. A folder whose
// process lives, or whose name does not read, is left alone.
void remove_folders_of_dead_crawls(const std::filesystem::path& temporary) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(temporary, error)) {
    auto name = entry.path().filename().string();
    if (!name.starts_with("crawler-queue-")) continue;
    auto rest = std::string_view(name).substr(std::string_view("crawler-queue-").size());
    pid_t pid = 0;
    auto [end, parsed] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (parsed != std::errc() || pid <= 0 || end == rest.data() + rest.size() || *end != '-') {
      continue;
    }
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    std::filesystem::remove_all(entry.path(), ignored);
  }
}

}  // namespace

memory_queue::memory_queue(queue_order order, spill_options spill)
    : order_(order), spill_(std::move(spill)) {
  if (spill_.memory_limit == 0) return;
  namespace fs = std::filesystem;
  if (spill_.directory.empty()) {
    remove_folders_of_dead_crawls(fs::temp_directory_path());
    std::string pattern =
        (fs::temp_directory_path() / ("crawler-queue-" + std::to_string(::getpid()) + "-XXXXXX"))
            .string();
    if (!::mkdtemp(pattern.data())) {
      throw std::runtime_error(
          "SCHEDULER_MEMORY_QUEUE_LIMIT: cannot make a folder for the "
          "queue's segments in " +
          fs::temp_directory_path().string() + ": " + std::strerror(errno));
    }
    spill_.directory = pattern;
  } else {
    std::error_code error;
    fs::remove_all(spill_.directory, error);  // what a killed crawl left: the journal has it
    fs::create_directories(spill_.directory, error);
    if (error) {
      throw std::runtime_error("SCHEDULER_MEMORY_QUEUE_LIMIT: cannot make " +
                               spill_.directory.string() + ": " + error.message());
    }
  }
  fs::permissions(spill_.directory, fs::perms::owner_all, fs::perm_options::replace);
}

memory_queue::~memory_queue() {
  close_tail();
  if (spill_.memory_limit == 0) return;
  std::error_code ignored;
  std::filesystem::remove_all(spill_.directory, ignored);
}

void memory_queue::push(request request) {
  int priority = request.priority;
  auto& level = by_priority_.try_emplace(priority, packer_, priority).first->second;
  ++size_;
  // FIFO: once a level has requests on disk, new ones come after them, so they go there too.
  if (order_ == queue_order::fifo && !level.disk.empty()) {
    return append_to_disk(priority, level, std::move(request));
  }
  level.memory.push_back(request);
  ++in_memory_;
  enforce_limit();
}

std::optional<request> memory_queue::pop() {
  while (!by_priority_.empty()) {
    auto top = by_priority_.begin();
    auto& level = top->second;
    if (level.memory.empty()) load(level);
    if (level.memory.empty()) {  // its segments could not be read back
      if (level.disk.empty()) by_priority_.erase(top);
      continue;
    }
    std::optional<request> next;
    if (order_ == queue_order::lifo) {
      next.emplace(level.memory.pop_back());
    } else {
      next.emplace(level.memory.pop_front());
    }
    --in_memory_;
    --size_;
    if (level.memory.empty() && level.disk.empty()) {
      if (tail_priority_ == top->first) close_tail();
      by_priority_.erase(top);
    }
    return next;
  }
  return std::nullopt;
}

void memory_queue::for_each(const std::function<void(const request&)>& visit) const {
  close_tail();
  for (const auto& entry : by_priority_) {
    const auto& level = entry.second;  // a lambda cannot capture a structured binding in clang 14
    auto visit_disk = [&] {
      for (const auto& segment : level.disk) {
        for (const auto& request : read_segment(segment)) visit(request);
      }
    };
    if (order_ == queue_order::lifo) visit_disk();
    level.memory.for_each(visit);
    if (order_ == queue_order::fifo) visit_disk();
  }
}

// Spills down to half the limit, so a queue at its limit writes a segment every limit/2 pushes,
// not one per push. The lowest priorities pop last and go first. One request at least stays: a
// segment read back for pop must not all go back to disk (with a limit of 1, half is 0, and pop
// would read it and spill it for ever).
void memory_queue::enforce_limit() {
  if (spill_.memory_limit == 0 || in_memory_ <= spill_.memory_limit) return;
  std::size_t target = std::max<std::size_t>(1, spill_.memory_limit / 2);
  for (auto it = by_priority_.rbegin(); it != by_priority_.rend() && in_memory_ > target; ++it) {
    auto& level = it->second;
    if (level.memory.empty()) continue;
    if (!spill(level, std::min(level.memory.size(), in_memory_ - target))) return;
  }
}

bool memory_queue::spill(level& level, std::size_t count) {
  // FIFO: the newest in memory, which pop just before what is on disk. LIFO: the oldest.
  bool newest = order_ == queue_order::fifo;
  segment written{next_path(), count};
  try {
    // Beside its name first, then renamed: a link planted at a segment's name (JOBDIR may be a
    // folder others can write) is replaced, never written through.
    replacing_file out(written.path, 0600);
    auto write = [&](const request& request) { out.write(spill_.encode(request) + '\n'); };
    if (newest) {
      level.memory.visit_back(count, write);
    } else {
      level.memory.visit_front(count, write);
    }
    out.commit();
  } catch (const std::exception& error) {
    failed(error.what() + std::string(" (the requests stay in memory)"));
    return false;
  }
  if (newest) {
    level.memory.drop_back(count);
  } else {
    level.memory.drop_front(count);
  }
  in_memory_ -= count;
  if (newest) {
    level.disk.push_front(std::move(written));
  } else {
    level.disk.push_back(std::move(written));
  }
  return true;
}

void memory_queue::append_to_disk(int priority, level& level, request request) {
  // A segment holds half the limit at most, so reading one back stays within the limit.
  std::size_t most = std::max<std::size_t>(1, spill_.memory_limit / 2);
  if (tail_priority_ != priority || level.disk.back().count >= most) {
    close_tail();
    if (level.disk.back().count >= most) level.disk.push_back(segment{next_path(), 0});
    // O_NOFOLLOW: a link planted at a segment's name is refused, not appended through.
    int fd = open_to_append(level.disk.back().path, 0600);
    tail_ = fd < 0 ? nullptr : ::fdopen(fd, "a");
    if (fd >= 0 && tail_ == nullptr) ::close(fd);
    tail_priority_ = priority;
  }
  auto line = spill_.encode(request) + '\n';
  if (tail_ == nullptr || std::fwrite(line.data(), 1, line.size(), tail_) != line.size()) {
    // Kept in memory after what is on disk would reorder the level: the crawl stops on it
    // (spill_failure), and the request is kept meanwhile rather than lost.
    close_tail();
    failed("cannot append to " + level.disk.back().path.string() + ": " + std::strerror(errno));
    level.memory.push_back(request);
    ++in_memory_;
    return;
  }
  ++level.disk.back().count;
}

void memory_queue::load(level& level) {
  if (level.disk.empty()) return;
  bool oldest = order_ == queue_order::fifo;
  auto& next = oldest ? level.disk.front() : level.disk.back();
  close_tail();
  auto requests = read_segment(next);
  if (requests.size() != next.count) {
    failed(next.path.string() + " held " + std::to_string(requests.size()) + " of its " +
           std::to_string(next.count) + " requests");
  }
  size_ -= next.count;
  size_ += requests.size();
  in_memory_ += requests.size();
  for (const auto& request : requests) level.memory.push_back(request);
  std::error_code ignored;
  std::filesystem::remove(next.path, ignored);
  if (oldest) {
    level.disk.pop_front();
  } else {
    level.disk.pop_back();
  }
  enforce_limit();
}

std::vector<request> memory_queue::read_segment(const segment& segment) const {
  std::vector<request> requests;
  std::ifstream in(segment.path, std::ios::binary);
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    try {
      requests.push_back(spill_.decode(line, segment.path.string() + ":" + std::to_string(number)));
    } catch (const std::exception& error) {
      failed(error.what());
    }
  }
  return requests;
}

void memory_queue::close_tail() const {
  if (tail_ != nullptr) std::fclose(std::exchange(tail_, nullptr));
  tail_priority_.reset();
}

std::filesystem::path memory_queue::next_path() {
  return spill_.directory / (std::to_string(next_segment_++) + ".jsonl");
}

void memory_queue::failed(std::string what) const {
  if (failure_.empty()) failure_ = "the queue's segments: " + std::move(what);
}

}  // namespace crawler
