// Names and folders: what a crawl writes on this machine stays where its settings say. A spider's
// name, part of feed paths and the cache folder, cannot lead out of them; one process at a time
// uses a JOBDIR.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "child_process.h"
#include "http_server.h"
#include "redis_server.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::crawler_binary;
using crawler::fixtures::http_server;
using crawler::fixtures::temp_dir;
using crawler::fixtures::wait_until;

std::filesystem::path crawl_file(const temp_dir& dir, const std::string& name) {
  auto path = dir.path() / "crawl.json";
  std::ofstream(path) << R"({"spider": {"name": ")" << name
                      << R"(", "start_urls": ["http://127.0.0.1:1/"]}})";
  return path;
}

TEST(spider_name, that_would_leave_its_folder_is_refused_by_check_and_run_naming_the_key) {
  temp_dir dir;
  for (const std::string name : {"../../tmp/x", "/abs/path", "..", ".hidden", "a b"}) {
    auto file = crawl_file(dir, name);
    child_process check({crawler_binary(), "check", file.string()});
    EXPECT_EQ(check.wait(), 1) << name;
    EXPECT_NE(check.stderr_text().find(": spider.name: \"" + name + "\""), std::string::npos)
        << name << ": " << check.stderr_text();
    auto feed = dir.path() / "feeds" / "%(name)s.jsonl";
    child_process run({crawler_binary(), "run", file.string(), "-o", feed.string(), "-s",
                       "HTTPCACHE_ENABLED=true", "-s",
                       "HTTPCACHE_DIR=" + (dir.path() / "cache").string(), "--nolog"});
    EXPECT_EQ(run.wait(), 2) << name;
    EXPECT_NE(run.stderr_text().find("spider.name: \"" + name + "\""), std::string::npos)
        << name << ": " << run.stderr_text();
  }
  // Nothing was written anywhere: not beside the feed, not in the cache, not outside.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "feeds"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "cache"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/x.jsonl"));
  // The names a spider may have.
  for (const std::string name : {"books", "books_2.v1-test"}) {
    child_process check({crawler_binary(), "check", crawl_file(dir, name).string()});
    EXPECT_EQ(check.wait(), 0) << name << ": " << check.stderr_text();
  }
}

// The second process would append to the first's journal and requests.seen, and neither could be
// resumed; after a kill -9 the kernel has dropped the lock, and the JOBDIR resumes.
TEST(jobdir, a_second_process_on_a_jobdir_in_use_exits_2_naming_the_holder) {
  http_server site({.site_pages = 50, .page_delay_ms = 100});
  temp_dir dir;
  auto job = dir.path() / "job";
  auto crawl = [&](const std::string& feed) {
    return std::make_unique<child_process>(std::vector<std::string>{
        crawler_binary(), "crawl", "site", "-a", "start=" + site.url("/site/0"), "-s",
        "JOBDIR=" + job.string(), "-s", "CONCURRENT_REQUESTS=2", "-o", (dir.path() / feed).string(),
        "--nolog"});
  };
  auto first = crawl("first.jsonl");
  wait_until([&] { return site.total_hits() > 0; }, "the first crawl's first request");
  auto second = crawl("second.jsonl");
  EXPECT_EQ(second->wait(), 2);
  EXPECT_EQ(second->stderr_text(),
            "crawler crawl: JOBDIR " + job.string() + " is in use by process " +
                std::to_string(first->pid()) +
                ": one crawl per JOBDIR (wait for it to stop, or choose another)\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "second.jsonl"));
  first->signal(SIGKILL);
  first->wait();
  auto resumed = crawl("resumed.jsonl");
  EXPECT_EQ(resumed->wait(), 0) << resumed->stderr_text();
  for (int page = 0; page < 50; ++page) {
    EXPECT_GE(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
}

}  // namespace
