// The memory scheduler's queue past SCHEDULER_MEMORY_QUEUE_LIMIT: what waits in segment files
// comes back in the order the same pushes give without a limit, and what goes wrong with the
// files is said, never silently lost.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "redis_server.h"
#include "scheduler/request_queue.h"

namespace {

using crawler::memory_queue;
using crawler::queue_order;
using crawler::request;
using crawler::spill_options;
using crawler::fixtures::temp_dir;
namespace fs = std::filesystem;

spill_options spilling(std::size_t limit, fs::path directory) {
  spill_options options;
  options.memory_limit = limit;
  options.directory = std::move(directory);
  options.encode = [](const request& r) { return r.to_json().dump(); };
  options.decode = [](std::string_view line, const std::string& where) {
    return request::from_json(nlohmann::json::parse(line), where);
  };
  return options;
}

std::size_t files_in(const fs::path& directory) {
  if (!fs::exists(directory)) return 0;
  return std::size_t(std::distance(fs::directory_iterator(directory), fs::directory_iterator()));
}

std::vector<std::string> visited(const memory_queue& queue) {
  std::vector<std::string> urls;
  queue.for_each([&](const request& r) { urls.push_back(r.url); });
  return urls;
}

class memory_queue_spill : public testing::TestWithParam<queue_order> {};

// Random pushes over three priorities, with pops between them: the limited queue pops what the
// unlimited one pops, one for one, and never holds more than the limit in memory, however small
// the limit (a segment holds half of it, one request at least, so reading one back keeps within).
TEST_P(memory_queue_spill, pops_in_the_order_of_a_queue_without_a_limit) {
  for (std::size_t limit : {1u, 2u, 3u, 7u}) {
    temp_dir dir;
    auto segments = dir.path() / "segments";
    memory_queue unlimited(GetParam());
    {
      memory_queue limited(GetParam(), spilling(limit, segments));
      std::mt19937 random(42);
      std::size_t pushed = 0, most_files = 0;
      auto pop_both = [&] {
        auto expected = unlimited.pop();
        auto got = limited.pop();
        ASSERT_EQ(expected.has_value(), got.has_value());
        if (expected) {
          ASSERT_EQ(got->url, expected->url);
        }
      };
      for (int step = 0; step < 1500; ++step) {
        if (random() % 3 != 0) {
          request r{"http://site.test/" + std::to_string(pushed++)};
          r.priority = int(random() % 3) - 1;
          unlimited.push(r);
          limited.push(std::move(r));
        } else {
          pop_both();
        }
        ASSERT_LE(limited.in_memory(), limit) << "limit " << limit << ", step " << step;
        ASSERT_EQ(limited.size(), unlimited.size());
        most_files = std::max(most_files, files_in(segments));
        if (step == 1000) {
          EXPECT_EQ(visited(limited), visited(unlimited)) << "limit " << limit;
        }
      }
      EXPECT_GT(most_files, 3u) << "the queue spilled";
      EXPECT_EQ(limited.spill_failure(), "");
      while (!unlimited.empty()) pop_both();
      EXPECT_TRUE(limited.empty());
      EXPECT_EQ(files_in(segments), 0u) << "each segment goes once read back";
    }
    EXPECT_FALSE(fs::exists(segments)) << "the folder goes with the queue";
  }
}

INSTANTIATE_TEST_SUITE_P(both_orders, memory_queue_spill,
                         testing::Values(queue_order::fifo, queue_order::lifo),
                         [](const auto& info) {
                           return info.param == queue_order::fifo ? "fifo" : "lifo";
                         });

TEST(memory_queue_spill, its_folder_is_private_and_emptied_of_what_a_killed_crawl_left) {
  temp_dir dir;
  auto segments = dir.path() / "queue-segments";
  fs::create_directories(segments);
  std::ofstream(segments / "0.jsonl") << "left by a killed crawl\n";
  memory_queue queue(queue_order::fifo, spilling(2, segments));
  EXPECT_EQ(files_in(segments), 0u);
  EXPECT_EQ(fs::status(segments).permissions() & fs::perms::all, fs::perms::owner_all);
  for (int i = 0; i < 10; ++i) queue.push(request{"http://site.test/" + std::to_string(i)});
  EXPECT_LE(queue.in_memory(), 2u);
  EXPECT_EQ(queue.pop()->url, "http://site.test/0");
}

// Without JOBDIR the segments go to a temporary folder named after the crawl's process: a folder
// that a killed crawl left is removed by the next one, one whose process lives is not.
TEST(memory_queue_spill, a_killed_crawls_temporary_folder_is_removed_by_the_next) {
  temp_dir dir;
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  auto left = dir.path() / ("crawler-queue-" + std::to_string(dead) + "-abc123");
  auto living = dir.path() / ("crawler-queue-" + std::to_string(::getpid()) + "-def456");
  auto other = dir.path() / "crawler-queue-notapid";
  for (const auto& folder : {left, living, other}) fs::create_directories(folder);
  std::string saved = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "";
  ::setenv("TMPDIR", dir.path().c_str(), 1);
  {
    memory_queue queue(queue_order::lifo, spilling(2, {}));
    for (int i = 0; i < 10; ++i) queue.push(request{"http://site.test/" + std::to_string(i)});
    EXPECT_TRUE(queue.segments_directory().string().starts_with(
        (dir.path() / ("crawler-queue-" + std::to_string(::getpid()) + "-")).string()))
        << queue.segments_directory();
    EXPECT_GT(files_in(queue.segments_directory()), 0u);
  }
  saved.empty() ? ::unsetenv("TMPDIR") : ::setenv("TMPDIR", saved.c_str(), 1);
  EXPECT_FALSE(fs::exists(left));
  EXPECT_TRUE(fs::exists(living));
  EXPECT_TRUE(fs::exists(other));
}

// A segment gone from under the queue: its requests are lost to the queue, and it says which file
// and how many; the rest still pop.
TEST(memory_queue_spill, a_segment_that_cannot_be_read_back_is_named) {
  temp_dir dir;
  auto segments = dir.path() / "segments";
  memory_queue queue(queue_order::fifo, spilling(4, segments));
  for (int i = 0; i < 20; ++i) queue.push(request{"http://site.test/" + std::to_string(i)});
  ASSERT_GT(files_in(segments), 1u);
  // The first segment written, whole (the last one is still being appended to).
  auto first = segments / "0.jsonl";
  ASSERT_TRUE(fs::exists(first));
  std::ofstream(first, std::ios::trunc) << "{\"url\": 3}\n";  // not a request
  std::size_t popped = 0;
  while (queue.pop()) ++popped;
  EXPECT_LT(popped, 20u);
  EXPECT_TRUE(queue.empty());
  EXPECT_NE(queue.spill_failure().find(first.string() + ":1"), std::string::npos)
      << queue.spill_failure();
}

// A segment that cannot be written (its folder is gone, a file in its place): the requests stay
// in memory, past the limit, and the failure is said; nothing is lost.
TEST(memory_queue_spill, a_segment_that_cannot_be_written_keeps_its_requests_in_memory) {
  temp_dir dir;
  auto segments = dir.path() / "segments";
  memory_queue queue(queue_order::lifo, spilling(4, segments));
  fs::remove_all(segments);
  std::ofstream(segments) << "a file where the folder was";
  for (int i = 0; i < 10; ++i) queue.push(request{"http://site.test/" + std::to_string(i)});
  EXPECT_NE(queue.spill_failure().find("cannot write"), std::string::npos) << queue.spill_failure();
  EXPECT_EQ(queue.in_memory(), 10u);
  std::size_t popped = 0;
  while (queue.pop()) ++popped;
  EXPECT_EQ(popped, 10u);
  fs::remove(segments);
}

}  // namespace
