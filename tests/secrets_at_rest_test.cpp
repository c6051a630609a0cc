// Secrets are never at rest in clear: the headers a crawl's settings give its requests (API keys in
// DEFAULT_REQUEST_HEADERS, http_user/http_pass, anything named in SENSITIVE_HEADERS) are applied at
// fetch time and written nowhere: not in JOBDIR, not in the HTTP cache, not in the fleet's Redis.
// Each test greps every file and every key for them, and checks the crawl still sends them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "child_process.h"
#include "fleet.h"
#include "http_server.h"
#include "redis_server.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::crawler_binary;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_run;
using crawler::fixtures::redis_server;
using crawler::fixtures::temp_dir;
using crawler::fixtures::wait_until;

constexpr const char* api_key = "sekret-api-key-0123";
// The credentials the test server's /auth wants, user:pass, as http_auth sends them: Basic base64.
constexpr const char* basic_credentials = "dXNlcjpwYXNz";

// A crawl whose requests get retried (/flaky answers 500 three times) and redirected, so that
// requests that were already fetched once, with every header the middlewares gave them, go back
// to the queue; /auth answers 200 only with the credentials.
std::filesystem::path crawl_file(const temp_dir& dir, const http_server& site,
                                 const nlohmann::json& settings) {
  nlohmann::json crawl{
      {"settings", settings},
      {"spider",
       {{"name", "secrets"},
        {"start_urls",
         {site.url("/flaky/a?fail=3"), site.url("/redirect/3"), site.url("/auth"),
          site.url("/flaky/b?fail=2")}}}}};
  crawl["settings"]["DEFAULT_REQUEST_HEADERS"] = {{"X-Api-Key", api_key}, {"Accept-Language", "en"}};
  crawl["settings"]["RETRY_TIMES"] = 5;
  auto path = dir.path() / "crawl.json";
  std::ofstream(path) << crawl.dump();
  return path;
}

std::unique_ptr<child_process> run(const std::filesystem::path& file,
                                   std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{crawler_binary(), "run",  file.string(), "-a", "http_user=user",
                                "-a",              "http_pass=pass", "-L",
                                "WARNING"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<child_process>(argv);
}

// Every secret found in `text`, by name.
std::vector<std::string> secrets_in(const std::string& text) {
  std::vector<std::string> found;
  for (const char* secret : {api_key, basic_credentials}) {
    if (text.find(secret) != std::string::npos) found.push_back(secret);
  }
  return found;
}

std::string read_whole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void expect_no_secret_under(const std::filesystem::path& folder, std::size_t at_least_files) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(secrets_in(read_whole(entry.path())), std::vector<std::string>{}) << entry.path();
  }
  EXPECT_GE(files, at_least_files) << folder;
}

TEST(secrets_at_rest, none_in_a_jobdir_and_a_resumed_crawl_sends_them_again) {
  http_server site;
  temp_dir dir;
  auto job = dir.path() / "job";
  auto file = crawl_file(dir, site, {{"DOWNLOAD_DELAY", 0.4}, {"RANDOMIZE_DOWNLOAD_DELAY", false}});
  auto first = run(file, {"-s", "JOBDIR=" + job.string()});
  // Stopped dead with retries and redirects queued in the journal.
  wait_until([&] { return site.total_hits() >= 3; }, "the first crawl's first requests");
  first->signal(SIGKILL);
  first->wait();
  expect_no_secret_under(job, 2);
  auto stats = dir.path() / "stats.json";
  auto resumed = run(file, {"-s", "JOBDIR=" + job.string(), "-s", "STATS_FILE=" + stats.string()});
  ASSERT_EQ(resumed->wait(), 0) << resumed->stderr_text();
  expect_no_secret_under(job, 2);
  // Every request went out again with what the settings give it: /auth its credentials (no
  // 401), and the flaky pages were retried to their 200.
  auto counted = nlohmann::json::parse(std::ifstream(stats));
  EXPECT_FALSE(counted.contains("downloader/response_status_count/401"))
      << counted.dump(1) << resumed->stderr_text();
  EXPECT_GE(site.hits("/auth"), 1u);
  EXPECT_GE(site.hits("/flaky/a?fail=3"), 4u);
  EXPECT_GE(site.hits("/flaky/b?fail=2"), 3u);
  EXPECT_GE(site.hits("/redirect/0"), 1u);
  EXPECT_EQ(secrets_in(resumed->stderr_text()), std::vector<std::string>{});
}

TEST(secrets_at_rest, none_in_the_http_cache_whose_files_only_their_owner_reads) {
  http_server site;
  temp_dir dir;
  auto cache = dir.path() / "cache";
  auto file = crawl_file(dir, site, {{"HTTPCACHE_ENABLED", true}, {"HTTPCACHE_DIR", cache.string()}});
  ::umask(022);
  auto crawl = run(file);
  ASSERT_EQ(crawl->wait(), 0) << crawl->stderr_text();
  expect_no_secret_under(cache, 10);
  std::size_t request_headers = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cache)) {
    auto mode = entry.status().permissions() & std::filesystem::perms::all;
    if (entry.is_directory()) {
      EXPECT_EQ(mode, std::filesystem::perms::owner_all) << entry.path();
    } else {
      EXPECT_EQ(mode, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
          << entry.path();
    }
    if (entry.path().filename() == "request_headers") {
      ++request_headers;
      EXPECT_EQ(read_whole(entry.path()).find("X-Api-Key"), std::string::npos) << entry.path();
    }
  }
  EXPECT_GE(request_headers, 4u);
  EXPECT_EQ(site.hits("/auth"), 1u);
}

// Every value of every key, whatever its type, as one text.
std::string everything_in(const redis_server& redis) {
  std::string all;
  for (const auto& key : redis_run(redis.port(), {"KEYS", "*"})) {
    auto type = redis_run(redis.port(), {"TYPE", key});
    std::vector<std::string> values;
    if (type[0] == "string") values = redis_run(redis.port(), {"GET", key});
    if (type[0] == "list") values = redis_run(redis.port(), {"LRANGE", key, "0", "-1"});
    if (type[0] == "set") values = redis_run(redis.port(), {"SMEMBERS", key});
    if (type[0] == "zset") values = redis_run(redis.port(), {"ZRANGE", key, "0", "-1"});
    if (type[0] == "hash") values = redis_run(redis.port(), {"HGETALL", key});
    for (const auto& value : values) all += key + " " + value + "\n";
  }
  return all;
}

TEST(secrets_at_rest, none_in_the_fleets_redis_queue_leases_or_items) {
  http_server site;
  redis_server redis;
  temp_dir dir;
  auto file = crawl_file(dir, site,
                         {{"SCHEDULER", "redis"},
                          {"DUPEFILTER_CLASS", "redis_set"},
                          {"REDIS_URL", redis.url()},
                          {"REDIS_PIPELINE", true},
                          {"SCHEDULER_PERSIST", true},
                          {"MAX_IDLE_TIME_BEFORE_CLOSE", 1},
                          {"SCHEDULER_LEASE_TIME", 1},
                          {"SCHEDULER_HEARTBEAT_INTERVAL", 0.3},
                          {"DOWNLOAD_DELAY", 0.4},
                          {"RANDOMIZE_DOWNLOAD_DELAY", false}});
  auto worker = run(file);
  wait_until([&] { return site.total_hits() >= 3; }, "the worker's first requests");
  worker->signal(SIGKILL);  // with requests queued and leased
  worker->wait();
  auto killed = everything_in(redis);
  EXPECT_NE(killed.find("secrets:requests:leased"), std::string::npos) << killed;
  EXPECT_EQ(secrets_in(killed), std::vector<std::string>{}) << killed;
  auto again = run(file);
  ASSERT_EQ(again->wait(), 0) << again->stderr_text();
  EXPECT_EQ(secrets_in(everything_in(redis)), std::vector<std::string>{});
  EXPECT_GE(site.hits("/flaky/a?fail=3"), 4u);
}

}  // namespace
