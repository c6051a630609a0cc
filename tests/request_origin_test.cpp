// URLs carry their origin: only the crawl's own operator (crawl file, -a, -s, C++ start_requests)
// may name a file:// URL. What a fleet reads from Redis, and what `crawler push` writes there, is
// http or https, chooses no proxy and does not pass the offsite filter by saying so; a URL without
// a scheme is an error everywhere.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "child_process.h"
#include "fleet.h"
#include "http_server.h"
#include "redis_server.h"
#include "set_aside_records.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::crawler_binary;
using crawler::fixtures::fleet_worker;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_list;
using crawler::fixtures::redis_run;
using crawler::fixtures::redis_server;
using crawler::fixtures::set_aside_json;
using crawler::fixtures::temp_dir;
using crawler::fixtures::wait_until;

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A queue entry as another program would write it into the priority queue: "<id>|<json>".
void write_queue_entry(const redis_server& redis, const std::string& id,
                       const nlohmann::json& request) {
  redis_run(redis.port(), {"ZADD", "site:requests", "0", id + "|" + request.dump()});
}

// The reasons of <key>, a :bad list, by the entry each set aside.
std::map<std::string, std::string> set_aside(const redis_server& redis, const std::string& key) {
  std::map<std::string, std::string> reasons;
  for (const auto& record : redis_list(redis.port(), key)) {
    auto json = set_aside_json(record);
    reasons[json["entry"].get<std::string>()] = json["reason"].get<std::string>();
  }
  return reasons;
}

TEST(crawler_push, refuses_a_local_file_a_proxy_and_a_url_without_a_scheme_naming_the_argument) {
  redis_server redis;
  struct refusal {
    std::string entry, message;
  };
  std::vector<refusal> refusals{
      {"file:///etc/passwd",
       "scheme \"file\" of file:///etc/passwd: a shared queue carries only http and https URLs"},
      {R"({"url": "file:///etc/passwd"})",
       "scheme \"file\" of file:///etc/passwd: a shared queue carries only http and https URLs"},
      {"gopher://127.0.0.1:6379/_FLUSHALL",
       "scheme \"gopher\" of gopher://127.0.0.1:6379/_FLUSHALL: a shared queue carries only "
       "http and https URLs"},
      {"h.test/page", "Missing scheme in request url: h.test/page"},
      {R"({"url": "http://h.test/p", "meta": {"proxy": "http://evil.test:3128"}})",
       "meta \"proxy\" in <GET http://h.test/p>: a request read from a shared queue may not "
       "choose its proxy (unless signed with SCHEDULER_SIGNING_KEY)"}};
  for (const auto& [entry, message] : refusals) {
    child_process push({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(),
                        "http://h.test/fine", entry});
    EXPECT_EQ(push.wait(), 2) << entry;
    EXPECT_EQ(push.stderr_text(), "crawler push: argument 2: " + message + "\n") << entry;
  }
  EXPECT_EQ(redis_list(redis.port(), "site:start_urls").size(), 0u);  // nothing of them sent
  // An entry every worker would set aside is refused here: one byte over the limit, and not one
  // at it.
  auto at_limit = "http://h.test/" + std::string(300 - 14, 'x');
  child_process over({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(), "-s",
                      "SCHEDULER_MAX_ENTRY_SIZE=300", at_limit, at_limit + "y"});
  EXPECT_EQ(over.wait(), 2);
  EXPECT_EQ(over.stderr_text(),
            "crawler push: argument 2: an entry of 301 bytes, over SCHEDULER_MAX_ENTRY_SIZE "
            "(300)\n");
  child_process at({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(), "-s",
                    "SCHEDULER_MAX_ENTRY_SIZE=300", at_limit});
  EXPECT_EQ(at.wait(), 0) << at.stderr_text();
  EXPECT_EQ(redis_list(redis.port(), "site:start_urls"), std::vector<std::string>{at_limit});
  redis_run(redis.port(), {"DEL", "site:start_urls"});
  // scrapy-redis's JSON form, unsigned, from a Python producer: http(s) works as it always did.
  child_process plain({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(),
                       R"({"url": "https://h.test/s", "q": "dune", "meta": {"from": "py"}})"});
  EXPECT_EQ(plain.wait(), 0) << plain.stderr_text();
}

// Without a signing key, whoever writes the fleet's Redis chooses what a worker sends: a POST
// with a body and an Authorization header reaches the site as the crawl's own. An operator who
// wants none of it sets SCHEDULER_ENTRY_FIELDS = []: unsigned entries and start URLs that set a
// method, body, headers or cookies are set aside, naming the setting, and the plain GETs run.
TEST(fleet_origin, scheduler_entry_fields_keeps_unsigned_entries_to_plain_gets) {
  for (bool restricted : {false, true}) {
    http_server site({.site_pages = 3});
    redis_server redis;
    temp_dir dir;
    write_queue_entry(redis, "0000000000000001",
                      {{"url", site.url("/echo?as=post")},
                       {"method", "POST"},
                       {"body_hex", "7472616e736665723d616c6c"},  // transfer=all
                       {"headers", nlohmann::json::array({{"Authorization", "Bearer stolen"}})},
                       {"dont_filter", true}});
    write_queue_entry(redis, "0000000000000002",
                      {{"url", site.url("/cookie/echo")}, {"cookies", {{"session", "theirs"}}}});
    write_queue_entry(redis, "0000000000000003", {{"url", site.url("/s?wd=plain")}});
    redis_run(redis.port(), {"RPUSH", "site:start_urls",
                             nlohmann::json{{"url", site.url("/echo?as=start")},
                                            {"method", "PUT"}}
                                 .dump()});
    std::vector<std::string> extra;
    if (restricted) extra = {"-s", "SCHEDULER_ENTRY_FIELDS=[]"};
    auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", extra);
    ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
    EXPECT_EQ(site.hits("/s?wd=plain"), 1u) << restricted;
    EXPECT_EQ(site.hits("/echo?as=post"), restricted ? 0u : 1u) << restricted;
    EXPECT_EQ(site.hits("/cookie/echo"), restricted ? 0u : 1u) << restricted;
    EXPECT_EQ(site.hits("/echo?as=start"), restricted ? 0u : 1u) << restricted;
    auto queue_bad = set_aside(redis, "site:requests:bad");
    auto start_bad = set_aside(redis, "site:start_urls:bad");
    EXPECT_EQ(queue_bad.size(), restricted ? 2u : 0u);
    EXPECT_EQ(start_bad.size(), restricted ? 1u : 0u);
    for (const auto& [entry, reason] : queue_bad) {
      EXPECT_NE(reason.find(entry.find("POST") != std::string::npos ? "sets its method (POST)"
                                                                    : "sets cookies"),
                std::string::npos)
          << reason;
      EXPECT_NE(reason.find("which SCHEDULER_ENTRY_FIELDS does not let an unsigned entry set"),
                std::string::npos)
          << reason;
    }
    for (const auto& [entry, reason] : start_bad) {
      EXPECT_NE(reason.find("sets its method (PUT)"), std::string::npos) << reason;
    }
  }
  // A value that names no part of a request is refused at start, naming it.
  redis_server redis;
  http_server site;
  temp_dir dir;
  auto refused = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                              {"-s", R"(SCHEDULER_ENTRY_FIELDS=["body","url"])"});
  EXPECT_EQ(refused->wait(), 2);
  EXPECT_NE(refused->stderr_text().find("SCHEDULER_ENTRY_FIELDS: \"url\" is not a part of a "
                                        "request an entry may set (method, body, headers, "
                                        "cookies)"),
            std::string::npos)
      << refused->stderr_text();
}

// What the fleet would have done before: fetch the file and put its lines in the feed.
TEST(fleet_origin, a_file_url_read_from_redis_is_set_aside_and_the_file_is_never_read) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  auto secret = dir.path() / "secret.txt";
  std::ofstream(secret) << "<title>the operator's secret</title>";
  auto file_url = "file://" + secret.string();
  write_queue_entry(redis, "0000000000000001", {{"url", file_url}, {"dont_filter", true}});
  write_queue_entry(redis, "0000000000000002", {{"url", "gopher://127.0.0.1:1/_x"}});
  write_queue_entry(redis, "0000000000000003",
                    {{"url", site.url("/s?wd=proxied")},
                     {"meta", {{"proxy", site.url("/")}}},
                     {"dont_filter", true}});
  redis_run(redis.port(), {"RPUSH", "site:start_urls", nlohmann::json{{"url", file_url}}.dump()});
  redis_run(redis.port(), {"RPUSH", "site:start_urls", file_url});

  auto feed = dir.path() / "items.jsonl";
  auto worker = fleet_worker(site, redis, feed);
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  EXPECT_EQ(slurp(feed).find("secret"), std::string::npos) << slurp(feed);
  for (int page = 0; page < 5; ++page) EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u);
  EXPECT_EQ(site.hits("/s?wd=proxied"), 0u);

  auto queue_bad = set_aside(redis, "site:requests:bad");
  ASSERT_EQ(queue_bad.size(), 3u);
  for (const auto& [entry, reason] : queue_bad) {
    if (entry.find(file_url) != std::string::npos) {
      EXPECT_EQ(reason, "scheme \"file\" of " + file_url +
                            ": a shared queue carries only http and https URLs");
    } else if (entry.find("gopher") != std::string::npos) {
      EXPECT_NE(reason.find("scheme \"gopher\""), std::string::npos) << reason;
    } else {
      EXPECT_NE(reason.find("may not choose its proxy"), std::string::npos) << reason;
    }
  }
  auto start_bad = set_aside(redis, "site:start_urls:bad");
  ASSERT_EQ(start_bad.size(), 2u);
  EXPECT_EQ(start_bad[file_url],
            "scheme \"file\" of " + file_url + ": a shared queue carries only http and https URLs");
}

// Whoever writes a queue entry chooses its headers: one whose header, method or URL holds a line
// break is set aside with why, never sent (a second request smuggled on the connection would be
// the writer's choosing); the fleet crawls on.
TEST(fleet_origin, an_entry_whose_header_holds_a_line_break_is_set_aside_and_never_sent) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  write_queue_entry(redis, "0000000000000001",
                    {{"url", site.url("/s?wd=headers")},
                     {"headers", nlohmann::json::array({nlohmann::json::array(
                                     {"X-A", "1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"})})}});
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl");
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  EXPECT_EQ(site.hits("/smuggled"), 0u);
  EXPECT_EQ(site.hits("/s?wd=headers"), 0u);
  for (int page = 0; page < 5; ++page) EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u);
  auto bad = set_aside(redis, "site:requests:bad");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad.begin()->second,
            "header \"X-A\": its value holds a carriage return (byte 1); a field value is visible "
            "characters, spaces and tabs (RFC 9110, section 5.5)");
}

// dont_filter and meta allow_offsite are the spider's to set; written into Redis by anyone, they
// do not take a request to a host outside allowed_domains (the site spider allows its start
// URL's host, 127.0.0.1).
TEST(fleet_origin, dont_filter_and_allow_offsite_in_an_entry_do_not_pass_the_offsite_filter) {
  http_server site({.site_pages = 3});
  redis_server redis;
  temp_dir dir;
  auto other_host = "http://localhost:" + std::to_string(site.port());
  write_queue_entry(redis, "0000000000000001",
                    {{"url", other_host + "/s?wd=offsite"},
                     {"dont_filter", true},
                     {"meta", {{"allow_offsite", true}}}});
  write_queue_entry(redis, "0000000000000002",
                    {{"url", site.url("/s?wd=onsite")}, {"dont_filter", true}});
  auto stats = dir.path() / "stats.json";
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                             {"-s", "STATS_FILE=" + stats.string()});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  EXPECT_EQ(site.hits("/s?wd=offsite"), 0u);
  EXPECT_EQ(site.hits("/s?wd=onsite"), 1u);
  EXPECT_GE(nlohmann::json::parse(slurp(stats)).value("offsite/filtered", 0), 1);
}

TEST(fleet_origin, a_fleet_with_a_file_start_url_stops_before_it_starts_naming_it) {
  redis_server redis;
  temp_dir dir;
  auto page = dir.path() / "index.html";
  std::ofstream(page) << "<title>local</title>";
  child_process fleet({crawler_binary(), "crawl", "site", "-a", "start=file://" + page.string(),
                       "-s", "SCHEDULER=redis", "-s", "DUPEFILTER_CLASS=redis_set", "-s",
                       "REDIS_URL=" + redis.url(), "--nolog"});
  EXPECT_EQ(fleet.wait(), 2);
  EXPECT_NE(fleet.stderr_text().find("start URL \"file://" + page.string() +
                                     "\": SCHEDULER=redis: scheme \"file\""),
            std::string::npos)
      << fleet.stderr_text();
  for (const auto& key : redis_list(redis.port(), "*", "KEYS")) {
    // The epoch and the layout version are the worker's joining the fleet, at open; nothing was
    // queued.
    if (key != "site:requests:epoch" && key != "site:requests:layout") {
      EXPECT_FALSE(key.starts_with("site:requests")) << key;
    }
  }
}

// The same file:// start URL is the operator's own on one machine: crawled.
TEST(local_origin, a_file_start_url_of_the_operator_is_crawled_without_redis) {
  temp_dir dir;
  auto page = dir.path() / "index.html";
  std::ofstream(page) << "<title>local</title>";
  auto feed = dir.path() / "items.jsonl";
  child_process crawl({crawler_binary(), "crawl", "site", "-a", "start=file://" + page.string(),
                       "-o", feed.string(), "--nolog"});
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  EXPECT_NE(slurp(feed).find("\"title\": \"local\""), std::string::npos) << slurp(feed);
}

// One malformed record of each kind another program could leave: the fleet crawls every page,
// exits 0, and each record is in a :bad key with its reason (before, the lease record alone made
// every take fail for 300 s, and the counter lost the start URL).
TEST(fleet_records, one_malformed_record_of_each_kind_is_set_aside_and_the_fleet_crawls_on) {
  http_server site({.site_pages = 30});
  redis_server redis;
  temp_dir dir;
  redis_run(redis.port(), {"HSET", "site:requests:leased", "L9", "no-bars-here"});
  redis_run(redis.port(), {"ZADD", "site:requests:deadlines", "0", "L9"});
  redis_run(redis.port(), {"SET", "site:requests:seq", "not-a-number"});
  write_queue_entry(redis, "0000000000000001",
                    {{"url", site.url("/s?wd=") + std::string(2000, 'x')}});
  redis_run(redis.port(), {"ZADD", "site:requests", "0", "0000000000000002|{\"url\": 5}"});
  redis_run(redis.port(), {"RPUSH", "site:start_urls", "{not json"});
  auto oversized_start = site.url("/s?wd=start-") + std::string(2000, 'y');
  redis_run(redis.port(), {"RPUSH", "site:start_urls", oversized_start});
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                             {"-s", "SCHEDULER_MAX_ENTRY_SIZE=1000"});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  for (int page = 0; page < 30; ++page) {
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  std::set<std::string> kinds;
  for (const auto& record : redis_list(redis.port(), "site:requests:bad")) {
    auto json = set_aside_json(record);
    auto reason = json["reason"].get<std::string>();
    if (json.value("key", "") == "site:requests:leased") kinds.insert("lease record");
    if (json.value("key", "") == "site:requests:seq") kinds.insert("counter");
    if (reason.find("over SCHEDULER_MAX_ENTRY_SIZE (1000)") != std::string::npos) {
      kinds.insert("oversized entry");
    }
    if (reason.find("\"url\" must be a non-empty string") != std::string::npos) {
      kinds.insert("entry");
    }
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"lease record", "counter", "oversized entry", "entry"}));
  auto start_bad = set_aside(redis, "site:start_urls:bad");
  EXPECT_EQ(start_bad.count("{not json"), 1u);
  EXPECT_EQ(start_bad[oversized_start], "an entry of " + std::to_string(oversized_start.size()) +
                                            " bytes, over SCHEDULER_MAX_ENTRY_SIZE (1000)");
  EXPECT_EQ(site.hits("/s?wd=start-" + std::string(2000, 'y')), 0u);
}

// Redis restarted without persistence mid-crawl forgot the queue, the leases and the
// dupefilter: before, both workers found an empty queue and said "finished" (exit 0) with most of
// the site never fetched. Now each stops, non-zero, naming what was lost.
TEST(fleet_state, a_redis_that_forgot_the_fleet_mid_crawl_stops_every_worker_never_finished) {
  http_server site({.site_pages = 300, .page_delay_ms = 20});
  redis_server redis;  // no AOF, no RDB: a restart comes back empty
  temp_dir dir;
  std::vector<std::unique_ptr<child_process>> workers;
  std::vector<std::filesystem::path> stats;
  for (int i = 0; i < 2; ++i) {
    stats.push_back(dir.path() / ("stats-" + std::to_string(i) + ".json"));
    workers.push_back(fleet_worker(
        site, redis, dir.path() / ("items-" + std::to_string(i) + ".jsonl"), "redis_set",
        {"-s", "STATS_FILE=" + stats.back().string(), "-s", "MAX_IDLE_TIME_BEFORE_CLOSE=1", "-L",
         "ERROR"}));
  }
  // Both joined first: a worker still opening when Redis comes back empty joins a new crawl
  // (and crawls the whole site), which is right for it and not what this test is about.
  crawler::fixtures::wait_for_workers(redis, 2);
  wait_until([&] { return site.total_hits() >= 20; }, "the fleet's first pages");
  redis.stop();
  redis.start();
  for (std::size_t i = 0; i < workers.size(); ++i) {
    EXPECT_EQ(workers[i]->wait(), 1) << workers[i]->stderr_text();
    auto log = workers[i]->stderr_text();
    EXPECT_NE(log.find("is not the one this worker joined (site:requests:epoch is gone)"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("leased requests"), std::string::npos) << log;
    auto finish = nlohmann::json::parse(slurp(stats[i]))["finish_reason"];
    EXPECT_EQ(finish, "redis_state_lost");
  }
  EXPECT_LT(site.total_hits(), 300u);  // the crawl was not finished, and nobody says it was
}

TEST(fleet_state, a_redis_that_may_evict_the_fleets_keys_is_named_at_start) {
  http_server site({.site_pages = 3});
  redis_server redis;
  temp_dir dir;
  redis_run(redis.port(), {"CONFIG", "SET", "maxmemory", "100mb"});
  redis_run(redis.port(), {"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  auto worker =
      fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", {"-L", "WARNING"});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  EXPECT_NE(worker->stderr_text().find("has maxmemory 104857600 with maxmemory-policy "
                                       "allkeys-lru: it may evict the fleet's queue"),
            std::string::npos)
      << worker->stderr_text();
  redis_run(redis.port(), {"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  auto quiet =
      fleet_worker(site, redis, dir.path() / "items2.jsonl", "redis_set", {"-L", "WARNING"});
  ASSERT_EQ(quiet->wait(), 0) << quiet->stderr_text();
  EXPECT_EQ(quiet->stderr_text().find("maxmemory"), std::string::npos) << quiet->stderr_text();
}

// A Redis that wants a password the worker does not give answers NOAUTH to everything: the
// worker stops at start saying so, never that a key "holds" the error, nor advising to delete it.
TEST(fleet_state, a_redis_that_refuses_the_worker_is_named_as_refusing_not_as_a_keys_type) {
  http_server site({.site_pages = 3});
  redis_server redis({.password = "s3cret"});
  temp_dir dir;
  auto worker =
      fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                   {"-s", "REDIS_URL=redis://127.0.0.1:" + std::to_string(redis.port()) + "/0"});
  EXPECT_EQ(worker->wait(), 2) << worker->stderr_text();
  auto said = worker->stderr_text();
  EXPECT_NE(said.find("read the type of site:"), std::string::npos) << said;
  EXPECT_NE(said.find("NOAUTH"), std::string::npos) << said;
  EXPECT_EQ(said.find(" holds a "), std::string::npos) << said;
  EXPECT_EQ(site.total_hits(), 0u);
}

long long commands_processed(const redis_server& redis) {
  auto info = redis_run(redis.port(), {"INFO", "stats"});
  auto text = info.empty() ? std::string() : info[0];
  auto at = text.find("total_commands_processed:");
  if (at == std::string::npos) throw std::runtime_error("no total_commands_processed in INFO");
  return std::stoll(text.substr(at + 25));
}

// scrapy-redis's RedisSpider as a crawl file: no start_urls, workers that wait, cheaply, for URLs
// pushed after they started, then crawl the site together.
TEST(push_only_workers, a_crawl_file_without_start_urls_waits_for_pushed_urls) {
  http_server site({.site_pages = 60});
  redis_server redis;
  temp_dir dir;
  auto file = dir.path() / "crawl.json";
  std::ofstream(file) << nlohmann::json{
      {"settings",
       {{"SCHEDULER", "redis"}, {"DUPEFILTER_CLASS", "redis_set"}, {"REDIS_URL", redis.url()}}},
      {"spider", {{"name", "site"}, {"rules", {{{"allow", {"/site/"}}, {"follow", true}}}}}}};
  child_process check({crawler_binary(), "check", file.string()});
  EXPECT_EQ(check.wait(), 0) << check.stderr_text();
  // Without the fleet there is nothing to start from: not a crawl that ends at once, done.
  child_process alone({crawler_binary(), "run", file.string(), "-s", "SCHEDULER=memory"});
  EXPECT_EQ(alone.wait(), 2);
  EXPECT_EQ(alone.stderr_text(), "crawler run: " + file.string() +
                                     ": spider.start_urls: is required with SCHEDULER=memory "
                                     "(only a fleet's workers wait for pushed URLs)\n");
  std::vector<std::unique_ptr<child_process>> workers;
  for (int i = 0; i < 2; ++i) {
    workers.push_back(std::make_unique<child_process>(
        std::vector<std::string>{crawler_binary(), "run", file.string(), "--nolog"}));
  }
  std::this_thread::sleep_for(4s);  // both idle, polling at their longest backoff
  // Every command Redis runs, those inside scripts included, over 4 s, for one worker.
  auto before = commands_processed(redis);
  std::this_thread::sleep_for(4s);
  auto per_second = double(commands_processed(redis) - before - 1) / 4 / 2;
  EXPECT_LT(per_second, 5.0);
  RecordProperty("idle_commands_per_second", std::to_string(per_second));
  child_process push(
      {crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(), site.url("/site/0")});
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  wait_until([&] { return site.total_hits() >= 60; }, "every page of the site");
  std::this_thread::sleep_for(300ms);  // a duplicate fetch would show now
  for (auto& worker : workers) {
    worker->signal(SIGINT);  // MAX_IDLE_TIME_BEFORE_CLOSE 0: they would wait for more forever
    EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  }
  for (int page = 0; page < 60; ++page) {
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
}

// The fleet as people run it: workers started from a crawl file with no start_urls, URLs pushed
// once they run, and a worker that keeps dying (SIGKILL every 1.5 s, restarted at once). Every page
// is crawled and stored once; what is fetched twice is bounded by what the dead had fetched and
// not settled: its downloads and as many pages waiting for their settle, 2 x CONCURRENT_REQUESTS.
TEST(push_only_workers, three_with_one_killed_every_second_and_a_half_crawl_every_page) {
  constexpr std::size_t pages = 3000;
  http_server site({.site_pages = pages, .page_delay_ms = 30});
  redis_server redis;
  temp_dir dir;
  auto file = dir.path() / "crawl.json";
  std::ofstream(file) << nlohmann::json{
      {"settings",
       {{"SCHEDULER", "redis"},
        {"DUPEFILTER_CLASS", "redis_set"},
        {"REDIS_URL", redis.url()},
        {"REDIS_PIPELINE", true},
        {"CONCURRENT_REQUESTS", 4},
        {"SCHEDULER_LEASE_TIME", 2},
        {"SCHEDULER_HEARTBEAT_INTERVAL", 0.5},
        {"MAX_IDLE_TIME_BEFORE_CLOSE", 4}}},
      {"spider",
       {{"name", "site"},
        {"rules", {{{"allow", {"/site/"}}, {"follow", true}, {"callback", "page"}}}},
        {"callbacks", {{"page", {{"fields", {{"url", "$url"}}}}}}}}}};
  auto start = [&] {
    return std::make_unique<child_process>(
        std::vector<std::string>{crawler_binary(), "run", file.string(), "--nolog"});
  };
  std::vector<std::unique_ptr<child_process>> steady;
  steady.push_back(start());
  steady.push_back(start());
  auto victim = start();
  std::this_thread::sleep_for(1s);
  child_process push({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(),
                      site.url("/site/0"), site.url("/site/1500")});
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  std::size_t kills = 0;
  while (site.total_hits() < pages) {
    std::this_thread::sleep_for(1500ms);
    if (site.total_hits() >= pages) break;
    victim->signal(SIGKILL);
    victim->wait();
    ++kills;
    victim = start();
    ASSERT_LT(kills, 100u) << "the fleet does not get through the site";
  }
  EXPECT_EQ(victim->wait(), 0) << victim->stderr_text();
  for (auto& worker : steady) EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  EXPECT_GE(kills, 2u);
  std::size_t fetched_twice = 0;
  for (std::size_t page = 0; page < pages; ++page) {
    auto hits = site.hits("/site/" + std::to_string(page));
    ASSERT_GE(hits, 1u) << "page " << page << " was never fetched";
    fetched_twice += hits - 1;
  }
  EXPECT_LE(fetched_twice, kills * 2 * 4);
  std::set<std::string> stored;
  auto items = redis_list(redis.port(), "site:items");
  for (const auto& item : items)
    stored.insert(nlohmann::json::parse(item)["url"].get<std::string>());
  // The pushed start URLs go to the rules' follow, as a CrawlSpider's: they make no item.
  EXPECT_EQ(items.size(), pages - 2);
  EXPECT_EQ(stored.size(), pages - 2);
  EXPECT_FALSE(stored.contains(site.url("/site/0")));
  EXPECT_FALSE(stored.contains(site.url("/site/1500")));
  EXPECT_EQ(redis_list(redis.port(), "site:requests:dead").size(), 0u);
  RecordProperty("kills", int(kills));
  RecordProperty("fetched_twice", int(fetched_twice));
  std::cout << kills << " kills, " << fetched_twice << " pages fetched twice\n";
}

// Without the fleet, a crawl file with no start_urls would finish at once having done nothing.
TEST(push_only_workers, only_a_fleet_crawl_file_may_leave_out_start_urls) {
  temp_dir dir;
  auto file = dir.path() / "crawl.json";
  std::ofstream(file) << R"({"spider": {"name": "site"}})";
  child_process check({crawler_binary(), "check", file.string()});
  EXPECT_EQ(check.wait(), 1);
  EXPECT_EQ(check.stderr_text(),
            file.string() +
                ": spider.start_urls: is required, unless settings.SCHEDULER is \"redis\" "
                "(workers that wait for URLs pushed with crawler push)\n");
}

constexpr const char* signing_key = "SCHEDULER_SIGNING_KEY=0123456789abcdef-test-key";

// With the fleet's key, its own entries (signed by its workers and by `crawler push`) keep the
// rights their writer had, and nothing else runs: an unsigned or forged queue entry is set aside;
// an unsigned start URL (a Python producer cannot sign) is read as a shared request.
TEST(signed_fleet, runs_only_its_own_entries_and_they_keep_their_writers_rights) {
  http_server site({.site_pages = 20});
  redis_server redis;
  temp_dir dir;
  auto other_host = "http://localhost:" + std::to_string(site.port());
  auto offsite = [&](const std::string& name) {
    return nlohmann::json{{"url", other_host + "/s?wd=" + name},
                          {"dont_filter", true},
                          {"meta", {{"allow_offsite", true}}}}
        .dump();
  };
  child_process push(crawler::fixtures::with_environment(
      {crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(), offsite("signed"),
       site.url("/s?wd=plain")},
      {signing_key}));
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  auto pushed = redis_list(redis.port(), "site:start_urls");
  ASSERT_EQ(pushed.size(), 2u);
  EXPECT_EQ(pushed[1].find(R"(|{"hmac":")"), 16u) << pushed[1];  // numbered, then signed
  redis_run(redis.port(), {"RPUSH", "site:start_urls", offsite("unsigned")});
  write_queue_entry(redis, "0000000000000001", {{"url", site.url("/s?wd=unsigned-entry")}});
  // A signed entry whose URL was changed after signing.
  auto forged = pushed[1];
  auto at = forged.find("/s?wd=plain");
  forged.replace(at, 11, "/s?wd=forged");
  redis_run(redis.port(), {"ZADD", "site:requests", "0", forged});
  // The signed start URL copied whole into the queue: signed for site:start_urls, not here.
  redis_run(redis.port(), {"ZADD", "site:requests", "0", pushed[0]});

  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", {"-L", "DEBUG"},
                             {signing_key});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  for (int page = 0; page < 20; ++page) {
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  EXPECT_EQ(site.hits("/s?wd=plain"), 1u);
  EXPECT_EQ(site.hits("/s?wd=signed"), 1u);    // its pusher's allow_offsite holds, once
  EXPECT_EQ(site.hits("/s?wd=unsigned"), 0u);  // a shared request's does not
  EXPECT_EQ(site.hits("/s?wd=unsigned-entry"), 0u);
  EXPECT_EQ(site.hits("/s?wd=forged"), 0u);
  std::vector<std::string> reasons;
  for (const auto& [entry, reason] : set_aside(redis, "site:requests:bad")) {
    reasons.push_back(reason);
  }
  ASSERT_EQ(reasons.size(), 3u);
  auto ending = [&](const std::string& end) {
    return std::count_if(reasons.begin(), reasons.end(),
                         [&](const std::string& reason) { return reason.ends_with(end); });
  };
  EXPECT_EQ(ending(": not signed, and SCHEDULER_SIGNING_KEY is set: the fleet's own entries are "
                   "signed"),
            1);
  // The start URL with its URL changed, and the start URL copied whole.
  EXPECT_EQ(ending(": forged signature: its \"hmac\" was not written with this fleet's "
                   "SCHEDULER_SIGNING_KEY"),
            2);
  EXPECT_EQ(worker->stderr_text().find("0123456789abcdef-test-key"), std::string::npos);
}

// A signed entry that someone who can write Redis copies back into its queue runs once: a
// worker stopped early leaves the fleet's own entries queued, each is pushed back 29 more times
// (30 in all), and the next worker crawls every page to the end, each fetched once and its item
// stored once, and sets every copy aside as a copy. On one queue, and on three shards (each
// numbering its own entries).
class signed_fleet_copies : public testing::TestWithParam<int> {};

TEST_P(signed_fleet_copies, an_entry_copied_thirty_times_stores_its_item_once) {
  http_server site({.site_pages = 20});
  redis_server redis;
  temp_dir dir;
  auto items_file = dir.path() / "items.jsonl";
  std::vector<std::string> settings{"-s", "SCHEDULER_QUEUE_CLASS=fifo",
                                    "-s", "SCHEDULER_PERSIST=True",
                                    "-s", "SCHEDULER_SHARDS=" + std::to_string(GetParam())};
  std::vector<std::string> queues{"site:requests"};
  if (GetParam() > 1) {
    queues.clear();
    for (int shard = 0; shard < GetParam(); ++shard) {
      queues.push_back("site:" + std::to_string(shard) + ":requests");
    }
  }
  auto first_settings = settings;
  first_settings.insert(first_settings.end(), {"-s", "CLOSESPIDER_PAGECOUNT=1"});
  auto first = fleet_worker(site, redis, items_file, "redis_set", first_settings, {signing_key});
  ASSERT_EQ(first->wait(), 0) << first->stderr_text();
  std::size_t copied = 0;
  for (const auto& queue : queues) {
    for (const auto& entry : redis_list(redis.port(), queue)) {
      ASSERT_NE(entry.find(R"(|{"hmac":")"), std::string::npos) << entry;
      for (int copy = 0; copy < 29; ++copy) redis_run(redis.port(), {"LPUSH", queue, entry});
      ++copied;
    }
  }
  ASSERT_GE(copied, 2u);
  auto second = fleet_worker(site, redis, items_file, "redis_set", settings, {signing_key});
  ASSERT_EQ(second->wait(), 0) << second->stderr_text();
  std::map<std::string, int> items;
  std::ifstream feed(items_file);
  for (std::string line; std::getline(feed, line);) {
    ++items[nlohmann::json::parse(line)["url"].get<std::string>()];
  }
  ASSERT_EQ(items.size(), 20u);
  for (const auto& [url, count] : items) EXPECT_EQ(count, 1) << url;
  for (int page = 0; page < 20; ++page) {
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  std::size_t copies = 0, records = 0;
  for (const auto& queue : queues) {
    // set_aside() keys the records by entry: one a copied entry, however many of its copies.
    for (const auto& [entry, reason] : set_aside(redis, queue + ":bad")) {
      EXPECT_NE(reason.find(", which ran already"), std::string::npos) << reason;
      ++copies;
    }
    records += redis_list(redis.port(), queue + ":bad").size();
  }
  EXPECT_EQ(copies, copied);
  EXPECT_EQ(records, copied * 29);
}

// A signed start URL is read once, however often it is copied into the start key, even one
// that asks not to be filtered: `crawler push` numbers it, and the worker that reads a number
// records it. Thirty copies at once, and one more after the crawl: one fetch.
TEST_P(signed_fleet_copies, a_start_url_copied_thirty_times_is_fetched_once) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  std::vector<std::string> settings{"-s", "SCHEDULER_SHARDS=" + std::to_string(GetParam())};
  child_process push(crawler::fixtures::with_environment(
      {crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(),
       nlohmann::json{{"url", site.url("/s?wd=once")}, {"dont_filter", true}}.dump()},
      {signing_key}));
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  auto pushed = redis_list(redis.port(), "site:start_urls");
  ASSERT_EQ(pushed.size(), 1u);
  for (int copy = 0; copy < 29; ++copy) {
    redis_run(redis.port(), {"RPUSH", "site:start_urls", pushed[0]});
  }
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", settings,
                             {signing_key});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  redis_run(redis.port(), {"RPUSH", "site:start_urls", pushed[0]});
  auto again = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", settings,
                            {signing_key});
  ASSERT_EQ(again->wait(), 0) << again->stderr_text();
  EXPECT_EQ(site.hits("/s?wd=once"), 1u);
  auto bad = redis_list(redis.port(), "site:start_urls:bad");
  EXPECT_EQ(bad.size(), 30u);
  for (const auto& [entry, reason] : set_aside(redis, "site:start_urls:bad")) {
    EXPECT_EQ(entry, pushed[0]);
    EXPECT_NE(reason.find("a copy of start URL " + pushed[0].substr(0, 16) +
                          ", which was read already"),
              std::string::npos)
        << reason;
  }
}

INSTANTIATE_TEST_SUITE_P(signed_fleet, signed_fleet_copies, testing::Values(1, 3),
                         [](const auto& info) { return std::to_string(info.param) + "_shards"; });

TEST(signed_fleet, the_key_comes_from_the_environment_only_and_must_be_long_enough) {
  redis_server redis;
  child_process from_settings({crawler_binary(), "push", "site", "-s",
                               "SCHEDULER_SIGNING_KEY=0123456789abcdef", "http://h.test/"});
  EXPECT_EQ(from_settings.wait(), 2);
  EXPECT_NE(from_settings.stderr_text().find(
                "read from the environment variable SCHEDULER_SIGNING_KEY only"),
            std::string::npos)
      << from_settings.stderr_text();
  child_process short_key(crawler::fixtures::with_environment(
      {crawler_binary(), "crawl", "site", "-a", "start=http://h.test/", "-s", "SCHEDULER=redis",
       "-s", "DUPEFILTER_CLASS=redis_set", "-s", "REDIS_URL=" + redis.url(), "--nolog"},
      {"SCHEDULER_SIGNING_KEY=short-key"}));
  EXPECT_EQ(short_key.wait(), 2);
  EXPECT_NE(short_key.stderr_text().find("SCHEDULER_SIGNING_KEY: must be at least 16 bytes (it "
                                         "has 9)"),
            std::string::npos)
      << short_key.stderr_text();
  EXPECT_EQ(short_key.stderr_text().find("short-key"), std::string::npos);
}

}  // namespace
