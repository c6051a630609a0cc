// Fleets: several `crawler` processes sharing one real redis-server (SCHEDULER=redis) crawl a
// loopback site together, each page once, and lose nothing when a worker is killed.
#include "fleet.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "child_process.h"
#include "http_server.h"
#include "redis_server.h"
#include "refusing_port.h"
#include "scheduler/fleet/pickle.h"
#include "scheduler/fleet/scrapy_request.h"
#include "set_aside_records.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::count_of;
using crawler::fixtures::crawler_binary;
using crawler::fixtures::fleet_worker;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_list;
using crawler::fixtures::redis_run;
using crawler::fixtures::redis_server;
using crawler::fixtures::set_aside_json;
using crawler::fixtures::temp_dir;
using crawler::fixtures::wait_for_workers;

constexpr std::size_t pages = 300;

std::multiset<std::string> crawled_urls(const std::vector<std::filesystem::path>& feeds) {
  std::multiset<std::string> urls;
  for (const auto& feed : feeds) {
    std::ifstream in(feed);
    for (std::string line; std::getline(in, line);) {
      auto item = nlohmann::json::parse(line, nullptr, false);
      if (!item.is_discarded()) urls.insert(item["url"].get<std::string>());
    }
  }
  return urls;
}

TEST(fleet, three_workers_crawl_every_page_of_a_site_exactly_once) {
  http_server site({.site_pages = pages, .page_delay_ms = 10});
  redis_server redis;
  temp_dir dir;
  std::vector<std::filesystem::path> feeds;
  std::vector<std::unique_ptr<child_process>> workers;
  std::vector<std::filesystem::path> stats_files;
  for (int i = 0; i < 3; ++i) {
    feeds.push_back(dir.path() / ("items-" + std::to_string(i) + ".jsonl"));
    stats_files.push_back(dir.path() / ("stats-" + std::to_string(i) + ".json"));
    workers.push_back(fleet_worker(site, redis, feeds.back(), "redis_set",
                                   {"-s", "STATS_FILE=" + stats_files.back().string()}));
  }
  for (auto& w : workers) EXPECT_EQ(w->wait(), 0) << w->stderr_text();
  for (std::size_t page = 0; page < pages; ++page) {
    ASSERT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  auto urls = crawled_urls(feeds);
  for (const auto& feed : feeds) {  // each worker did its share
    EXPECT_GT(crawled_urls({feed}).size(), pages / 10) << feed;
  }
  EXPECT_EQ(urls.size(), pages);
  EXPECT_EQ(std::set<std::string>(urls.begin(), urls.end()).size(), pages);

  // The fleet's stats are the sum of its workers'.
  child_process stats({crawler_binary(), "stats", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(stats.wait(), 0) << stats.stderr_text();
  auto fleet = nlohmann::json::parse(stats.stdout_text());
  for (const char* key : {"downloader/request_count", "response_received_count",
                          "item_scraped_count", "scheduler/dequeued/redis",
                          "downloader/response_status_count/200", "dupefilter/filtered"}) {
    std::int64_t sum = 0;
    for (const auto& file : stats_files) {
      sum += nlohmann::json::parse(std::ifstream(file)).value(key, std::int64_t{0});
    }
    EXPECT_EQ(fleet.value(key, std::int64_t{-1}), sum) << key;
  }
  EXPECT_EQ(fleet["item_scraped_count"], pages);
  // SCHEDULER_PERSIST=false: the last worker out deleted the crawl's state, and kept its stats.
  auto* context = redisConnect("127.0.0.1", redis.port());
  for (const char* key :
       {"site:requests", "site:requests:seq", "site:dupefilter", "site:workers"}) {
    auto* reply = static_cast<redisReply*>(redisCommand(context, "EXISTS %s", key));
    EXPECT_EQ(reply->integer, 0) << key;
    freeReplyObject(reply);
  }
  redisFree(context);
}

// Every page of the site was fetched, and its item is in <spider>:items exactly once: items travel
// with their page's settlement, stored by the holder of its lease only, so a page fetched twice
// (its worker killed, or Redis's answer lost) has one item too.
void expect_every_page_stored_once(const http_server& site, const redis_server& redis) {
  for (std::size_t page = 0; page < pages; ++page) {
    ASSERT_GE(site.hits("/site/" + std::to_string(page)), 1u) << "page " << page << " was lost";
  }
  std::multiset<std::string> items;
  for (const auto& item : redis_list(redis.port(), "site:items")) {
    items.insert(nlohmann::json::parse(item)["url"].get<std::string>());
  }
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()).size(), pages);
  EXPECT_EQ(items.size(), pages);
  EXPECT_EQ(redis_list(redis.port(), "site:requests:leased", "HKEYS").size(), 0u);
}

class killed_workers : public testing::TestWithParam<std::string> {};

TEST_P(killed_workers, lose_nothing_and_refetch_only_what_the_dead_held) {
  http_server site({.site_pages = pages, .page_delay_ms = 50});  // about 2 s of crawling
  redis_server redis({.load_redisbloom = GetParam() == "redisbloom"});
  temp_dir dir;
  std::vector<std::string> fast_leases{"-s", "SCHEDULER_LEASE_TIME=2",
                                       "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.5",
                                       "-s", "REDIS_PIPELINE=true"};
  std::vector<std::filesystem::path> feeds;
  auto start = [&] {
    feeds.push_back(dir.path() / ("items-" + std::to_string(feeds.size()) + ".jsonl"));
    return fleet_worker(site, redis, feeds.back(), GetParam(), fast_leases);
  };
  const int kills = 4;
  for (auto& worker : crawler::fixtures::kill_one_of_two(start, kills, 300ms)) {
    EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  }
  expect_every_page_stored_once(site, redis);
  std::size_t fetched_twice = 0;
  for (std::size_t page = 0; page < pages; ++page) {
    fetched_twice += site.hits("/site/" + std::to_string(page)) - 1;
  }
  // A killed worker had fetched and not settled at most its downloads and as many pages waiting
  // for their settle (engine.h): 2 x CONCURRENT_REQUESTS. Its batch taken ahead was not fetched.
  EXPECT_LE(fetched_twice, std::size_t(kills * 2 * 4));
  // `crawler stats` counts every page and item once: a page's counts are stored with its settle,
  // in the same step, so a kill -9 loses none the killed worker settled, and what it fetched and
  // never settled is counted by the worker that crawled it again, not twice.
  child_process stats({crawler_binary(), "stats", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(stats.wait(), 0) << stats.stderr_text();
  auto fleet = nlohmann::json::parse(stats.stdout_text());
  EXPECT_EQ(fleet.value("item_scraped_count", std::int64_t{-1}), std::int64_t(pages)) << fleet;
  EXPECT_EQ(fleet.value("response_received_count", std::int64_t{-1}), std::int64_t(pages))
      << "the site served " << pages + fetched_twice << " pages; " << fleet;
  RecordProperty("fetched_twice", int(fetched_twice));
  std::cout << "pages fetched twice after " << kills << " kills: " << fetched_twice << "\n";
}

INSTANTIATE_TEST_SUITE_P(every_redis_dupefilter, killed_workers,
                         testing::Values("redis_set", "redis_bitmap", "redisbloom"),
                         [](const auto& info) { return info.param; });

// Redis going away mid-crawl: downloads under way finish, their outcomes wait in the worker (each
// holding its concurrency slot, so the worker pauses), and the crawl resumes when Redis is back
// with its data (AOF), losing nothing and storing nothing twice. Each worker says so in one line
// when Redis goes and one when it is back, from whichever part noticed: the engine storing
// outcomes, or the scheduler taking requests.
TEST(fleet, a_redis_restarted_with_its_data_mid_crawl_loses_nothing) {
  http_server site({.site_pages = pages, .page_delay_ms = 50});
  redis_server redis({.append_only = true});
  temp_dir dir;
  std::vector<std::string> logged{"-s", "MAX_IDLE_TIME_BEFORE_CLOSE=4", "-L", "INFO",
                                  "-s", "REDIS_PIPELINE=true"};
  auto first = fleet_worker(site, redis, dir.path() / "a.jsonl", "redis_set", logged);
  auto second = fleet_worker(site, redis, dir.path() / "b.jsonl", "redis_set", logged);
  wait_for_workers(redis, 2);
  std::this_thread::sleep_for(300ms);
  redis.stop();
  std::this_thread::sleep_for(1500ms);
  redis.start();
  for (auto* w : {first.get(), second.get()}) {
    ASSERT_EQ(w->wait(), 0) << w->stderr_text();
    auto log = w->stderr_text();
    auto scheduler_down = count_of(log, "retrying with backoff until Redis answers");
    auto engine_down = count_of(log, "wait to be stored; next try in");
    EXPECT_LE(scheduler_down, 1u) << log;
    EXPECT_LE(engine_down, 1u) << log;  // at most one line in 10 s
    EXPECT_GE(scheduler_down + engine_down, 1u) << log;
    EXPECT_EQ(count_of(log, "answers again after"), scheduler_down) << log;
    EXPECT_EQ(count_of(log, "Outcomes are stored again after"), engine_down > 0 ? 1u : 0u) << log;
  }
  expect_every_page_stored_once(site, redis);
}

// A Redis that does not come back within REDIS_FAILURE_TIMEOUT closes the worker (exit 1,
// finish_reason redis_unavailable); its leases go back to the queue when they expire.
TEST(fleet, a_redis_gone_for_longer_than_redis_failure_timeout_closes_the_worker) {
  http_server site({.site_pages = pages, .page_delay_ms = 50});
  redis_server redis;
  temp_dir dir;
  auto stats = dir.path() / "stats.json";
  auto orphan = fleet_worker(
      site, redis, dir.path() / "a.jsonl", "redis_set",
      {"-s", "REDIS_FAILURE_TIMEOUT=1", "-s", "STATS_FILE=" + stats.string(), "-L", "ERROR"});
  wait_for_workers(redis, 1);
  std::this_thread::sleep_for(300ms);
  redis.stop();
  EXPECT_EQ(orphan->wait(std::chrono::seconds(20)), 1) << orphan->stderr_text();
  EXPECT_NE(orphan->stderr_text().find("(REDIS_FAILURE_TIMEOUT): closing"), std::string::npos)
      << orphan->stderr_text();
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(stats))["finish_reason"], "redis_unavailable");
}

// A Redis that hangs (SIGSTOP) past the command timeout: the worker gives up on the connection,
// reconnects when Redis runs again, and commands the hung server got from the dead connection
// (a settle whose answer never came, a take whose requests never arrived) cost nothing: a settle
// stores once, and requests taken into a lost answer come back when their lease expires.
TEST(fleet, a_paused_redis_past_the_command_timeout_loses_nothing) {
  http_server site({.site_pages = pages, .page_delay_ms = 50});
  redis_server redis;
  temp_dir dir;
  auto hung =
      fleet_worker(site, redis, dir.path() / "a.jsonl", "redis_set",
                   {"-s", "MAX_IDLE_TIME_BEFORE_CLOSE=4", "-s", "REDIS_PIPELINE=true", "-s",
                    "SCHEDULER_LEASE_TIME=2", "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.5", "-s",
                    R"(REDIS_PARAMS={"socket_timeout": 0.3, "socket_connect_timeout": 0.3})"});
  wait_for_workers(redis, 1);
  std::this_thread::sleep_for(300ms);
  redis.pause();
  std::this_thread::sleep_for(1500ms);
  redis.resume();
  ASSERT_EQ(hung->wait(), 0) << hung->stderr_text();
  expect_every_page_stored_once(site, redis);
}

// A worker paused past its leases (SIGSTOP here; a swapped-out VM or a debugger in life) went on,
// once resumed, to fetch the requests the fleet had meanwhile given to other workers, and counted
// items that were not its to count. It drops what it had taken and not yet fetched, and exports
// and counts the items of the pages it settled, no others.
TEST(fleet, a_worker_resumed_after_its_leases_were_taken_back_fetches_none_of_them) {
  constexpr std::size_t site_pages = 60;
  http_server site({.site_pages = site_pages, .page_delay_ms = 600});
  redis_server redis;
  temp_dir dir;
  auto worker = [&](const std::string& name) {
    return fleet_worker(
        site, redis, dir.path() / (name + ".jsonl"), "redis_set",
        {"-s", "SCHEDULER_LEASE_TIME=1.5", "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.5", "-s",
         "REDIS_PIPELINE=true", "-s", "MAX_IDLE_TIME_BEFORE_CLOSE=3", "-s", "USER_AGENT=" + name,
         "-s", "STATS_FILE=" + (dir.path() / (name + ".json")).string(), "-L", "WARNING"});
  };
  auto stalled = worker("stalled");
  // Paused with its four downloads (CONCURRENT_REQUESTS) in the server's hands, so that none is
  // waiting to be sent, and its next batch taken behind them.
  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 100) << "never caught the worker with four downloads under way";
    crawler::fixtures::wait_until([&] { return site.in_flight() == 4; }, "four downloads");
    stalled->signal(SIGSTOP);
    std::this_thread::sleep_for(100ms);
    if (site.in_flight() == 4) break;
    stalled->signal(SIGCONT);
  }
  auto asked_before_pause = site.targets_asked_by("stalled").size();
  std::this_thread::sleep_for(2500ms);  // past its leases: the next take gives them to others
  auto helper = worker("helper");
  crawler::fixtures::wait_until([&] { return site.targets_asked_by("helper").size() >= 8; },
                                "the helper crawls");
  stalled->signal(SIGCONT);
  EXPECT_EQ(stalled->wait(), 0) << stalled->stderr_text();
  EXPECT_EQ(helper->wait(), 0) << helper->stderr_text();

  auto helped = site.targets_asked_by("helper");
  std::set<std::string> helper_fetched(helped.begin(), helped.end());
  auto resumed = site.targets_asked_by("stalled");
  for (auto at = asked_before_pause; at < resumed.size(); ++at) {
    EXPECT_FALSE(helper_fetched.contains(resumed[at]))
        << resumed[at] << " was the helper's, and the resumed worker fetched it too";
  }
  // Every page's item is stored once, and in one feed once; each worker counted its own.
  std::int64_t counted = 0;
  for (const char* name : {"stalled", "helper"}) {
    auto stats = nlohmann::json::parse(std::ifstream(dir.path() / (std::string(name) + ".json")));
    counted += stats.value("item_scraped_count", std::int64_t{0});
  }
  auto stored = redis_list(redis.port(), "site:items");
  EXPECT_EQ(stored.size(), site_pages);
  auto exported = crawled_urls({dir.path() / "stalled.jsonl", dir.path() / "helper.jsonl"});
  EXPECT_EQ(exported.size(), site_pages);
  EXPECT_EQ(std::set<std::string>(exported.begin(), exported.end()).size(), site_pages);
  EXPECT_EQ(counted, std::int64_t(site_pages));
  EXPECT_NE(stalled->stderr_text().find("dropped here unfetched"), std::string::npos)
      << stalled->stderr_text();
}

// SCHEDULER_FLUSH_ON_START starts the fleet's crawl over, once: of two workers started together,
// one flushes and the other joins it, so neither deletes what the other has queued.
TEST(fleet, flush_on_start_starts_the_crawl_over_once_for_the_whole_fleet) {
  http_server site({.site_pages = 40});
  redis_server redis;
  temp_dir dir;
  std::vector<std::string> keep{"-s", "SCHEDULER_PERSIST=true", "-s",
                                "MAX_IDLE_TIME_BEFORE_CLOSE=1"};
  auto first = fleet_worker(site, redis, dir.path() / "a.jsonl", "redis_set", keep);
  ASSERT_EQ(first->wait(), 0) << first->stderr_text();
  ASSERT_EQ(site.hits("/site/39"), 1u);
  auto again = fleet_worker(site, redis, dir.path() / "b.jsonl", "redis_set", keep);
  ASSERT_EQ(again->wait(), 0) << again->stderr_text();
  EXPECT_EQ(site.hits("/site/0"), 1u);  // everything was seen: nothing to crawl

  auto flushing = keep;
  flushing.insert(flushing.end(), {"-s", "SCHEDULER_FLUSH_ON_START=true", "-L", "INFO"});
  auto one = fleet_worker(site, redis, dir.path() / "c.jsonl", "redis_set", flushing);
  auto two = fleet_worker(site, redis, dir.path() / "d.jsonl", "redis_set", flushing);
  ASSERT_EQ(one->wait(), 0) << one->stderr_text();
  ASSERT_EQ(two->wait(), 0) << two->stderr_text();
  for (int page = 0; page < 40; ++page) {
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 2u) << page;
  }
  auto logs = one->stderr_text() + two->stderr_text();
  EXPECT_EQ(count_of(logs, "Flushed the fleet's queue, dupefilter and stats"), 1u) << logs;
  EXPECT_EQ(count_of(logs, "joined them without flushing"), 1u) << logs;
}

// A worker that holds leases of `lease_seconds` (SCHEDULER_LEASE_TIME), heartbeating every
// 0.3 s, once it has fetched three pages: the holder of the flush-on-start tests.
std::unique_ptr<child_process> leases_holding_worker(const http_server& site,
                                                     const redis_server& redis, const temp_dir& dir,
                                                     const std::string& lease_seconds) {
  auto holder = fleet_worker(
      site, redis, dir.path() / "a.jsonl", "redis_set",
      {"-s", "SCHEDULER_LEASE_TIME=" + lease_seconds, "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.3"});
  crawler::fixtures::wait_until([&] { return site.total_hits() >= 3; }, "the holder crawls");
  return holder;
}

// A worker alive but not heard from (paused here; a stalled VM, a lost line in <spider>:workers in
// life) holds leases: a worker started with SCHEDULER_FLUSH_ON_START must not throw them away.
TEST(fleet, flush_on_start_beside_a_worker_that_holds_leases_refuses_and_flushes_nothing) {
  http_server site({.site_pages = 40, .page_delay_ms = 400});
  redis_server redis;
  temp_dir dir;
  auto holder = leases_holding_worker(site, redis, dir, "30");
  holder->signal(SIGSTOP);
  std::this_thread::sleep_for(1200ms);  // its heartbeat is stale: three intervals are 0.9 s
  auto leased = redis_list(redis.port(), "site:requests:leased", "HKEYS").size();
  ASSERT_GT(leased, 0u);
  auto flusher = fleet_worker(site, redis, dir.path() / "b.jsonl", "redis_set",
                              {"-s", "SCHEDULER_FLUSH_ON_START=true"});
  EXPECT_EQ(flusher->wait(), 2);
  EXPECT_NE(flusher->stderr_text().find("SCHEDULER_FLUSH_ON_START: not flushing the fleet"),
            std::string::npos)
      << flusher->stderr_text();
  EXPECT_NE(flusher->stderr_text().find("site:requests:leased holds " + std::to_string(leased) +
                                        " leases that have not expired"),
            std::string::npos)
      << flusher->stderr_text();
  EXPECT_EQ(redis_list(redis.port(), "site:requests:leased", "HKEYS").size(), leased);
  // Not heard from: its counts since its last heartbeat are not in the fleet's.
  child_process status({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(status.wait(), 0) << status.stderr_text();
  EXPECT_NE(status.stdout_text().find("figures may be partial: 1 workers stopped without closing"),
            std::string::npos)
      << status.stdout_text();
  holder->signal(SIGCONT);
  holder->signal(SIGINT);
  EXPECT_EQ(holder->wait(), 0) << holder->stderr_text();
}

// Leases whose deadline has passed on Redis's clock are nobody's (their worker died): they do not
// refuse SCHEDULER_FLUSH_ON_START, which flushes them with the rest and crawls anew.
TEST(fleet, flush_on_start_after_a_worker_died_holding_leases_flushes_once_they_have_expired) {
  http_server site({.site_pages = 40, .page_delay_ms = 400});
  redis_server redis;
  temp_dir dir;
  auto holder = leases_holding_worker(site, redis, dir, "1");
  holder->signal(SIGKILL);
  holder->wait();
  ASSERT_GT(redis_list(redis.port(), "site:requests:leased", "HKEYS").size(), 0u);
  // Waited for on Redis's clock, which judges the leases: the last deadline behind its TIME.
  crawler::fixtures::wait_until(
      [&] {
        auto time = redis_run(redis.port(), {"TIME"});
        auto last = redis_run(redis.port(),
                              {"ZRANGE", "site:requests:deadlines", "-1", "-1", "WITHSCORES"});
        return last.size() == 2 && std::stod(last[1]) < std::stod(time[0]) * 1000;
      },
      "the dead worker's leases to expire on Redis's clock");
  auto flusher = fleet_worker(site, redis, dir.path() / "b.jsonl", "redis_set",
                              {"-s", "SCHEDULER_FLUSH_ON_START=true", "-L", "INFO"});
  ASSERT_EQ(flusher->wait(), 0) << flusher->stderr_text();
  EXPECT_EQ(count_of(flusher->stderr_text(), "Flushed the fleet's queue, dupefilter and stats"), 1u)
      << flusher->stderr_text();
  EXPECT_EQ(flusher->stderr_text().find("not flushing"), std::string::npos);
  EXPECT_EQ(redis_list(redis.port(), "site:requests:leased", "HKEYS").size(), 0u);
  // The crawl over: the start page again, and every page of the site.
  EXPECT_EQ(site.hits("/site/0"), 2u);
  for (int page = 0; page < 40; ++page) {
    EXPECT_GE(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
}

// A page that kills every worker taking it (killed here by the test while the worker fetches
// it) would go round the fleet forever: after SCHEDULER_MAX_DELIVERIES takes it is a dead letter,
// shown by `crawler status` and put back by `crawler requeue`.
TEST(fleet, a_request_whose_workers_keep_dying_becomes_a_dead_letter_and_can_be_requeued) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  auto poison = site.url("/slow?ms=30000");
  auto worker = [&](const std::string& name) {
    std::vector<std::string> argv{crawler_binary(),
                                  "crawl",
                                  "site",
                                  "-a",
                                  "start=" + poison,
                                  "-s",
                                  "SCHEDULER=redis",
                                  "-s",
                                  "DUPEFILTER_CLASS=redis_set",
                                  "-s",
                                  "REDIS_URL=" + redis.url(),
                                  "-s",
                                  "SCHEDULER_LEASE_TIME=1",
                                  "-s",
                                  "SCHEDULER_HEARTBEAT_INTERVAL=0.3",
                                  "-s",
                                  "SCHEDULER_MAX_DELIVERIES=2",
                                  "-s",
                                  "MAX_IDLE_TIME_BEFORE_CLOSE=1",
                                  "-o",
                                  (dir.path() / (name + ".jsonl")).string()};
    return std::make_unique<child_process>(argv);
  };
  for (std::size_t death = 1; death <= 2; ++death) {
    auto doomed = worker("doomed" + std::to_string(death));
    crawler::fixtures::wait_until([&] { return site.hits("/slow?ms=30000") == death; },
                                  "the worker fetches the poison page");
    doomed->signal(SIGKILL);
    doomed->wait();
    std::this_thread::sleep_for(1200ms);  // its lease expires
  }
  auto survivor = worker("survivor");
  EXPECT_EQ(survivor->wait(), 0) << survivor->stderr_text();
  EXPECT_EQ(site.hits("/slow?ms=30000"), 2u);
  EXPECT_NE(survivor->stderr_text().find("Moved 1 requests to site:requests:dead"),
            std::string::npos)
      << survivor->stderr_text();
  auto dead = redis_list(redis.port(), "site:requests:dead");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(set_aside_json(dead[0])["deliveries"], 2);

  child_process status({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(status.wait(), 0) << status.stderr_text();
  EXPECT_NE(status.stdout_text().find("dead letters: 1 in site:requests:dead (`crawler requeue "
                                      "site` puts them back)"),
            std::string::npos)
      << status.stdout_text();
  child_process requeue({crawler_binary(), "requeue", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(requeue.wait(), 0) << requeue.stderr_text();
  EXPECT_EQ(requeue.stdout_text(), "Put 1 dead letters back where they were\n");
  EXPECT_EQ(redis_list(redis.port(), "site:requests:dead").size(), 0u);
  auto queued = crawler::fixtures::redis_run(redis.port(), {"ZRANGE", "site:requests", "0", "-1"});
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_NE(queued[0].find(poison), std::string::npos) << queued[0];

  // A line another program pushed is no dead letter: left where it is, named, and the command
  // fails so a script that runs it notices.
  crawler::fixtures::redis_run(redis.port(), {"RPUSH", "site:requests:dead", "not a record"});
  child_process left({crawler_binary(), "requeue", "site", "-s", "REDIS_URL=" + redis.url()});
  EXPECT_EQ(left.wait(), 1) << left.stderr_text();
  EXPECT_NE(left.stdout_text().find("Left 1 records of site:requests:dead that are not entries of "
                                    "the queue or its start URLs:\n"),
            std::string::npos)
      << left.stdout_text();
  EXPECT_EQ(redis_list(redis.port(), "site:requests:dead"),
            std::vector<std::string>{"not a record"});
}

// SCHEDULER_MAX_DELIVERIES is 10 unless set: a request nine workers took and died with is still
// crawled by the tenth; one ten took goes to the dead letters with its count. The counts are
// written as ten deaths would leave them (the hash of a scrapy-redis entry is its SHA-1).
TEST(fleet, by_default_the_tenth_take_is_crawled_and_the_eleventh_is_a_dead_letter) {
  http_server site({.site_pages = 2});
  redis_server redis;
  temp_dir dir;
  auto entry_of = [&](const std::string& path, int deliveries) {
    auto entry = crawler::pickle::write(crawler::scrapy_dict_of(crawler::request{site.url(path)}));
    redis_run(redis.port(), {"ZADD", "site:requests", "0", entry});
    auto id = redis_run(redis.port(), {"EVAL", "return redis.sha1hex(ARGV[1])", "0", entry});
    redis_run(redis.port(),
              {"HSET", "site:requests:deliveries", id.at(0), std::to_string(deliveries)});
  };
  entry_of("/taken-nine-times", 9);
  entry_of("/taken-ten-times", 10);
  auto worker =
      fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                   {"-L", "WARNING", "-s", "SCHEDULER_SERIALIZER=scrapy_redis.picklecompat"});
  EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  EXPECT_EQ(site.hits("/taken-nine-times"), 1u);
  EXPECT_EQ(site.hits("/taken-ten-times"), 0u);
  auto dead = redis_list(redis.port(), "site:requests:dead");
  ASSERT_EQ(dead.size(), 1u) << worker->stderr_text();
  auto record = set_aside_json(dead[0]);
  EXPECT_EQ(record["deliveries"], 10);
  EXPECT_NE(record["entry"].get<std::string>().find("/taken-ten-times"), std::string::npos);
  EXPECT_TRUE(redis_list(redis.port(), "site:requests:deliveries", "HKEYS").empty());
}

TEST(fleet, a_key_of_the_wrong_type_stops_a_worker_at_start_naming_the_key) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  auto* context = redisConnect("127.0.0.1", redis.port());
  freeReplyObject(redisCommand(context, "SET site:requests:leased oops"));
  redisFree(context);
  auto refused =
      fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", {"-L", "ERROR"});
  EXPECT_NE(refused->wait(), 0);
  EXPECT_NE(refused->stderr_text().find(
                "key site:requests:leased holds a string, where the fleet keeps a hash"),
            std::string::npos)
      << refused->stderr_text();
  EXPECT_EQ(site.total_hits(), 0u);
}

// A stats field or a worker's line that another program overwrote is a record like any other:
// it goes aside to <queue>:bad with the reason, and the fleet crawls on and counts from there.
TEST(fleet, a_stats_field_or_worker_line_that_is_not_one_is_set_aside_and_the_crawl_goes_on) {
  http_server site({.site_pages = pages, .page_delay_ms = 5});
  redis_server redis;
  temp_dir dir;
  redis_run(redis.port(), {"HSET", "site:stats", "item_scraped_count", "lots"});
  redis_run(redis.port(), {"HSET", "site:workers", "ghost", "{not a record"});
  auto worker = fleet_worker(
      site, redis, dir.path() / "items.jsonl", "redis_set",
      {"-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.5", "-s", "REDIS_PIPELINE=true", "-L", "WARNING"});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  expect_every_page_stored_once(site, redis);
  std::map<std::string, nlohmann::json> set_aside;  // by the key it was in
  for (const auto& record : redis_list(redis.port(), "site:requests:bad")) {
    auto json = set_aside_json(record);
    set_aside[json["key"].get<std::string>()] = json;
  }
  ASSERT_TRUE(set_aside.contains("site:stats")) << worker->stderr_text();
  EXPECT_EQ(set_aside["site:stats"]["entry"], "lots");
  EXPECT_EQ(set_aside["site:stats"]["field"], "item_scraped_count");
  EXPECT_NE(set_aside["site:stats"]["reason"].get<std::string>().find("not a count"),
            std::string::npos);
  ASSERT_TRUE(set_aside.contains("site:workers"));
  EXPECT_EQ(set_aside["site:workers"]["field"], "ghost");
  EXPECT_EQ(set_aside["site:workers"]["entry"], "{not a record");
  // Counted from 0 again: the stats hold every page, once.
  EXPECT_EQ(redis_run(redis.port(), {"HGET", "site:stats", "item_scraped_count"}),
            std::vector<std::string>{std::to_string(pages)});
  EXPECT_EQ(redis_list(redis.port(), "site:workers", "HKEYS").size(), 0u);
}

// Bloom parameters another program overwrote: over an empty filter they are set aside to
// <key>:bad and the crawl goes on; over a filter with bits set there is no telling how they were
// set, and guessing could call new pages seen, so the worker refuses, naming both keys.
TEST(fleet, bloom_parameters_that_are_not_ones_are_set_aside_unless_the_filter_holds_bits) {
  http_server site({.site_pages = 30});
  redis_server redis;
  temp_dir dir;
  redis_run(redis.port(), {"SET", "site:bloomfilter:params", "m=whatever"});
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_bitmap",
                             {"-L", "ERROR", "-s", "SCHEDULER_PERSIST=true"});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  for (std::size_t page = 0; page < 30; ++page) {
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  auto bad = redis_list(redis.port(), "site:bloomfilter:bad");
  ASSERT_EQ(bad.size(), 1u);
  auto record = set_aside_json(bad[0]);
  EXPECT_EQ(record["key"], "site:bloomfilter:params");
  EXPECT_EQ(record["entry"], "m=whatever");
  EXPECT_NE(record["reason"].get<std::string>().find("not the parameters of a Bloom filter"),
            std::string::npos);

  // The filter now holds the crawl's bits. JSON of another shape is no better than text.
  redis_run(redis.port(), {"SET", "site:bloomfilter:params", R"({"format": "m=whatever"})"});
  auto refused =
      fleet_worker(site, redis, dir.path() / "again.jsonl", "redis_bitmap", {"-L", "ERROR"});
  EXPECT_EQ(refused->wait(), 2);
  EXPECT_NE(refused->stderr_text().find(
                "'site:bloomfilter:params' holds \"{\"format\": \"m=whatever\"}\", not the "
                "parameters of a Bloom filter, and 'site:bloomfilter' has"),
            std::string::npos)
      << refused->stderr_text();
  EXPECT_EQ(redis_list(redis.port(), "site:bloomfilter:bad").size(), 1u);
}

// One bit set is already a filter someone used: the boundary of the refusal above. The value
// nobody can read as parameters (quoted in the message by its first 100 bytes and its length)
// stays where it is, and nothing is crawled.
TEST(fleet, unreadable_bloom_parameters_over_a_filter_of_one_bit_are_refused) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  redis_run(redis.port(), {"SETBIT", "site:bloomfilter", "12345", "1"});
  // 150 bytes: the message quotes the first 100 and says how long the value is.
  std::string value = "m=" + std::string(97, 'a') + "|" + std::string(50, 'z');
  redis_run(redis.port(), {"SET", "site:bloomfilter:params", value});
  auto refused =
      fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_bitmap", {"-L", "ERROR"});
  EXPECT_EQ(refused->wait(), 2);
  EXPECT_NE(
      refused->stderr_text().find("'site:bloomfilter:params' holds \"" + value.substr(0, 100) +
                                  "\"... (150 bytes), not the parameters of a Bloom "
                                  "filter, and 'site:bloomfilter' has 1 bit set: there is "
                                  "no telling"),
      std::string::npos)
      << refused->stderr_text();
  EXPECT_EQ(redis_run(redis.port(), {"GET", "site:bloomfilter:params"}),
            std::vector<std::string>{value});
  EXPECT_EQ(redis_list(redis.port(), "site:bloomfilter:bad").size(), 0u);
  EXPECT_EQ(site.total_hits(), 0u);
}

// Two workers that would close after one idle second (MAX_IDLE_TIME_BEFORE_CLOSE 1), each with
// its own feed and STATS_FILE (statsN.json in `dir`), logging at INFO: the outage tests' fleet.
std::pair<std::vector<std::unique_ptr<child_process>>, std::vector<std::filesystem::path>>
two_idle_impatient_workers(const http_server& site, const redis_server& redis,
                           const temp_dir& dir) {
  std::vector<std::unique_ptr<child_process>> workers;
  std::vector<std::filesystem::path> stats;
  for (int i = 0; i < 2; ++i) {
    stats.push_back(dir.path() / ("stats" + std::to_string(i) + ".json"));
    auto feed = dir.path() / ("items" + std::to_string(i) + ".jsonl");
    workers.push_back(
        fleet_worker(site, redis, feed, "redis_set",
                     {"-s", "MAX_IDLE_TIME_BEFORE_CLOSE=1", "-s", "REDIS_PIPELINE=true", "-s",
                      "STATS_FILE=" + stats.back().string(), "-L", "INFO"}));
  }
  return {std::move(workers), std::move(stats)};
}

// Past maxmemory (noeviction) Redis refuses the writes that would grow it. The worker says so
// once, as what it is, not as a lost connection; it goes on where Redis lets it and, once Redis
// has room, crawls to the end with nothing lost.
TEST(fleet, a_redis_out_of_memory_mid_crawl_is_said_once_and_nothing_is_lost) {
  http_server site({.site_pages = pages, .page_delay_ms = 20});
  redis_server redis;
  temp_dir dir;
  auto stats = dir.path() / "stats.json";
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                             {"-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.3", "-s", "REDIS_PIPELINE=true",
                              "-s", "STATS_FILE=" + stats.string(), "-L", "INFO"});
  crawler::fixtures::wait_until([&] { return site.total_hits() >= 30; }, "30 pages fetched");
  redis_run(redis.port(), {"CONFIG", "SET", "maxmemory", "1"});
  std::this_thread::sleep_for(1500ms);
  redis_run(redis.port(), {"CONFIG", "SET", "maxmemory", "0"});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  expect_every_page_stored_once(site, redis);
  auto log = worker->stderr_text();
  const std::string said = "is out of memory (maxmemory reached; it refuses writes)";
  auto first = log.find(said);
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(said, first + 1), std::string::npos) << log;
  EXPECT_NE(log.find("takes writes again", first), std::string::npos) << log;
  auto counted = nlohmann::json::parse(std::ifstream(stats));
  EXPECT_EQ(counted.value("scheduler/redis_out_of_memory", 0), 1);
  EXPECT_EQ(counted["finish_reason"], "finished");
}

// A Redis past maxmemory before the workers start, for longer than MAX_IDLE_TIME_BEFORE_CLOSE:
// each worker says why it waits and waits (the outage is no idleness), and once Redis has room
// they crawl every page, once; none ends "finished" with its start requests unstored.
TEST(fleet, workers_started_on_a_redis_out_of_memory_wait_for_room_and_crawl_every_page) {
  http_server site({.site_pages = pages});
  redis_server redis;
  temp_dir dir;
  redis_run(redis.port(), {"CONFIG", "SET", "maxmemory", "1"});
  // Not a structured binding: clang 14 lets no lambda capture one.
  auto fleet = two_idle_impatient_workers(site, redis, dir);
  auto& workers = fleet.first;
  auto& stats = fleet.second;
  crawler::fixtures::wait_until(
      [&] {
        for (const auto& worker : workers) {
          if (worker->stderr_text().find("is out of memory") == std::string::npos) return false;
        }
        return true;
      },
      "both workers to say Redis is out of memory");
  std::this_thread::sleep_for(2500ms);  // longer than MAX_IDLE_TIME_BEFORE_CLOSE
  for (const auto& worker : workers) {
    EXPECT_EQ(worker->stderr_text().find("Spider closed"), std::string::npos)
        << worker->stderr_text();
  }
  EXPECT_EQ(site.total_hits(), 0u);
  redis_run(redis.port(), {"CONFIG", "SET", "maxmemory", "0"});
  for (std::size_t i = 0; i < workers.size(); ++i) {
    ASSERT_EQ(workers[i]->wait(), 0) << workers[i]->stderr_text();
    auto counted = nlohmann::json::parse(std::ifstream(stats[i]));
    EXPECT_EQ(counted["finish_reason"], "finished");
  }
  expect_every_page_stored_once(site, redis);
}

// The class of the tests above: an outage of each kind (Redis restarted with its data, paused,
// out of memory), at the workers' start or in the middle of their crawl, for three seconds, with
// MAX_IDLE_TIME_BEFORE_CLOSE one: an outage is never idleness. Two workers crawl every page once,
// end "finished" only once the queue and the leases are empty, and add all they counted to the
// fleet's stats.
struct outage {
  std::string kind;  // "restart", "pause", "oom"
  bool at_start;
};

void PrintTo(const outage& kind, std::ostream* out) {
  *out << kind.kind << (kind.at_start ? " at start" : " mid-crawl");
}

class outage_longer_than_idle : public testing::TestWithParam<outage> {};

TEST_P(outage_longer_than_idle, never_ends_the_crawl_and_loses_nothing) {
  auto [kind, at_start] = GetParam();
  http_server site({.site_pages = pages, .page_delay_ms = 50});
  redis_server redis({.append_only = kind == "restart"});
  temp_dir dir;
  auto begin = [&, kind = kind] {
    if (kind == "restart") redis.stop();
    if (kind == "pause") redis.pause();
    if (kind == "oom") redis_run(redis.port(), {"CONFIG", "SET", "maxmemory", "1"});
  };
  auto end = [&, kind = kind] {
    if (kind == "restart") redis.start();
    if (kind == "pause") redis.resume();
    if (kind == "oom") redis_run(redis.port(), {"CONFIG", "SET", "maxmemory", "0"});
  };
  if (at_start) begin();
  // Not a structured binding: clang 14 lets no lambda capture one.
  auto fleet = two_idle_impatient_workers(site, redis, dir);
  auto& workers = fleet.first;
  auto& stats = fleet.second;
  if (!at_start) {
    crawler::fixtures::wait_until([&] { return site.total_hits() >= 30; }, "30 pages fetched");
    begin();
  }
  std::this_thread::sleep_for(3s);  // the outage itself: three times MAX_IDLE_TIME_BEFORE_CLOSE
  // Past maxmemory, Redis still runs a script whose first write frees memory (a take's pop, a
  // settle's lease removal), so a crawl under way may end during the outage, rightly: only
  // what it stores at the end must wait. Away or paused, nothing can end it.
  if (at_start || kind != "oom") {
    for (const auto& worker : workers) {
      EXPECT_EQ(worker->stderr_text().find("Spider closed"), std::string::npos)
          << worker->stderr_text();
    }
  }
  end();
  for (std::size_t i = 0; i < workers.size(); ++i) {
    ASSERT_EQ(workers[i]->wait(), 0) << workers[i]->stderr_text();
    EXPECT_EQ(nlohmann::json::parse(std::ifstream(stats[i]))["finish_reason"], "finished");
  }
  expect_every_page_stored_once(site, redis);
  // And the fleet's counts are whole: what a worker could not add during the outage it added
  // after, at its close too.
  EXPECT_EQ(redis_run(redis.port(), {"HGET", "site:stats", "item_scraped_count"}),
            std::vector<std::string>{std::to_string(pages)});
}

INSTANTIATE_TEST_SUITE_P(fleet, outage_longer_than_idle,
                         testing::Values(outage{"restart", true}, outage{"restart", false},
                                         outage{"pause", true}, outage{"pause", false},
                                         outage{"oom", true}, outage{"oom", false}),
                         [](const auto& info) {
                           return info.param.kind +
                                  (info.param.at_start ? "_at_start" : "_mid_crawl");
                         });

// What waiting at start is not: a Redis that stays away past REDIS_FAILURE_TIMEOUT stops the
// worker, once it has said why it waits; a password Redis refuses stops it at once, since no
// wait will change it.
TEST(fleet, a_redis_away_at_start_is_waited_for_until_its_timeout_and_a_wrong_password_not_at_all) {
  http_server site({.site_pages = 5});
  temp_dir dir;
  redis_server redis({.password = "right-password"});
  crawler::fixtures::refusing_port refusing;
  auto nowhere = refusing.port();
  // Each waits (or not) for REDIS_FAILURE_TIMEOUT, as its log says: the password's 300 s would
  // show as a wait the log names, with no bound on the wall time the test takes.
  struct start {
    std::string url;
    std::string timeout;
    std::string said;
    double at_least_s;
    bool waits;
  };
  for (const auto& [url, timeout, said, at_least_s, waits] : std::vector<start>{
           {"redis://127.0.0.1:" + std::to_string(nowhere), "1.5",
            "retrying with backoff until Redis answers: cannot connect to Redis at", 1.5, true},
           {"redis://:wrong-password@127.0.0.1:" + std::to_string(redis.port()), "300",
            "refused AUTH", 0, false}}) {
    auto began = std::chrono::steady_clock::now();
    auto worker = fleet_worker(
        site, redis, dir.path() / "items.jsonl", "redis_set",
        {"-s", "REDIS_URL=" + url, "-s", "REDIS_FAILURE_TIMEOUT=" + timeout, "-L", "INFO"});
    EXPECT_EQ(worker->wait(), 2) << worker->stderr_text();
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    EXPECT_GE(took, at_least_s) << url;
    const auto log = worker->stderr_text();
    EXPECT_NE(log.find(said), std::string::npos) << log;
    EXPECT_EQ(log.find("retrying with backoff") != std::string::npos, waits) << log;
    EXPECT_EQ(log.find("Could not open the fleet's keys for " + timeout +
                       " s (REDIS_FAILURE_TIMEOUT)") != std::string::npos,
              waits)
        << log;
    EXPECT_EQ(log.find("wrong-password"), std::string::npos);
  }
  EXPECT_EQ(site.total_hits(), 0u);
}

// A key made into another type mid-crawl (an operator's redis-cli, another program) fails every
// script that uses it, the same way every time: the worker says so once, naming the key, and
// exits 2, rather than retry as if Redis were away; what it held goes back to the queue.
TEST(fleet, a_key_made_the_wrong_type_mid_crawl_stops_the_worker_once_naming_it) {
  http_server site({.site_pages = pages, .page_delay_ms = 20});
  redis_server redis;
  temp_dir dir;
  auto stats = dir.path() / "stats.json";
  auto worker = fleet_worker(
      site, redis, dir.path() / "items.jsonl", "redis_set",
      {"-s", "STATS_FILE=" + stats.string(), "-s", "REDIS_FAILURE_TIMEOUT=5", "-L", "ERROR"});
  crawler::fixtures::wait_until([&] { return site.total_hits() >= 20; }, "20 pages fetched");
  // In one step: a worker's INCR between a DEL and an HSET would make the key a counter again.
  redis_run(redis.port(), {"EVAL",
                           "redis.call('DEL', KEYS[1]) "
                           "return redis.call('HSET', KEYS[1], 'not', 'a counter')",
                           "1", "site:requests:seq"});
  EXPECT_EQ(worker->wait(), 2) << worker->stderr_text();
  auto log = worker->stderr_text();
  const std::string named = "key site:requests:seq holds a hash, where the fleet keeps a string";
  auto first = log.find(named);
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(named, first + 1), std::string::npos) << "said more than once:\n" << log;
  EXPECT_EQ(log.find("retrying"), std::string::npos) << log;
  std::ifstream in(stats);
  EXPECT_EQ(nlohmann::json::parse(in)["finish_reason"], "redis_error");
  EXPECT_LT(site.total_hits(), pages);
}

TEST(fleet, pushed_start_urls_are_crawled_once_and_bad_ones_are_set_aside) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  child_process push({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(),
                      site.url("/s?wd=a"), site.url("/s?wd=a"),
                      R"({"url": ")" + site.url("/s?wd=b") + R"(", "meta": {"from": "push"}})",
                      R"({"url": ")" + site.url("/s?wd=d") + R"(", "callback": "nope"})"});
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  EXPECT_EQ(push.stdout_text(), "Pushed 4 start URLs to site:start_urls\n");
  child_process typo({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(),
                      site.url("/s?wd=c"), R"({"url": 5})"});
  EXPECT_EQ(typo.wait(), 2);
  EXPECT_EQ(typo.stderr_text(), "crawler push: argument 2: \"url\" must be a string\n");
  // An entry someone else wrote, that no worker can run.
  auto* context = redisConnect("127.0.0.1", redis.port());
  freeReplyObject(redisCommand(context, "RPUSH site:start_urls %s", "{not json"));
  redisFree(context);

  auto fleet =
      fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", {"-L", "WARNING"});
  EXPECT_EQ(fleet->wait(), 0) << fleet->stderr_text();
  // Said where it is seen, and again at the end.
  EXPECT_NE(fleet->stderr_text().find("Set aside: spider site has no callback \"nope\""),
            std::string::npos)
      << fleet->stderr_text();
  EXPECT_NE(fleet->stderr_text().find("This worker set aside 2 records it could not use"),
            std::string::npos)
      << fleet->stderr_text();
  EXPECT_EQ(site.hits("/s?wd=a"), 1u);
  EXPECT_EQ(site.hits("/s?wd=b"), 1u);
  EXPECT_EQ(site.hits("/s?wd=c"), 0u);  // the push with a typo sent nothing
  EXPECT_EQ(redis_list(redis.port(), "site:start_urls").size(), 0u);
  auto bad = redis_list(redis.port(), "site:start_urls:bad");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(set_aside_json(bad[0])["entry"], "{not json");
  // A request the spider has no callback for is queued, but never downloaded or run.
  EXPECT_EQ(site.hits("/s?wd=d"), 0u);
  auto unrunnable = redis_list(redis.port(), "site:requests:bad");
  ASSERT_EQ(unrunnable.size(), 1u);
  EXPECT_EQ(set_aside_json(unrunnable[0])["reason"], "spider site has no callback \"nope\"");

  // An operator sees why, and puts both back as they were once the spider is fixed.
  child_process status({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(status.wait(), 0) << status.stderr_text();
  EXPECT_NE(status.stdout_text().find("set aside: spider site has no callback \"nope\""),
            std::string::npos)
      << status.stdout_text();
  EXPECT_NE(status.stdout_text().find("`crawler requeue site --bad` puts them back"),
            std::string::npos)
      << status.stdout_text();
  auto entry = set_aside_json(unrunnable[0])["entry"].get<std::string>();
  child_process requeue(
      {crawler_binary(), "requeue", "site", "--bad", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(requeue.wait(), 0) << requeue.stderr_text();
  EXPECT_EQ(requeue.stdout_text(), "Put 2 set-aside entries back where they were\n");
  EXPECT_EQ(redis_list(redis.port(), "site:start_urls"), std::vector<std::string>{"{not json"});
  EXPECT_EQ(redis_run(redis.port(), {"ZRANGE", "site:requests", "0", "-1"}),
            std::vector<std::string>{entry});
  EXPECT_TRUE(redis_list(redis.port(), "site:requests:bad").empty());
  EXPECT_TRUE(redis_list(redis.port(), "site:start_urls:bad").empty());
}

// Every Redis key a fleet uses that has a setting comes from its template, %(spider)s and %(name)s
// both standing for the spider's name; nothing is written under the default names. The shared
// stats and the worker lines have no setting (DESIGN's <spider>:stats, <spider>:workers).
TEST(fleet, every_key_follows_its_template_setting) {
  http_server site({.site_pages = 20});
  redis_server redis;
  temp_dir dir;
  std::vector<std::string> keys{"-s", "SCHEDULER_QUEUE_KEY=jobs:%(spider)s:queue",
                                "-s", "DUPEFILTER_KEY=jobs:%(name)s:seen",
                                "-s", "REDIS_ITEMS_KEY=out:%(spider)s",
                                "-s", "REDIS_START_URLS_KEY=in:%(name)s",
                                "-s", "REDIS_PIPELINE=true",
                                "-s", "SCHEDULER_PERSIST=true"};
  std::vector<std::string> push{crawler_binary(),
                                "push",
                                "site",
                                "-s",
                                "REDIS_URL=" + redis.url(),
                                "-s",
                                "REDIS_START_URLS_KEY=in:%(name)s",
                                site.url("/site/0")};
  child_process pushed(push);
  ASSERT_EQ(pushed.wait(), 0) << pushed.stderr_text();
  EXPECT_EQ(pushed.stdout_text(), "Pushed 1 start URLs to in:site\n");
  auto fleet = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", keys);
  ASSERT_EQ(fleet->wait(), 0) << fleet->stderr_text();
  EXPECT_EQ(redis_list(redis.port(), "out:site").size(), 20u);
  EXPECT_EQ(redis_list(redis.port(), "jobs:site:seen", "SMEMBERS").size(), 20u);
  for (const auto& key : redis_list(redis.port(), "*", "KEYS")) {
    EXPECT_TRUE(key.starts_with("jobs:site:") || key == "out:site" || key.starts_with("in:site") ||
                key == "site:stats" || key == "site:workers")
        << key;
  }
}

// A worker takes start URLs only as it has room for them beyond what the queue holds, at most
// REDIS_START_URLS_BATCH_SIZE at a time (CONCURRENT_REQUESTS when 0, as scrapy-redis), so it
// does not drain a long list it cannot crawl soon, and other workers get their share.
TEST(fleet, start_urls_are_taken_only_as_a_worker_has_room_for_them) {
  struct shape {
    int concurrency, batch;
    long long left;  // of 10 start URLs, while the first downloads are under way
  };
  for (auto [concurrency, batch, left] :
       {shape{1, 0, 9}, shape{1, 3, 9}, shape{4, 0, 6}, shape{4, 2, 7}}) {
    http_server site({.site_pages = 5, .page_delay_ms = 600});
    redis_server redis;
    temp_dir dir;
    std::vector<std::string> push{crawler_binary(), "push", "site", "-s",
                                  "REDIS_URL=" + redis.url()};
    for (int i = 0; i < 10; ++i)
      push.push_back(site.url("/site/" + std::to_string(i % 5) + "?" + std::to_string(i)));
    child_process pushed(push);
    ASSERT_EQ(pushed.wait(), 0) << pushed.stderr_text();
    auto running = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                                {"-s", "CONCURRENT_REQUESTS=" + std::to_string(concurrency), "-s",
                                 "REDIS_START_URLS_BATCH_SIZE=" + std::to_string(batch)});
    // The first feeds, and the first downloads under way (600 ms each): timed from the first,
    // since a worker under a sanitizer takes a while to start.
    crawler::fixtures::wait_until([&] { return site.in_flight() >= 1; }, "a download under way");
    std::this_thread::sleep_for(300ms);
    auto* context = redisConnect("127.0.0.1", redis.port());
    auto* reply = static_cast<redisReply*>(redisCommand(context, "LLEN site:start_urls"));
    EXPECT_EQ(reply->integer, left)
        << "CONCURRENT_REQUESTS=" << concurrency << " REDIS_START_URLS_BATCH_SIZE=" << batch;
    freeReplyObject(reply);
    redisFree(context);
    running->signal(SIGINT);
    running->wait();
  }
}

// A worker set for our JSON form on a queue scrapy-redis filled: it reads nothing as its own,
// destroys nothing, and stops at once with exit 2 naming the setting (before, it set every pickle
// aside as mangled JSON and called the crawl finished).
TEST(fleet, a_json_worker_on_a_scrapy_redis_queue_stops_with_exit_2_and_destroys_nothing) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  std::vector<std::string> pickled;
  for (int i = 1; i <= 3; ++i) {
    pickled.push_back(crawler::pickle::write(
        crawler::scrapy_dict_of(crawler::request{site.url("/stray/" + std::to_string(i))})));
    redis_run(redis.port(), {"ZADD", "site:requests", "0", pickled.back()});
  }
  auto stats_file = dir.path() / "stats.json";
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                             {"-L", "ERROR", "-s", "STATS_FILE=" + stats_file.string()});
  EXPECT_EQ(worker->wait(), 2) << worker->stderr_text();
  // A stop, said once, not an outage to wait out.
  auto stats = nlohmann::json::parse(std::ifstream(stats_file));
  EXPECT_EQ(stats.value("scheduler/other_form", 0), 1) << stats.dump();
  EXPECT_FALSE(stats.contains("scheduler/redis_outages")) << stats.dump();
  EXPECT_EQ(stats.value("finish_reason", ""), "queue_form_mismatch");
  EXPECT_NE(worker->stderr_text().find("site:requests holds a request pickled by scrapy-redis"),
            std::string::npos)
      << worker->stderr_text();
  EXPECT_NE(worker->stderr_text().find("set SCHEDULER_SERIALIZER = \"scrapy_redis.picklecompat\""),
            std::string::npos);
  auto queued = redis_run(redis.port(), {"ZRANGE", "site:requests", "0", "-1"});
  for (const auto& entry : pickled) {
    EXPECT_EQ(std::count(queued.begin(), queued.end(), entry), 1);  // byte for byte
  }
  EXPECT_EQ(site.hits("/stray/1") + site.hits("/stray/2") + site.hits("/stray/3"), 0u);
  EXPECT_TRUE(redis_list(redis.port(), "site:requests:bad").empty());
  EXPECT_TRUE(redis_list(redis.port(), "site:requests:leased", "HKEYS").empty());
}

// One stray entry in the other form is a bad record, not a reason to stop: set aside byte for
// byte with its reason, never run, and the crawl goes on to the end (and so does the next start).
TEST(fleet, one_stray_entry_in_the_other_form_is_set_aside_and_the_crawl_goes_on) {
  http_server site({.site_pages = 5});
  redis_server redis;
  temp_dir dir;
  auto pickled =
      crawler::pickle::write(crawler::scrapy_dict_of(crawler::request{site.url("/stray")}));
  redis_run(redis.port(), {"ZADD", "site:requests", "0", pickled});
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set", {"-L", "ERROR"});
  EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  EXPECT_EQ(site.hits("/stray"), 0u);
  EXPECT_EQ(site.hits("/site/4"), 1u) << "the crawl went on";
  auto bad = redis_list(redis.port(), "site:requests:bad");
  ASSERT_EQ(bad.size(), 1u);
  auto record = crawler::fixtures::set_aside_json(bad[0]);
  EXPECT_EQ(record["entry"], pickled);
  EXPECT_NE(record["reason"].get<std::string>().find("SCHEDULER_SERIALIZER"), std::string::npos)
      << record.dump();
}

// scrapy-redis's REDIS_START_URLS_AS_ZSET: start URLs in a sorted set, highest score first.
TEST(fleet, start_urls_in_a_sorted_set_are_crawled_highest_score_first) {
  http_server site({.site_pages = 1});
  redis_server redis;
  temp_dir dir;
  for (int i = 1; i <= 3; ++i) {
    redis_run(redis.port(), {"ZADD", "site:start_urls", std::to_string(i),
                             site.url("/s?wd=" + std::to_string(i))});
  }
  // `crawler push` adds to the sorted set too, with score 0: taken last.
  child_process push({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(), "-s",
                      "REDIS_START_URLS_AS_ZSET=true", site.url("/s?wd=0")});
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  auto worker = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                             {"-s", "REDIS_START_URLS_AS_ZSET=true", "-s", "CONCURRENT_REQUESTS=1",
                              "-s", "REDIS_START_URLS_BATCH_SIZE=1"});
  ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  std::vector<std::string> order;
  std::ifstream items(dir.path() / "items.jsonl");
  for (std::string line; std::getline(items, line);) {
    auto url = nlohmann::json::parse(line)["url"].get<std::string>();
    if (url.find("/s?wd=") != std::string::npos) order.push_back(url.substr(url.find("wd=") + 3));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"3", "2", "1", "0"}));
  EXPECT_TRUE(redis_run(redis.port(), {"ZRANGE", "site:start_urls", "0", "-1"}).empty());
}

TEST(fleet, push_reads_start_urls_from_stdin_and_refuses_a_bad_line_naming_it) {
  redis_server redis;
  temp_dir dir;
  auto urls = dir.path() / "urls.txt";
  {
    std::ofstream out(urls);
    for (int i = 0; i < 2500; ++i) out << "http://h.test/" << i << (i % 2 ? "\r\n" : "\n");
    out << "\n   \n";  // blank lines are skipped
  }
  child_process push({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(), "-"},
                     urls);
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  EXPECT_EQ(push.stdout_text(), "Pushed 2500 start URLs to site:start_urls\n");
  auto pushed = redis_list(redis.port(), "site:start_urls");
  ASSERT_EQ(pushed.size(), 2500u);
  EXPECT_EQ(pushed[1], "http://h.test/1");  // no \r left
  EXPECT_EQ(pushed[2499], "http://h.test/2499");

  auto typo = dir.path() / "typo.txt";
  std::ofstream(typo) << "http://h.test/a\nhttp://h.test/b\nh.test/c\n";
  child_process refused({crawler_binary(), "push", "site", "-s", "REDIS_URL=" + redis.url(), "-"},
                        typo);
  EXPECT_EQ(refused.wait(), 2);
  EXPECT_EQ(refused.stderr_text(),
            "crawler push: stdin:3: Missing scheme in request url: h.test/c\n");
  EXPECT_EQ(redis_list(redis.port(), "site:start_urls").size(), 2500u);  // nothing of it sent
}

// Each of the fleet's gauges counts its own keys: five queued, two leased, three dead letters and
// one bad record, as --metrics gives them and the screen shows them.
TEST(fleet, status_metrics_count_the_queue_the_leases_and_the_set_asides_apart) {
  redis_server redis;
  for (const char* entry : {"a", "b", "c", "d", "e"}) {
    redis_run(redis.port(), {"ZADD", "site:requests", "0", entry});
  }
  redis_run(redis.port(), {"HSET", "site:requests:leased", "1", "w|0|x", "2", "w|0|y"});
  redis_run(redis.port(), {"RPUSH", "site:requests:dead", "d1", "d2", "d3"});
  redis_run(redis.port(), {"RPUSH", "site:requests:bad", "b1"});
  child_process metrics(
      {crawler_binary(), "status", "site", "--metrics", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(metrics.wait(), 0) << metrics.stderr_text();
  auto exposition = metrics.stdout_text();
  for (const auto& [gauge, value] :
       std::vector<std::pair<std::string, int>>{{"queued_requests", 5},
                                                {"leased_requests", 2},
                                                {"dead_letters", 3},
                                                {"set_aside", 1},
                                                {"start_urls_waiting", 0},
                                                {"workers_alive", 0}}) {
    EXPECT_NE(exposition.find("crawler_fleet_" + gauge + "{spider=\"site\"} " +
                              std::to_string(value) + "\n"),
              std::string::npos)
        << gauge << "\n"
        << exposition;
  }
}

// The fleet's number of shards is read from beside its keys, so it is input: 1 to 1024 are read
// (1024 shards' figures summed), and 0, 1025 or text are refused naming the key.
TEST(fleet, status_reads_one_to_1024_shards_and_refuses_other_numbers_naming_the_key) {
  redis_server redis;
  auto status_with_shards = [&](const std::string& shards) {
    redis_run(redis.port(), {"SET", "site:requests:shards", shards});
    child_process status({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
    int exit = status.wait();
    return std::pair{exit, status.stdout_text() + status.stderr_text()};
  };
  for (const char* fine : {"1", "2", "1024"}) {
    auto [exit, said] = status_with_shards(fine);
    EXPECT_EQ(exit, 0) << fine << ": " << said;
  }
  for (const char* refused : {"0", "1025", "many"}) {
    auto [exit, said] = status_with_shards(refused);
    EXPECT_NE(exit, 0) << refused;
    EXPECT_NE(said.find("site:requests:shards at "), std::string::npos) << said;
    EXPECT_NE(said.find("not the fleet's number of shards (1 to 1024)"), std::string::npos) << said;
  }
  // What another program wrote there is quoted up to 40 bytes: 40 whole, 41 cut with its size.
  auto [exit_40, said_40] = status_with_shards(std::string(40, 'x'));
  EXPECT_NE(said_40.find(" holds " + std::string(40, 'x') + ", not the fleet's"), std::string::npos)
      << said_40;
  auto [exit_41, said_41] = status_with_shards(std::string(41, 'x'));
  EXPECT_NE(said_41.find(" holds " + std::string(40, 'x') + "... (41 bytes), not the fleet's"),
            std::string::npos)
      << said_41;
}

class status_with_persist : public testing::TestWithParam<bool> {};

TEST_P(status_with_persist, shows_live_workers_and_what_is_queued_and_in_flight) {
  http_server site({.site_pages = pages, .page_delay_ms = 200});
  redis_server redis;
  temp_dir dir;
  auto running =
      fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                   {"-s", "MAX_IDLE_TIME_BEFORE_CLOSE=0", "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.2",
                    "-s", std::string("SCHEDULER_PERSIST=") + (GetParam() ? "true" : "false")});
  // Pages settled and their links queued (a worker under TSan had settled one page at 1.5 s).
  crawler::fixtures::wait_until([&] { return site.total_hits() >= 6; }, "six pages fetched");
  std::this_thread::sleep_for(300ms);
  child_process status({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(status.wait(), 0) << status.stderr_text();
  auto screen = status.stdout_text();
  EXPECT_NE(screen.find("workers: 1 alive"), std::string::npos) << screen;
  std::smatch leased;
  ASSERT_TRUE(std::regex_search(screen, leased, std::regex(R"(in flight \(leased\): (\d+))")));
  // Its 4 downloads, and at most a batch of 4 taken ahead and 4 pages waiting for their settle
  // (which leave their download slots to the next requests: engine.h).
  EXPECT_GE(std::stoi(leased[1]), 4) << screen;
  EXPECT_LE(std::stoi(leased[1]), 12) << screen;
  EXPECT_EQ(screen.find("queued: 0 "), std::string::npos) << screen;  // links wait
  // The same, for Prometheus: the fleet's gauges and summed stats, which promtool accepts.
  child_process metrics(
      {crawler_binary(), "status", "site", "--metrics", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(metrics.wait(), 0) << metrics.stderr_text();
  auto exposition = metrics.stdout_text();
  EXPECT_NE(exposition.find("crawler_fleet_workers_alive{spider=\"site\"} 1\n"), std::string::npos)
      << exposition;
  ASSERT_TRUE(std::regex_search(
      exposition, leased, std::regex(R"(crawler_fleet_leased_requests\{spider="site"\} (\d+))")));
  // A moment after the screen above, the worker may be between a settle and its next take (seen
  // under ASan: 3): the gauge is exported with what is leased then.
  EXPECT_GE(std::stoi(leased[1]), 1) << exposition;
  EXPECT_LE(std::stoi(leased[1]), 12) << exposition;
  auto file = dir.path() / "metrics.txt";
  std::ofstream(file) << exposition;
  child_process promtool({"/usr/bin/promtool", "check", "metrics"}, file);
  EXPECT_EQ(promtool.wait(), 0) << promtool.stdout_text() << promtool.stderr_text();
  running->signal(SIGINT);
  EXPECT_EQ(running->wait(), 0) << running->stderr_text();
  child_process after({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(after.wait(), 0);
  EXPECT_NE(after.stdout_text().find("workers: 0 alive"), std::string::npos) << after.stdout_text();
  EXPECT_NE(after.stdout_text().find("in flight (leased): 0"), std::string::npos)
      << after.stdout_text();
  // A worker that stopped takes its line with it, whatever SCHEDULER_PERSIST keeps.
  EXPECT_EQ(redis_list(redis.port(), "site:workers", "HKEYS").size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(fleet, status_with_persist, testing::Bool(),
                         [](const auto& info) { return info.param ? "persist" : "no_persist"; });

// A worker's first page reaches the fleet's stats at once, not a heartbeat interval later:
// `crawler status` does not show 0 pages for the first 30 s of a crawl.
TEST(fleet, status_counts_a_workers_first_pages_before_its_next_heartbeat) {
  http_server site({.site_pages = 40, .page_delay_ms = 100});
  redis_server redis;
  temp_dir dir;
  auto running = fleet_worker(site, redis, dir.path() / "items.jsonl", "redis_set",
                              {"-s", "SCHEDULER_HEARTBEAT_INTERVAL=30", "-s",
                               "SCHEDULER_LEASE_TIME=120", "-s", "MAX_IDLE_TIME_BEFORE_CLOSE=0"});
  crawler::fixtures::wait_until([&] { return site.total_hits() >= 3; }, "the worker crawls");
  std::string screen;
  std::smatch pages;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    child_process status({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
    ASSERT_EQ(status.wait(), 0) << status.stderr_text();
    screen = status.stdout_text();
    if (std::regex_search(screen, pages, std::regex(R"(pages: ([1-9][0-9]*) )"))) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(std::regex_search(screen, pages, std::regex(R"(pages: ([1-9][0-9]*) )"))) << screen;
  running->signal(SIGINT);
  EXPECT_EQ(running->wait(), 0) << running->stderr_text();
}

// A worker's record that does not say its heartbeat interval (a worker of an earlier release)
// counts as SCHEDULER_HEARTBEAT_INTERVAL's default, 10 s: live while its heartbeat is under
// three intervals old, 30 s on Redis's clock, stopped past them. The records are written
// straight into Redis, their ages from its TIME, so no test waits 30 s.
TEST(fleet, status_holds_a_record_without_its_interval_live_for_three_default_intervals) {
  redis_server redis;
  auto status_with_heartbeat_age = [&](double age, bool metrics = false) {
    // Redis's clock read for each record: the test's own time (under a sanitizer, several
    // seconds over the six runs) must not age the records it writes later.
    auto now = std::stod(redis_run(redis.port(), {"TIME"}).at(0));
    redis_run(redis.port(), {"DEL", "site:workers"});
    redis_run(redis.port(), {"HSET", "site:workers", "host-1",
                             nlohmann::json{{"heartbeat", now - age}, {"pages", 3}}.dump()});
    std::vector<std::string> argv{crawler_binary(), "status", "site", "-s",
                                  "REDIS_URL=" + redis.url()};
    if (metrics) argv.push_back("--metrics");
    child_process status(argv);
    EXPECT_EQ(status.wait(), 0) << status.stderr_text();
    return status.stdout_text();
  };
  const std::string stopped = "1 workers stopped without closing";
  // A second of margin each side for the test's own time between TIME and `status`.
  EXPECT_EQ(status_with_heartbeat_age(28).find(stopped), std::string::npos);
  EXPECT_NE(status_with_heartbeat_age(31).find(stopped), std::string::npos);
  EXPECT_NE(status_with_heartbeat_age(34).find(stopped), std::string::npos);
  // --metrics counts the live one alone.
  const std::string alive = "crawler_fleet_workers_alive{spider=\"site\"} ";
  EXPECT_NE(status_with_heartbeat_age(28, true).find(alive + "1\n"), std::string::npos);
  EXPECT_NE(status_with_heartbeat_age(31, true).find(alive + "0\n"), std::string::npos);
}

// What an operator watching `crawler status` needs of each worker: a live one's pages/s, and for
// a dead one, how many leases it held and when they come back for the live ones to take.
TEST(fleet, status_says_a_live_workers_pace_and_when_a_dead_workers_leases_come_back) {
  redis_server redis;
  auto now = std::stod(redis_run(redis.port(), {"TIME"}).at(0));
  auto record = [&](double heartbeat_age, double up, int pages) {
    return nlohmann::json{{"heartbeat", now - heartbeat_age},
                          {"started", now - heartbeat_age - up},
                          {"interval", 10},
                          {"pages", pages}}
        .dump();
  };
  redis_run(redis.port(),
            {"HSET", "site:workers", "live-1", record(1, 100, 250), "dead-1", record(100, 50, 10),
             "dead-2", record(200, 50, 10), "dead-3", record(300, 50, 10)});
  auto lease = [&](const std::string& id, const std::string& worker, double due_in) {
    redis_run(redis.port(), {"HSET", "site:requests:leased", id, worker + "|0|{}"});
    redis_run(redis.port(), {"ZADD", "site:requests:deadlines",
                             std::to_string(std::llround((now + due_in) * 1000)), id});
  };
  lease("1", "dead-1", 40.2);
  lease("2", "dead-1", 20);
  lease("3", "dead-2", -5);
  lease("4", "live-1", 50);
  child_process status({crawler_binary(), "status", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(status.wait(), 0) << status.stderr_text();
  std::map<std::string, std::string> line_of;
  std::istringstream lines(status.stdout_text());
  for (std::string line; std::getline(lines, line);) {
    for (const char* worker : {"live-1", "dead-1", "dead-2", "dead-3"}) {
      if (line.find(std::string("  ") + worker + " ") == 0) line_of[worker] = line;
    }
  }
  // (The ages shown grow with the moments the command took to start: not pinned here.)
  EXPECT_TRUE(line_of["live-1"].ends_with(" s ago  2.5 pages/s")) << line_of["live-1"];
  // Its last lease's deadline, 40.2 s after the test read Redis's clock, less the moments since.
  std::smatch back;
  ASSERT_TRUE(std::regex_search(line_of["dead-1"], back,
                                std::regex("  holds 2 leases: back in the queue in (\\d+) s$")))
      << line_of["dead-1"];
  EXPECT_LE(std::stoi(back[1]), 41);
  EXPECT_GE(std::stoi(back[1]), 30);
  EXPECT_TRUE(
      line_of["dead-2"].ends_with("  holds 1 leases: expired, back in the queue at the next take"))
      << line_of["dead-2"];
  EXPECT_TRUE(line_of["dead-3"].ends_with(" s ago")) << line_of["dead-3"];  // no lease, no word
}

// The fleet's keys carry their layout's version (site:requests:layout): the first worker writes
// its own, a worker of another version refuses at start naming both and touches nothing, and a
// flush on start (no worker running) starts the fleet over on the flusher's layout. (Without
// SCHEDULER_PERSIST the version goes with the queue when the crawl is over.)
TEST(fleet, a_worker_of_another_layout_version_is_refused_naming_both) {
  http_server site({.site_pages = 10});
  redis_server redis;
  temp_dir dir;
  auto first = fleet_worker(site, redis, dir.path() / "a.jsonl", "redis_set",
                            {"-s", "SCHEDULER_PERSIST=true"});
  ASSERT_EQ(first->wait(), 0) << first->stderr_text();
  EXPECT_EQ(redis_run(redis.port(), {"GET", "site:requests:layout"}),
            std::vector<std::string>{"1"});

  redis_run(redis.port(), {"SET", "site:requests:layout", "2"});
  auto hits = site.total_hits();
  auto refused = fleet_worker(site, redis, dir.path() / "b.jsonl", "redis_set", {"-L", "ERROR"});
  EXPECT_EQ(refused->wait(), 2);
  EXPECT_NE(refused->stderr_text().find(
                "site:requests:layout says the fleet's keys are laid out as version 2, and "
                "this worker lays them out as version 1"),
            std::string::npos)
      << refused->stderr_text();
  EXPECT_EQ(site.total_hits(), hits);
  EXPECT_EQ(redis_run(redis.port(), {"GET", "site:requests:layout"}),
            std::vector<std::string>{"2"});

  auto flusher =
      fleet_worker(site, redis, dir.path() / "c.jsonl", "redis_set",
                   {"-s", "SCHEDULER_FLUSH_ON_START=true", "-s", "SCHEDULER_PERSIST=true"});
  EXPECT_EQ(flusher->wait(), 0) << flusher->stderr_text();
  EXPECT_EQ(redis_run(redis.port(), {"GET", "site:requests:layout"}),
            std::vector<std::string>{"1"});
}

}  // namespace
