// The `crawler` program as users run it: the seeds' scenario with every dupefilter backend,
// Ctrl-C and resume with JOBDIR, and one-line errors for crawls that cannot start.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "http_server.h"
#include "redis_server.h"
#include "reply_holding_relay.h"
#include "tree_paths.h"

namespace {

using crawler::fixtures::child_process;
using crawler::fixtures::count_of;
using crawler::fixtures::crawler_binary;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_server;
using crawler::fixtures::reply_holding_relay;
using crawler::fixtures::run_on_a_terminal;
using crawler::fixtures::temp_dir;

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::vector<std::string> read_item_urls(const std::filesystem::path& path) {
  std::vector<std::string> urls;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) urls.push_back(nlohmann::json::parse(line)["url"]);
  return urls;
}

class seed_scenario : public testing::TestWithParam<std::string> {};

TEST_P(seed_scenario, drops_exactly_the_ten_duplicates) {
  const auto& backend = GetParam();
  http_server server;
  temp_dir dir;
  auto stats_file = dir.path() / "stats.json";
  std::vector<std::string> argv = {crawler_binary(),
                                   "crawl",
                                   "dupes",
                                   "-a",
                                   "base_url=" + server.url("/s?wd="),
                                   "-s",
                                   "DUPEFILTER_CLASS=" + backend,
                                   "-s",
                                   "STATS_FILE=" + stats_file.string(),
                                   "-s",
                                   "BLOOMFILTER_BIT=20",
                                   "-L",
                                   "INFO"};
  std::unique_ptr<redis_server> redis;
  if (backend.starts_with("redis")) {
    redis = std::make_unique<redis_server>(
        redis_server::options{.load_redisbloom = backend == "redisbloom"});
    argv.insert(argv.end(), {"-s", "REDIS_URL=" + redis->url()});
  }
  child_process crawl(argv);
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  auto stats = read_json(stats_file);
  auto filtered =
      backend == "set" || backend == "redis_set" ? "dupefilter/filtered" : "bloomfilter/filtered";
  EXPECT_EQ(stats[filtered], 10) << stats.dump(1);
  EXPECT_EQ(stats["downloader/request_count"], 100);
  EXPECT_EQ(stats["downloader/response_status_count/200"], 100);
  EXPECT_EQ(stats["scheduler/enqueued"], 100);
  EXPECT_EQ(stats["scheduler/dequeued"], 100);
  EXPECT_EQ(stats["finish_reason"], "finished");
  EXPECT_EQ(server.total_hits(), 100u);
}

INSTANTIATE_TEST_SUITE_P(every_backend, seed_scenario,
                         testing::Values("set", "bloom", "redis_set", "redis_bitmap", "redisbloom"),
                         [](const auto& info) { return info.param; });

// A site crawl that takes long enough to interrupt: by default 400 pages, 20 ms each.
struct interrupted_site {
  explicit interrupted_site(http_server::options options = {.site_pages = 400, .page_delay_ms = 20})
      : pages(options.site_pages), server(std::move(options)) {}

  const std::size_t pages;
  http_server server;
  temp_dir dir;

  /// `crawler crawl site` with JOBDIR, a feed and STATS_FILE statsRUN.json, plus `settings`.
  std::vector<std::string> argv(int run, const std::vector<std::string>& settings) {
    std::vector<std::string> args{
        crawler_binary(),
        "crawl",
        "site",
        "-a",
        "start=" + server.url("/site/0"),
        "-s",
        "JOBDIR=" + (dir.path() / "job").string(),
        "-s",
        "STATS_FILE=" + (dir.path() / ("stats" + std::to_string(run) + ".json")).string(),
        "-o",
        (dir.path() / "items.jsonl").string(),
        "-L",
        "INFO"};
    for (const auto& setting : settings) args.insert(args.end(), {"-s", setting});
    return args;
  }

  /// The pages never fetched, and the fetches beyond one per page.
  struct fetch_count {
    std::vector<std::size_t> lost;
    std::size_t again = 0;
  };
  fetch_count fetches() const {
    fetch_count count;
    for (std::size_t page = 0; page < pages; ++page) {
      auto hits = server.hits("/site/" + std::to_string(page));
      if (hits == 0) count.lost.push_back(page);
      count.again += hits > 0 ? hits - 1 : 0;
    }
    return count;
  }

  void wait_for_hits(std::size_t count) {
    crawler::fixtures::wait_until([&] { return server.total_hits() >= count; },
                                  std::to_string(count) + " requests to the site");
  }

  /// The URLs of the items in the feed, each once (read_item_urls fails on a line that is not whole).
  std::set<std::string> scraped_urls() const {
    auto items = read_item_urls(dir.path() / "items.jsonl");
    return {items.begin(), items.end()};
  }

  std::set<std::string> expected_urls() {
    std::set<std::string> urls;
    for (std::size_t page = 0; page < pages; ++page) {
      urls.insert(server.url("/site/" + std::to_string(page)));
    }
    return urls;
  }
};

class resume : public testing::TestWithParam<std::string> {
 protected:
  std::vector<std::string> settings() const {
    std::vector<std::string> settings{"DUPEFILTER_CLASS=" + GetParam(), "CONCURRENT_REQUESTS=4"};
    if (redis) settings.push_back("REDIS_URL=" + redis->url());
    return settings;
  }

  std::unique_ptr<redis_server> redis =
      GetParam().starts_with("redis") ? std::make_unique<redis_server>() : nullptr;
};

TEST_P(resume, one_ctrl_c_then_a_second_run_equals_one_uninterrupted_crawl) {
  interrupted_site site;
  {
    child_process first(site.argv(1, settings()));
    site.wait_for_hits(60);
    first.signal(SIGINT);
    ASSERT_EQ(first.wait(), 0) << first.stderr_text();
    EXPECT_NE(first.stderr_text().find("Received SIGINT, shutting down gracefully"),
              std::string::npos);
    // What is left is said, with where it went; a crawl that ends with nothing left says nothing.
    EXPECT_TRUE(std::regex_search(
        first.stderr_text(),
        std::regex("Saved [1-9][0-9]* pending requests to " +
                   std::regex_replace((site.dir.path() / "job").string(),
                                      std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                   "/requests.queue.jsonl")))
        << first.stderr_text();
  }
  auto first_stats = read_json(site.dir.path() / "stats1.json");
  EXPECT_EQ(first_stats["finish_reason"], "shutdown");
  auto first_items = read_item_urls(site.dir.path() / "items.jsonl");
  ASSERT_LT(first_items.size(), site.pages);

  child_process second(site.argv(2, settings()));
  ASSERT_EQ(second.wait(), 0) << second.stderr_text();
  EXPECT_NE(second.stderr_text().find("Resuming crawl"), std::string::npos);
  EXPECT_EQ(second.stderr_text().find("pending requests to"), std::string::npos)
      << second.stderr_text();
  EXPECT_EQ(read_json(site.dir.path() / "stats2.json")["finish_reason"], "finished");

  auto items = read_item_urls(site.dir.path() / "items.jsonl");
  std::set<std::string> unique(items.begin(), items.end());
  EXPECT_EQ(unique, site.expected_urls());
  EXPECT_EQ(items.size(), site.pages) << "a page was crawled twice";
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
  EXPECT_EQ(site.fetches().again, 0u);
}

TEST_P(resume, a_second_ctrl_c_stops_at_once_and_loses_nothing) {
  // Pages of 100 ms: the graceful close waits that long for those in flight, time enough for the
  // second signal whatever the machine's load.
  interrupted_site site({.site_pages = 100, .page_delay_ms = 100});
  {
    child_process first(site.argv(1, settings()));
    site.wait_for_hits(20);
    first.signal(SIGINT);
    // The second once the first is handled (two pending signals would be merged into one).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (first.stderr_text().find("Received SIGINT, shutting down gracefully") ==
               std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    first.signal(SIGINT);
    ASSERT_EQ(first.wait(), 0) << first.stderr_text();
    EXPECT_NE(first.stderr_text().find("Received SIGINT twice, forcing unclean shutdown"),
              std::string::npos)
        << first.stderr_text();
  }
  child_process second(site.argv(2, settings()));
  ASSERT_EQ(second.wait(), 0) << second.stderr_text();
  auto items = read_item_urls(site.dir.path() / "items.jsonl");
  std::set<std::string> unique(items.begin(), items.end());
  EXPECT_EQ(unique, site.expected_urls());
}

// SIGTERM (a service manager's stop) is a graceful close, as Ctrl-C is.
TEST(crawler_command, sigterm_closes_the_crawl_gracefully) {
  interrupted_site site;
  child_process crawl(site.argv(1, {"CONCURRENT_REQUESTS=4"}));
  site.wait_for_hits(30);
  crawl.signal(SIGTERM);
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  EXPECT_NE(crawl.stderr_text().find("Received SIGTERM, shutting down gracefully"),
            std::string::npos)
      << crawl.stderr_text();
  EXPECT_EQ(read_json(site.dir.path() / "stats1.json")["finish_reason"], "shutdown");
  EXPECT_LT(site.server.total_hits(), site.pages);
}

// CLOSESPIDER_ITEMCOUNT closes the crawl once that many items are scraped; the pages already
// downloading finish, so a few more items may come (Scrapy's behaviour).
TEST(crawler_command, closespider_itemcount_closes_the_crawl_at_that_many_items) {
  interrupted_site site;
  child_process crawl(site.argv(1, {"CONCURRENT_REQUESTS=2", "CLOSESPIDER_ITEMCOUNT=25"}));
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  auto stats = read_json(site.dir.path() / "stats1.json");
  EXPECT_EQ(stats["finish_reason"], "closespider_itemcount");
  EXPECT_GE(stats["item_scraped_count"].get<int>(), 25);
  EXPECT_LE(stats["item_scraped_count"].get<int>(), 25 + 2 * 2);
}

// The JSON objects the periodic_log logger wrote: "[periodic_log] INFO: {" up to a line "}".
std::vector<nlohmann::json> periodic_lines(const std::string& log) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(log);
  std::string line, block;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.ends_with("[periodic_log] INFO: {")) {
      inside = true;
      block = "{";
    } else if (inside) {
      block += line;
      if (line == "}") {
        lines.push_back(nlohmann::json::parse(block));
        inside = false;
      }
    }
  }
  return lines;
}

// Scrapy's PeriodicLog: every LOGSTATS_INTERVAL the chosen stats, the deltas and the timing as one
// JSON object, and a last one as the crawl closes.
TEST(crawler_command, periodic_log_writes_the_included_stats_deltas_and_timing) {
  interrupted_site site;
  child_process crawl(
      site.argv(1, {"CONCURRENT_REQUESTS=4", "LOGSTATS_INTERVAL=0.2",
                    R"(PERIODIC_LOG_STATS={"include": ["scheduler/"], "exclude": ["/memory"]})",
                    R"(PERIODIC_LOG_DELTA={"include": ["item_scraped_count"]})",
                    "PERIODIC_LOG_TIMING_ENABLED=true"}));
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  auto lines = periodic_lines(crawl.stderr_text());
  ASSERT_GE(lines.size(), 3u) << crawl.stderr_text();
  std::int64_t items = 0;
  double elapsed = -1;
  for (const auto& line : lines) {
    for (const auto& [name, value] : line["stats"].items()) {
      EXPECT_TRUE(name.starts_with("scheduler/") && !name.ends_with("/memory")) << name;
    }
    EXPECT_LE(line["delta"].size(), 1u) << line.dump();
    items += line["delta"].value("item_scraped_count", std::int64_t{0});
    EXPECT_GT(line["time"]["elapsed"].get<double>(), elapsed);
    elapsed = line["time"]["elapsed"];
    EXPECT_EQ(line["time"]["log_interval"], 0.2);
    EXPECT_TRUE(line["time"]["start_time"].is_string()) << line.dump();
  }
  // The deltas add up to the crawl's items; the last line, at close, has the queue drained.
  auto stats = read_json(site.dir.path() / "stats1.json");
  EXPECT_EQ(items, stats["item_scraped_count"].get<std::int64_t>());
  EXPECT_EQ(lines.back()["stats"]["scheduler/enqueued"], stats["scheduler/enqueued"]);
  EXPECT_EQ(lines.back()["stats"]["scheduler/dequeued"], stats["scheduler/dequeued"]);
}

TEST(crawler_command, periodic_log_names_a_malformed_include) {
  interrupted_site site;
  child_process crawl(site.argv(1, {R"(PERIODIC_LOG_STATS={"include": "scheduler/"})"}));
  EXPECT_NE(crawl.wait(), 0);
  EXPECT_NE(crawl.stderr_text().find(
                R"(PERIODIC_LOG_STATS.include: expected a list of strings, got "scheduler/")"),
            std::string::npos)
      << crawl.stderr_text();
  EXPECT_EQ(site.server.total_hits(), 0u);
}

TEST(crawler_command, requests_waiting_for_robots_txt_survive_a_forced_stop) {
  interrupted_site site(
      {.site_pages = 30, .robots_txt = "User-agent: *\nAllow: /\n", .robots_delay_ms = 1000});
  {
    child_process first(site.argv(1, {"ROBOTSTXT_OBEY=true"}));
    crawler::fixtures::wait_until([&] { return site.server.hits("/robots.txt") > 0; },
                                  "the request for /robots.txt");
    first.signal(SIGINT);
    // Apart, or the two signals arrive as one; well within robots.txt's second.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    first.signal(SIGINT);
    ASSERT_EQ(first.wait(), 0) << first.stderr_text();
    EXPECT_EQ(site.server.hits("/site/0"), 0u) << first.stderr_text();
  }
  child_process second(site.argv(2, {"ROBOTSTXT_OBEY=true"}));
  ASSERT_EQ(second.wait(), 0) << second.stderr_text();
  EXPECT_NE(second.stderr_text().find("Resuming crawl (1 requests scheduled)"), std::string::npos)
      << second.stderr_text();
  auto items = read_item_urls(site.dir.path() / "items.jsonl");
  EXPECT_EQ(items.size(), 30u);
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()), site.expected_urls());
  EXPECT_EQ(site.server.hits("/site/0"), 1u);
  EXPECT_EQ(site.server.hits("/robots.txt"), 2u);  // once per run; the aborted one is not queued
  EXPECT_EQ(read_json(site.dir.path() / "stats2.json")["robotstxt/request_count"], 1);
}

// kill -9 at ten random instants: each run resumes from what the last one journaled, and the
// crawl ends with every page crawled and every item whole in the feed; a page is fetched again
// only when it was in flight at a kill.
TEST_P(resume, kill_9_at_ten_random_instants_loses_nothing) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 10});
  std::mt19937 random(std::random_device{}());
  int kills = 0;
  for (int run = 1; kills < 10 && site.server.total_hits() < site.pages; ++run) {
    auto target = site.server.total_hits() + 5 + random() % 25;
    child_process crawl(site.argv(run, settings()));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (site.server.total_hits() < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    crawl.signal(SIGKILL);
    crawl.wait();
    ++kills;
  }
  child_process last(site.argv(99, settings()));
  ASSERT_EQ(last.wait(), 0) << last.stderr_text();
  auto items = read_item_urls(site.dir.path() / "items.jsonl");  // every line whole
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()), site.expected_urls());
  auto fetched = site.fetches();
  EXPECT_EQ(fetched.lost, std::vector<std::size_t>{}) << "lost after " << kills << " kills";
  auto fetched_again = fetched.again;
  // At a kill, at most CONCURRENT_REQUESTS downloads (pages being parsed hold their slots) and as
  // many pages waiting for their store were in flight.
  EXPECT_LE(fetched_again, std::size_t(kills) * 2 * 4) << kills << " kills";
  std::cout << kills << " kills: " << fetched_again << " pages fetched again\n";
}

// SCHEDULER_MEMORY_QUEUE_LIMIT: the requests past the limit wait in files and come back in the
// order the crawl would have taken without it (one request at a time, so the feed's order is the
// crawl's); with JOBDIR, kill -9 at any time loses nothing.
TEST(crawler_command, a_queue_past_its_memory_limit_crawls_in_the_same_order) {
  http_server server({.site_pages = 120});
  temp_dir dir;
  auto crawl = [&](const std::string& name, std::vector<std::string> settings) {
    auto feed = dir.path() / (name + ".jsonl");
    std::vector<std::string> argv{crawler_binary(), "crawl", "site", "-a",
                                  "start=" + server.url("/site/0"), "-O", feed.string(), "-L",
                                  "INFO", "-s", "CONCURRENT_REQUESTS=1"};
    for (const auto& setting : settings) argv.insert(argv.end(), {"-s", setting});
    child_process run(argv);
    EXPECT_EQ(run.wait(), 0) << run.stderr_text();
    return std::make_pair(read_item_urls(feed), run.stderr_text());
  };
  for (const char* order : {"lifo", "fifo"}) {
    auto queue = std::string("SCHEDULER_MEMORY_QUEUE=") + order;
    auto [unlimited, plain_log] = crawl(std::string(order) + "-unlimited", {queue});
    auto [limited, log] = crawl(std::string(order) + "-limited",
                                {queue, "SCHEDULER_MEMORY_QUEUE_LIMIT=4"});
    ASSERT_EQ(unlimited.size(), 120u) << order;
    EXPECT_EQ(limited, unlimited) << order;
    EXPECT_NE(log.find("The queue passed SCHEDULER_MEMORY_QUEUE_LIMIT (4 requests)"),
              std::string::npos)
        << log;
    EXPECT_EQ(plain_log.find("SCHEDULER_MEMORY_QUEUE_LIMIT"), std::string::npos);
  }
}

TEST(crawler_command, a_queue_past_its_memory_limit_resumes_after_kill_9_losing_nothing) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 10});
  std::vector<std::string> settings{"CONCURRENT_REQUESTS=4", "SCHEDULER_MEMORY_QUEUE_LIMIT=8"};
  for (int kill = 1; kill <= 4; ++kill) {
    child_process crawl(site.argv(kill, settings));
    site.wait_for_hits(std::size_t(kill) * 40);
    crawl.signal(SIGKILL);
    crawl.wait();
  }
  child_process last(site.argv(99, settings));
  ASSERT_EQ(last.wait(), 0) << last.stderr_text();
  EXPECT_EQ(site.scraped_urls(), site.expected_urls());
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
  EXPECT_FALSE(std::filesystem::exists(site.dir.path() / "job" / "queue-segments"))
      << "the segments go with the crawl";
}

// The queue's segment folder replaced by a file mid-crawl: segments can be neither written nor
// read back, so the crawl stops with queue_segments_failed and exit 1, keeps the journal rather
// than a snapshot without the lost segments, and the resume crawls every page.
TEST(crawler_command, a_queue_whose_segments_fail_stops_the_crawl_and_the_resume_loses_nothing) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 10});
  std::vector<std::string> settings{"CONCURRENT_REQUESTS=4", "SCHEDULER_MEMORY_QUEUE_LIMIT=8"};
  auto segments = site.dir.path() / "job" / "queue-segments";
  {
    child_process crawl(site.argv(1, settings));
    site.wait_for_hits(30);
    ASSERT_TRUE(std::filesystem::is_directory(segments));
    // Moved aside in one step, then removed: removing it in place raced the crawl writing its
    // next segment into it ("Directory not empty", under TSan).
    auto aside = site.dir.path() / "job" / "queue-segments-aside";
    std::filesystem::rename(segments, aside);
    std::ofstream(segments) << "a file where the folder was";
    std::filesystem::remove_all(aside);
    EXPECT_EQ(crawl.wait(), 1) << crawl.stderr_text();
    EXPECT_NE(crawl.stderr_text().find("Spider closed (queue_segments_failed)"), std::string::npos)
        << crawl.stderr_text();
  }
  std::filesystem::remove(segments);
  child_process resume(site.argv(2, settings));
  ASSERT_EQ(resume.wait(), 0) << resume.stderr_text();
  EXPECT_EQ(site.scraped_urls(), site.expected_urls());
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
}

// A Redis dupefilter records a page's links the moment it answers, before the journal can hold
// them. Here Redis carries out the checks of the pages being settled while its answers never
// arrive (a relay drops them), and the crawler is killed then: the resume still crawls every page.
class redis_resume : public resume {};

TEST_P(redis_resume, a_kill_after_redis_recorded_links_the_journal_lacks_loses_none) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 10});
  std::size_t held_at = 0, killed_at = 0;
  {
    reply_holding_relay relay(redis->port());
    auto through_relay = settings();
    through_relay.back() = "REDIS_URL=redis://127.0.0.1:" + std::to_string(relay.port());
    child_process crawl(site.argv(1, through_relay));
    site.wait_for_hits(30);
    relay.hold_replies();
    held_at = site.server.total_hits();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (relay.bytes_sent_while_holding() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // Redis carries them out
    crawl.signal(SIGKILL);
    crawl.wait();
    killed_at = site.server.total_hits();
    ASSERT_GT(relay.bytes_sent_while_holding(), 0u) << "no check reached Redis while held";
  }
  child_process second(site.argv(2, settings()));
  ASSERT_EQ(second.wait(), 0) << second.stderr_text();
  EXPECT_EQ(site.scraped_urls(), site.expected_urls());
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
  auto fetched_again = site.fetches().again;
  // Again: the pages fetched while Redis's answers were held, and those in flight when the hold
  // began (CONCURRENT_REQUESTS downloads and as many pages waiting for their store).
  EXPECT_LE(fetched_again, killed_at - held_at + 2 * 4);
  std::cout << fetched_again << " pages fetched again, " << killed_at - held_at
            << " fetched while held\n";
}

INSTANTIATE_TEST_SUITE_P(every_dupefilter, resume,
                         testing::Values("set", "bloom", "redis_set", "redis_bitmap"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(redis_dupefilters, redis_resume,
                         testing::Values("redis_set", "redis_bitmap"),
                         [](const auto& info) { return info.param; });

// Storing a page's outcome may wait on Redis (here its dupefilter, whose answers are held from
// the first fetch on): up to CONCURRENT_REQUESTS pages wait for theirs without a download slot,
// as Scrapy's downloader frees a slot once the response is in, so two more pages are fetched
// meanwhile, and no more.
TEST(crawler_command, pages_waiting_for_their_store_free_up_to_concurrent_requests_slots) {
  redis_server redis;
  reply_holding_relay relay(redis.port());
  http_server server({.site_pages = 100, .page_delay_ms = 1500});
  std::string starts;
  for (int page = 0; page < 10; ++page) {
    starts += (page ? " " : "") + server.url("/site/" + std::to_string(page));
  }
  child_process crawl({crawler_binary(), "crawl", "site", "-a", "start=" + starts, "-s",
                       "CONCURRENT_REQUESTS=2", "-s", "DUPEFILTER_CLASS=redis_set", "-s",
                       "REDIS_URL=redis://127.0.0.1:" + std::to_string(relay.port()), "--nolog"});
  // The start requests have passed the dupefilter once the first two are being fetched.
  crawler::fixtures::wait_until([&] { return server.total_hits() >= 2; }, "two pages asked for");
  relay.hold_replies();
  // Those two end after 1.5 s and wait for their store; the next two are fetched at once and
  // end after 3 s; then every slot is held. 5 s leaves a slow build time to show a fifth.
  std::this_thread::sleep_for(std::chrono::milliseconds(5000));
  EXPECT_EQ(server.total_hits(), 4u);
  crawl.signal(SIGKILL);
  crawl.wait();
}

TEST(crawler_command, an_unknown_spider_is_one_line_naming_the_known_ones) {
  child_process crawl({crawler_binary(), "crawl", "nosuch"});
  EXPECT_EQ(crawl.wait(), 2);
  EXPECT_EQ(crawl.stderr_text(),
            "crawler crawl: unknown spider \"nosuch\"; known spiders: dupes, quotes, site\n");
}

// A spider that cannot make its start requests (site without its -a start=URL) cannot start:
// one line saying why and exit 2, never a crawl of nothing that "finished" with exit 0.
TEST(crawler_command, a_spider_missing_its_start_argument_cannot_start) {
  child_process crawl({crawler_binary(), "crawl", "site", "-L", "WARNING"});
  EXPECT_EQ(crawl.wait(), 2);
  EXPECT_EQ(crawl.stderr_text(),
            "crawler crawl: error while obtaining start requests: spider site needs -a "
            "start=URL\n");
}

// A crawl file given to `crawl`, where a spider's name goes, is pointed at `crawler run`.
// Yesterday's feed survives today's typo: -O replaces a file only once the crawl is under way (the
// new feed is written beside it and takes its name with the first item). A crawl refused at start
// leaves the file as it was and nothing beside it; one that runs replaces it.
TEST(crawler_command, a_crawl_refused_at_start_leaves_the_feed_it_would_overwrite_as_it_was) {
  http_server site({.site_pages = 3});
  temp_dir dir;
  auto feed = dir.path() / "items.jsonl";
  std::ofstream(feed) << "{\"url\": \"yesterday\"}\n";
  auto feed_text = [&] {
    std::ifstream in(feed);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto files_in_dir = [&] {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      ++count;
    }
    return count;
  };
  for (std::vector<std::string> refused :
       {std::vector<std::string>{"-s", "ITEM_PIPELINES={\"myproject.Missing\": 300}"},
        std::vector<std::string>{}}) {  // the second: no -a start
    std::vector<std::string> argv{crawler_binary(), "crawl", "site", "-O", feed.string()};
    if (!refused.empty()) argv.insert(argv.end(), {"-a", "start=" + site.url("/site/0")});
    argv.insert(argv.end(), refused.begin(), refused.end());
    child_process crawl(argv);
    EXPECT_EQ(crawl.wait(), 2) << crawl.stderr_text();
    EXPECT_EQ(feed_text(), "{\"url\": \"yesterday\"}\n");
    EXPECT_EQ(files_in_dir(), 1u) << "a file left beside the feed";
  }
  // The file that replaces it keeps its permissions.
  std::filesystem::permissions(feed, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::owner_write |
                                         std::filesystem::perms::group_read);
  child_process crawl({crawler_binary(), "crawl", "site", "-a", "start=" + site.url("/site/0"),
                       "-O", feed.string()});
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  EXPECT_EQ(std::filesystem::status(feed).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read);
  EXPECT_EQ(feed_text().find("yesterday"), std::string::npos);
  EXPECT_EQ(count_of(feed_text(), "\n"), 3u);
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST(crawler_command, a_crawl_file_given_to_crawl_is_pointed_at_run) {
  child_process crawl({crawler_binary(), "crawl", "my_site.json"});
  EXPECT_EQ(crawl.wait(), 2);
  EXPECT_EQ(crawl.stderr_text(),
            "crawler crawl: unknown spider \"my_site.json\"; known spiders: dupes, quotes, site "
            "(a crawl file runs with `crawler run my_site.json`)\n");
}

// As `scrapy` alone: `crawler` with nothing else, or `crawler help`, lists the commands.
TEST(crawler_command, crawler_alone_or_help_lists_the_commands_and_succeeds) {
  for (std::vector<std::string> words : {std::vector<std::string>{}, {"help"}}) {
    words.insert(words.begin(), crawler_binary());
    child_process crawler(words);
    EXPECT_EQ(crawler.wait(), 0);
    for (const char* command : {"crawl", "run", "shell", "genspider", "status", "push"}) {
      EXPECT_NE(crawler.stdout_text().find("\n  " + std::string(command) + " "), std::string::npos)
          << command << " missing from:\n"
          << crawler.stdout_text();
    }
  }
}

TEST(crawler_command, a_misspelt_setting_stops_the_crawl_with_a_suggestion) {
  child_process crawl({crawler_binary(), "crawl", "dupes", "-s", "CONCURENT_REQUESTS=4"});
  EXPECT_EQ(crawl.wait(), 2);
  auto error = crawl.stderr_text();
  EXPECT_NE(error.find("CONCURENT_REQUESTS"), std::string::npos) << error;
  EXPECT_NE(error.find("CONCURRENT_REQUESTS"), std::string::npos) << error;
}

TEST(crawler_command, an_unreachable_redis_stops_the_crawl_naming_the_address) {
  child_process crawl({crawler_binary(), "crawl", "dupes", "-s", "DUPEFILTER_CLASS=redis_set", "-s",
                       "REDIS_URL=redis://127.0.0.1:1", "--nolog"});
  EXPECT_EQ(crawl.wait(), 2);
  auto error = crawl.stderr_text();
  EXPECT_TRUE(error.starts_with("crawler crawl: ")) << error;
  EXPECT_NE(error.find("127.0.0.1:1"), std::string::npos) << error;
}

void redis_command(const redis_server& redis, const char* command) {
  auto* context = redisConnect("127.0.0.1", redis.port());
  ASSERT_TRUE(context && !context->err);
  freeReplyObject(redisCommand(context, command));
  redisFree(context);
}

// How a Redis comes to refuse writes, how it heals, and the word its refusals carry.
struct redis_sickness {
  std::string name;
  std::vector<const char*> fall_ill, heal;
  std::string symptom;
  std::string dupefilter;
};

class sick_redis : public testing::TestWithParam<redis_sickness> {};

// A Redis that refuses writes mid-crawl (a read-only replica; full, under noeviction): outcomes
// wait and are tried again with a backoff, one log line says so, and the crawl completes when
// Redis heals, every page fetched once.
TEST_P(sick_redis, refusing_writes_mid_crawl_is_waited_for_and_the_crawl_completes) {
  const auto& sickness = GetParam();
  interrupted_site site({.site_pages = 200, .page_delay_ms = 20});
  redis_server redis;
  child_process crawl(site.argv(1, {"DUPEFILTER_CLASS=" + sickness.dupefilter,
                                    "REDIS_URL=" + redis.url(), "CONCURRENT_REQUESTS=4"}));
  site.wait_for_hits(30);
  for (auto command : sickness.fall_ill) redis_command(redis, command);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  for (auto command : sickness.heal) redis_command(redis, command);
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  EXPECT_EQ(read_json(site.dir.path() / "stats1.json")["finish_reason"], "finished");
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
  EXPECT_EQ(site.fetches().again, 0u);
  auto log = crawl.stderr_text();
  EXPECT_EQ(count_of(log, "wait to be stored; next try in"), 1u) << log;
  EXPECT_NE(log.find(sickness.symptom), std::string::npos) << log;
  EXPECT_EQ(count_of(log, "Outcomes are stored again after"), 1u) << log;
}

INSTANTIATE_TEST_SUITE_P(
    crawler_command, sick_redis,
    testing::Values(redis_sickness{"read_only",
                                   {"REPLICAOF 127.0.0.1 1"},  // a master that is not there
                                   {"REPLICAOF NO ONE"},
                                   "READONLY",
                                   "redis_set"},
                    redis_sickness{
                        "full",
                        {"CONFIG SET maxmemory-policy noeviction", "CONFIG SET maxmemory 1"},
                        {"CONFIG SET maxmemory 0"},
                        "OOM",
                        "redis_bitmap"}),
    [](const auto& info) { return info.param.name; });

// One that does not heal within REDIS_FAILURE_TIMEOUT closes the crawl (exit 1, finish_reason
// redis_unavailable) with what waited queued in JOBDIR, so a resume once Redis is back crawls
// every page, each once.
TEST(crawler_command, a_redis_that_stays_read_only_closes_the_crawl_and_a_resume_loses_nothing) {
  interrupted_site site({.site_pages = 200, .page_delay_ms = 20});
  redis_server redis;
  std::vector<std::string> settings{"DUPEFILTER_CLASS=redis_set", "REDIS_URL=" + redis.url(),
                                    "CONCURRENT_REQUESTS=4", "SCHEDULER_PERSIST=true",
                                    "REDIS_FAILURE_TIMEOUT=1.5"};
  {
    child_process crawl(site.argv(1, settings));
    site.wait_for_hits(30);
    redis_command(redis, "REPLICAOF 127.0.0.1 1");
    EXPECT_EQ(crawl.wait(), 1) << crawl.stderr_text();
    EXPECT_NE(crawl.stderr_text().find("(REDIS_FAILURE_TIMEOUT): closing"), std::string::npos)
        << crawl.stderr_text();
  }
  EXPECT_EQ(read_json(site.dir.path() / "stats1.json")["finish_reason"], "redis_unavailable");
  EXPECT_LT(site.server.total_hits(), site.pages);
  redis_command(redis, "REPLICAOF NO ONE");
  child_process resumed(site.argv(2, settings));
  ASSERT_EQ(resumed.wait(), 0) << resumed.stderr_text();
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
  EXPECT_EQ(site.fetches().again, 0u);
}

// A feed that cannot be written (here /dev/full, which answers every write as a full disk does)
// stops the crawl: exit 1, finish_reason feed_write_failed, the other feed kept whole.
TEST(crawler_command, a_feed_on_a_full_disk_stops_the_crawl_with_a_reason) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 5});
  auto kept = site.dir.path() / "kept.jsonl";
  child_process crawl({crawler_binary(), "crawl", "site", "-a",
                       "start=" + site.server.url("/site/0"), "-s",
                       R"(FEEDS={"/dev/full": {"format": "jsonlines"}})", "-o", kept.string(), "-s",
                       "STATS_FILE=" + (site.dir.path() / "stats.json").string(), "-L", "ERROR"});
  EXPECT_EQ(crawl.wait(), 1) << crawl.stderr_text();
  EXPECT_NE(crawl.stderr_text().find("Cannot write the jsonlines feed /dev/full: No space left"),
            std::string::npos)
      << crawl.stderr_text();
  EXPECT_EQ(read_json(site.dir.path() / "stats.json")["finish_reason"], "feed_write_failed");
  EXPECT_LT(site.server.total_hits(), site.pages);  // it stopped, not crawled on
  EXPECT_GT(read_item_urls(kept).size(), 0u);       // every line whole
}

// `-o FILE` appends to the file its name names: a link planted there (by anyone who can write
// the folder) is refused at start, naming it, and its target is left alone; a link to a device
// (/dev/null here, /dev/stdout as people write it) is a destination and is written through.
TEST(crawler_command, an_appended_feed_is_never_written_through_a_link_to_a_file) {
  temp_dir dir;
  auto victim = dir.path() / "victim";
  std::ofstream(victim) << "the victim's own bytes\ncut";
  auto planted = dir.path() / "items.jsonl";
  std::filesystem::create_symlink(victim, planted);
  child_process refused({crawler_binary(), "crawl", "quotes", "-o", planted.string(), "--nolog"});
  EXPECT_NE(refused.wait(), 0);
  EXPECT_NE(refused.stderr_text().find(planted.string() + ": is a symbolic link"),
            std::string::npos)
      << refused.stderr_text();
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "the victim's own bytes\ncut");

  auto to_device = dir.path() / "discarded.jsonl";
  std::filesystem::create_symlink("/dev/null", to_device);
  child_process written({crawler_binary(), "crawl", "quotes", "-o", to_device.string(), "--nolog"});
  EXPECT_EQ(written.wait(), 0) << written.stderr_text();
}

// LOG_FILE and STATS_FILE name files in folders others may write, as a feed does: a link
// planted at either name is refused and its target left alone (the log at start, naming the
// setting; the stats at the end, logged); a link to a device is written through.
TEST(crawler_command, log_file_and_stats_file_are_never_written_through_a_link_to_a_file) {
  temp_dir dir;
  auto victim = dir.path() / "victim";
  auto victim_untouched = [&] {
    std::ifstream in(victim);
    return std::string(std::istreambuf_iterator<char>(in), {}) == "the victim's own bytes\n";
  };
  std::ofstream(victim) << "the victim's own bytes\n";
  auto log = dir.path() / "crawl.log";
  std::filesystem::create_symlink(victim, log);
  for (std::string append : {"True", "False"}) {
    child_process refused({crawler_binary(), "crawl", "quotes", "-s", "LOG_FILE=" + log.string(),
                           "-s", "LOG_FILE_APPEND=" + append});
    EXPECT_NE(refused.wait(), 0);
    EXPECT_NE(refused.stderr_text().find("LOG_FILE: cannot open " + log.string() +
                                         ": a symbolic link to a file"),
              std::string::npos)
        << refused.stderr_text();
    EXPECT_TRUE(victim_untouched()) << "LOG_FILE_APPEND=" << append;
  }

  auto stats = dir.path() / "stats.json";
  std::filesystem::create_symlink(victim, stats);
  child_process crawl({crawler_binary(), "crawl", "quotes", "-s", "STATS_FILE=" + stats.string(),
                       "-L", "ERROR"});
  EXPECT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  EXPECT_NE(crawl.stderr_text().find("STATS_FILE: cannot write " + stats.string() +
                                     ": a symbolic link to a file"),
            std::string::npos)
      << crawl.stderr_text();
  EXPECT_TRUE(victim_untouched());

  auto to_device = dir.path() / "to-null";
  std::filesystem::create_symlink("/dev/null", to_device);
  child_process written({crawler_binary(), "crawl", "quotes", "-s", "LOG_FILE=" +
                         to_device.string(), "-s", "STATS_FILE=" + to_device.string()});
  EXPECT_EQ(written.wait(), 0) << written.stderr_text();
  EXPECT_EQ(written.stderr_text(), "");  // the log went to the device
}

// `-o -` on a standard output that refuses what is written (/dev/full): the items are held in the
// stream's buffer until the close, and the close's failure is the crawl's, not "finished".
TEST(crawler_command, a_feed_to_a_standard_output_that_refuses_it_fails_the_crawl_at_close) {
  temp_dir dir;
  auto stats = dir.path() / "stats.json";
  child_process crawl({"/bin/bash", "-c",
                       crawler_binary() + " crawl quotes -o - --nolog -s STATS_FILE=" +
                           stats.string() + " > /dev/full"});
  EXPECT_EQ(crawl.wait(), 1) << crawl.stderr_text();
  EXPECT_EQ(read_json(stats)["finish_reason"], "feed_write_failed");
  EXPECT_EQ(read_json(stats)["item_scraped_count"], 30);
}

// The crawl `argv` run twice in a private mount namespace (unshare: as root, or in a user
// namespace), with `dir` a tmpfs: first while it holds `size`, a disk that really fills, then once
// it has grown to 64 MB. STATS_FILE is stats1.json, then stats2.json, beside `dir`; `after` runs
// after each (shell, "$1" is `dir`), e.g. to copy a file out where the test can read it.
std::vector<std::string> twice_on_a_filling_disk(const std::filesystem::path& dir,
                                                 const std::string& size,
                                                 const std::vector<std::string>& argv,
                                                 const std::string& after = ":") {
  auto script =
      "dir=$1; shift\n"
      "mount -t tmpfs -o size=" +
      size +
      " crawler-test \"$dir\" || exit 90\n"
      "\"$@\" -s \"STATS_FILE=$dir/../stats1.json\"; echo \"first exit $?\"\n"
      "set -- \"$dir\" \"$@\"; " +
      after +
      "; shift\n"
      "mount -o remount,size=64m \"$dir\" || exit 91\n"
      "\"$@\" -s \"STATS_FILE=$dir/../stats2.json\"; echo \"second exit $?\"\n"
      "set -- \"$dir\" \"$@\"; " +
      after + "\n";
  std::vector<std::string> args{
      "/usr/bin/unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
      dir.string()};
  args.insert(args.end(), argv.begin(), argv.end());
  return args;
}

// The first run stopped on the full disk, the second ran to the end.
void expect_a_stop_then_a_finish(const child_process& runs) {
  auto out = runs.stdout_text();
  EXPECT_NE(out.find("first exit 1"), std::string::npos) << out << runs.stderr_text();
  EXPECT_NE(out.find("second exit 0"), std::string::npos) << out << runs.stderr_text();
  EXPECT_NE(runs.stderr_text().find("No space left on device"), std::string::npos)
      << runs.stderr_text();
}

// JOBDIR on a disk that fills mid-crawl: the crawl stops (exit 1, jobdir_write_failed, a line
// naming the file), and once there is room a resume crawls every page, none lost, and its feed
// holds each item once: the items of the pages the full disk kept from being recorded as done
// went back out of it, since the resume crawls those pages again.
TEST(crawler_command,
     a_jobdir_disk_filling_mid_crawl_stops_the_crawl_and_the_resume_loses_nothing) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 5});
  auto job = site.dir.path() / "job";
  std::filesystem::create_directories(job);
  child_process runs(twice_on_a_filling_disk(job, "16k", site.argv(1, {"CONCURRENT_REQUESTS=4"})));
  ASSERT_EQ(runs.wait(), 0) << runs.stderr_text();
  expect_a_stop_then_a_finish(runs);
  EXPECT_EQ(read_json(site.dir.path() / "stats1.json")["finish_reason"], "jobdir_write_failed");
  EXPECT_EQ(read_json(site.dir.path() / "stats2.json")["finish_reason"], "finished");
  auto items = read_item_urls(site.dir.path() / "items.jsonl");
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()), site.expected_urls());
  EXPECT_EQ(items.size(), site.pages) << "an item was written twice";
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
}

// A journal that can no longer grow while the dupefilter's file still can (a file size limit,
// which the journal's longer lines reach first, as a disk quota would): the crawl stops, and the
// dupefilter's file (requests.seen, appended as it goes; requests.bloom, saved at close) gets none
// of the fingerprints of the links the journal failed to record, or the resume would take them
// for seen and never crawl their pages. The resume crawls every page, each item once.
class journal_that_cannot_grow : public testing::TestWithParam<std::string> {};

TEST_P(journal_that_cannot_grow, stops_the_dupefilters_record_too_and_the_resume_loses_nothing) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 5});
  std::vector<std::string> settings{"CONCURRENT_REQUESTS=4", "DUPEFILTER_CLASS=" + GetParam(),
                                    "BLOOMFILTER_CAPACITY=1000"};
  // A Redis dupefilter records as it answers: once the journal fails it must not be asked. With
  // SCHEDULER_PERSIST its keys outlive the failed run, as they would for a fleet's dupefilter.
  std::unique_ptr<redis_server> redis;
  if (GetParam().starts_with("redis")) {
    redis = std::make_unique<redis_server>();
    settings.push_back("REDIS_URL=" + redis->url());
    settings.push_back("SCHEDULER_PERSIST=True");
  }
  // dash's ulimit -f counts 512-byte blocks: 16 KiB. An ignored SIGXFSZ stays ignored across
  // exec, so a write past the limit fails with EFBIG instead of killing the crawl.
  std::vector<std::string> limited{"/bin/sh", "-c", "trap '' XFSZ; ulimit -f 32; exec \"$@\"",
                                   "sh"};
  auto first_argv = site.argv(1, settings);
  limited.insert(limited.end(), first_argv.begin(), first_argv.end());
  {
    child_process first(limited);
    EXPECT_EQ(first.wait(), 1) << first.stderr_text();
    EXPECT_NE(first.stderr_text().find("requests.journal: File too large; closing the spider"),
              std::string::npos)
        << first.stderr_text();
  }
  EXPECT_EQ(read_json(site.dir.path() / "stats1.json")["finish_reason"], "jobdir_write_failed");
  EXPECT_LT(site.server.total_hits(), site.pages);
  child_process second(site.argv(2, settings));
  ASSERT_EQ(second.wait(), 0) << second.stderr_text();
  EXPECT_EQ(read_json(site.dir.path() / "stats2.json")["finish_reason"], "finished");
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
  auto items = read_item_urls(site.dir.path() / "items.jsonl");
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()), site.expected_urls());
  EXPECT_EQ(items.size(), site.pages) << "an item was written twice";
}

INSTANTIATE_TEST_SUITE_P(crawler_command, journal_that_cannot_grow,
                         testing::Values("set", "bloom", "redis_set"));

// The dupefilter's own file in JOBDIR failing (here requests.seen is a node of the device
// /dev/full is, which answers every write as a full disk does, while the journal beside it
// writes; a link to /dev/full would be refused as any planted link is): the crawl stops, and the
// resume loses nothing. Its answers were right all along, so no page is fetched twice but those
// in flight.
TEST(crawler_command, a_requests_seen_that_cannot_be_written_stops_the_crawl_losing_nothing) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 5});
  auto job = site.dir.path() / "job";
  std::filesystem::create_directories(job);
  struct stat full {};
  ASSERT_EQ(::stat("/dev/full", &full), 0);
  ASSERT_EQ(::mknod((job / "requests.seen").c_str(), S_IFCHR | 0666, full.st_rdev), 0)
      << std::strerror(errno);
  {
    child_process first(site.argv(1, {"CONCURRENT_REQUESTS=4"}));
    EXPECT_EQ(first.wait(), 1) << first.stderr_text();
    EXPECT_NE(
        first.stderr_text().find("requests.seen: No space left on device; closing the spider"),
        std::string::npos)
        << first.stderr_text();
  }
  EXPECT_EQ(read_json(site.dir.path() / "stats1.json")["finish_reason"], "jobdir_write_failed");
  EXPECT_LT(site.server.total_hits(), site.pages);
  std::filesystem::remove(job / "requests.seen");
  child_process second(site.argv(2, {"CONCURRENT_REQUESTS=4"}));
  ASSERT_EQ(second.wait(), 0) << second.stderr_text();
  EXPECT_EQ(site.scraped_urls(), site.expected_urls());
  EXPECT_EQ(site.fetches().lost, std::vector<std::size_t>{});
  auto fetched_again = site.fetches().again;
  EXPECT_LE(fetched_again, 2u * 4u);
}

// A feed on a disk that fills mid-crawl: exit 1, feed_write_failed, the line cut short removed.
// Without JOBDIR every whole line stays; with JOBDIR the feed ends with the last page that is
// done, and once there is room the resume writes every other item: each exactly once.
TEST(crawler_command, a_feed_disk_filling_mid_crawl_stops_the_crawl_with_every_line_whole) {
  interrupted_site site({.site_pages = 300, .page_delay_ms = 5});
  auto disk = site.dir.path() / "disk";
  std::filesystem::create_directories(disk);
  // After each run the feed is copied out of the namespace: first.jsonl, then items.jsonl.
  child_process runs(twice_on_a_filling_disk(
      disk, "8k",
      {crawler_binary(), "crawl", "site", "-a", "start=" + site.server.url("/site/0"), "-o",
       (disk / "items.jsonl").string(), "-s", "JOBDIR=" + (site.dir.path() / "job").string(), "-s",
       "CONCURRENT_REQUESTS=4", "-L", "WARNING"},
      R"(cp "$1/items.jsonl" "$1/../items.jsonl"; [ -e "$1/../first.jsonl" ] ||)"
      R"( cp "$1/items.jsonl" "$1/../first.jsonl")"));
  ASSERT_EQ(runs.wait(), 0) << runs.stderr_text();
  expect_a_stop_then_a_finish(runs);
  EXPECT_EQ(read_json(site.dir.path() / "stats1.json")["finish_reason"], "feed_write_failed");
  std::ifstream first(site.dir.path() / "first.jsonl", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(first)), {});
  EXPECT_GT(read_item_urls(site.dir.path() / "first.jsonl").size(), 10u);  // each line whole
  EXPECT_TRUE(text.ends_with('\n')) << "the last line is cut short";
  auto items = read_item_urls(site.dir.path() / "items.jsonl");
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()), site.expected_urls());
  EXPECT_EQ(items.size(), site.pages) << "an item was written twice";
}

// The three schemes README lists for --impl; the scrapy-redis value is what scrapy-redis 0.9.1's
// RFPDupeFilter.request_fingerprint returns for the URL (tests/fixtures/make_canonical_urls.py).
TEST(crawler_command, fingerprint_prints_each_schemes_fingerprint) {
  for (auto [impl, expected] : std::vector<std::pair<std::string, std::string>>{
           {"2.7", "cebe46deeab7ee5915824a38cf73ee6f7eb0aba5"},
           {"2.6", "628735d3a16b67b1dd5fbfbd10a15f2c28362bbd"},
           {"scrapy-redis-0.8", "db723d399cb551c9ef8eca77ed8dbed4a0522b4f"}}) {
    child_process fingerprint(
        {crawler_binary(), "fingerprint", "--impl", impl, "http://example.com/"});
    ASSERT_EQ(fingerprint.wait(), 0) << fingerprint.stderr_text();
    EXPECT_EQ(fingerprint.stdout_text(), expected + "\thttp://example.com/\n") << impl;
  }
}

TEST(crawler_command, list_prints_the_compiled_in_spiders) {
  child_process list({crawler_binary(), "list"});
  EXPECT_EQ(list.wait(), 0);
  EXPECT_EQ(list.stdout_text(), "dupes\nquotes\nsite\n");
}

TEST(crawler_command, version_prints_the_version) {
  child_process version({crawler_binary(), "version"});
  EXPECT_EQ(version.wait(), 0);
  EXPECT_EQ(version.stdout_text(), "crawler " CRAWLER_VERSION "\n");
}

// As `scrapy fetch`: the body after redirects, and a newline.
// The body is the output: without -L, the log says only what went wrong (nothing, here).
TEST(crawler_command, fetch_prints_the_body_and_logs_only_what_went_wrong) {
  http_server server;
  child_process fetch({crawler_binary(), "fetch", server.url("/redirect/2")});
  EXPECT_EQ(fetch.wait(), 0) << fetch.stderr_text();
  EXPECT_EQ(fetch.stdout_text(), "arrived\n");
  EXPECT_EQ(fetch.stderr_text(), "");
  child_process failed({crawler_binary(), "fetch", server.url("/reset"), "-s", "RETRY_ENABLED=false"});
  EXPECT_EQ(failed.wait(), 1);
  EXPECT_NE(failed.stderr_text().find("ERROR"), std::string::npos) << failed.stderr_text();
  child_process verbose({crawler_binary(), "fetch", server.url("/redirect/2"), "-L", "INFO"});
  EXPECT_EQ(verbose.wait(), 0);
  EXPECT_NE(verbose.stderr_text().find("Spider opened"), std::string::npos);
}

// --headers prints the request's headers ("> "), a ">" line, then the response's ("< "), a line
// each as Scrapy does; --no-redirect shows the redirect itself.
TEST(crawler_command, fetch_headers_and_no_redirect_show_the_exchange_as_scrapy_fetch_does) {
  http_server server;
  child_process fetch({crawler_binary(), "fetch", "--headers", "--no-redirect",
                       server.url("/redirect/2"), "--nolog", "-s", "USER_AGENT=probe/1"});
  EXPECT_EQ(fetch.wait(), 0) << fetch.stderr_text();
  auto text = fetch.stdout_text();
  EXPECT_NE(text.find("> User-Agent: probe/1\n"), std::string::npos) << text;
  auto divider = text.find("\n>\n");
  ASSERT_NE(divider, std::string::npos) << text;
  EXPECT_NE(text.find("\n< Location: /redirect/1\n", divider), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "lines end in \\n, as Scrapy's";
  EXPECT_EQ(server.hits("/redirect/1"), 0u);
}

TEST(crawler_command, version_verbose_names_the_libraries_it_was_built_with) {
  child_process version({crawler_binary(), "version", "-v"});
  EXPECT_EQ(version.wait(), 0);
  auto text = version.stdout_text();
  EXPECT_TRUE(text.starts_with("crawler " CRAWLER_VERSION "\n")) << text;
  for (const char* library : {"\nlibcurl   : libcurl/", "\nBoost     : 1.", "\nhiredis   : "}) {
    EXPECT_NE(text.find(library), std::string::npos) << library << " in " << text;
  }
}

TEST(crawler_command, the_quotes_example_crawls_the_shipped_pages_offline) {
  temp_dir dir;
  auto feed = dir.path() / "quotes.csv";
  auto stats = dir.path() / "stats.json";
  child_process crawl({crawler_binary(), "crawl", "quotes", "-O", feed.string(), "--nolog", "-s",
                       "DUPEFILTER_CLASS=bloom", "-s", "STATS_FILE=" + stats.string()});
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  // README's first command: a Bloom filter sized for the example's pages, not for 10 million.
  EXPECT_LT(read_json(stats)["bloomfilter/bits"].get<std::int64_t>(), 2000000);
  EXPECT_EQ(read_json(stats)["bloomfilter/capacity"], 100000);  // the spider's custom_settings
  std::ifstream in(feed);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "text,author,tags\r");  // the spider's order, as Scrapy's exporter writes it
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 30u);
  // The author is read from its {"name": ...} object; a list is joined with commas, as Scrapy's
  // CsvItemExporter joins multivalued fields.
  EXPECT_EQ(rows[0], "The unexamined life is not worth living.,Socrates,\"life,philosophy\"\r");
}

// Scrapy's `-o FILE:FORMAT`: the format after the last colon wins over the extension; a format
// this crawler does not write (Python's pickle) is named in one line, exit 2, before anything is
// crawled.
TEST(crawler_command, a_feed_format_named_after_a_colon_is_the_one_written) {
  temp_dir dir;
  auto feed = dir.path() / "quotes.data";
  child_process crawl(
      {crawler_binary(), "crawl", "quotes", "-O", feed.string() + ":jsonl", "--nolog"});
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  std::ifstream in(feed);
  std::vector<nlohmann::json> items;
  for (std::string line; std::getline(in, line);) items.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(items.size(), 30u);
  EXPECT_EQ(items[0]["author"], "Socrates");
  EXPECT_FALSE(std::filesystem::exists(feed.string() + ":jsonl"));

  auto pickled = dir.path() / "quotes.pickle";
  child_process refused({crawler_binary(), "crawl", "quotes", "-o", pickled.string() + ":pickle"});
  EXPECT_EQ(refused.wait(), 2);
  EXPECT_EQ(refused.stderr_text(), "crawler crawl: -o " + pickled.string() +
                                       ":pickle: the pickle format is Python's own and not "
                                       "written here; use jsonlines, json, csv or xml\n");
  EXPECT_FALSE(std::filesystem::exists(pickled));
}

TEST(crawler_command, a_feed_to_standard_output_is_all_a_reader_of_the_pipe_gets) {
  // Logged at INFO: the log goes to stderr, and stdout holds the feed alone.
  child_process crawl({crawler_binary(), "crawl", "quotes", "-o", "-", "-L", "INFO"});
  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  std::istringstream out(crawl.stdout_text());
  std::vector<nlohmann::json> items;
  for (std::string line; std::getline(out, line);) items.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(items.size(), 30u);
  EXPECT_EQ(items[0]["author"], "Socrates");
  EXPECT_NE(crawl.stderr_text().find("Stored jsonlines feed (30 items) in: stdout:"),
            std::string::npos);
  EXPECT_NE(crawl.stderr_text().find("'feedexport/success_count/StdoutFeedStorage': 1"),
            std::string::npos);

  child_process as_csv({crawler_binary(), "crawl", "quotes", "-o", "-:csv", "--nolog"});
  ASSERT_EQ(as_csv.wait(), 0) << as_csv.stderr_text();
  auto csv = as_csv.stdout_text();
  EXPECT_TRUE(csv.starts_with("text,author,tags\r\n"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 31);
}

TEST(crawler_command, no_output_of_a_crawl_holds_its_passwords) {
  const std::string password = "Sw0rdf1sh-42";
  redis_server redis({.password = password});
  http_server server;
  temp_dir dir;
  auto stats_file = dir.path() / "stats.json";
  auto feed = dir.path() / "items.jsonl";
  auto redis_url = "redis://:" + password + "@127.0.0.1:" + std::to_string(redis.port()) + "/0";
  std::vector<std::string> outputs;
  {
    child_process crawl(
        {crawler_binary(), "crawl", "dupes", "-a", "base_url=" + server.url("/s?wd="), "-s",
         "DUPEFILTER_CLASS=redis_set", "-s", "REDIS_URL=" + redis_url, "-s",
         R"(REDIS_PARAMS={"socket_timeout": 5, "password": ")" + password + "\"}", "-s",
         R"(DEFAULT_REQUEST_HEADERS={"Authorization": "Bearer )" + password + "\"}", "-s",
         "STATS_FILE=" + stats_file.string(), "-O", feed.string(), "-L", "DEBUG"});
    ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
    EXPECT_NE(crawl.stderr_text().find("Overridden settings"), std::string::npos);
    outputs.push_back(crawl.stdout_text());
    outputs.push_back(crawl.stderr_text());
    std::ifstream stats(stats_file), items(feed);
    outputs.emplace_back(std::istreambuf_iterator<char>(stats), std::istreambuf_iterator<char>());
    outputs.emplace_back(std::istreambuf_iterator<char>(items), std::istreambuf_iterator<char>());
  }
  {  // the same URL with a wrong password: the error names the server, not the password
    auto wrong = "redis://:" + password + "x@127.0.0.1:" + std::to_string(redis.port()) + "/0";
    child_process crawl({crawler_binary(), "crawl", "dupes", "-s", "DUPEFILTER_CLASS=redis_set",
                         "-s", "REDIS_URL=" + wrong});
    EXPECT_EQ(crawl.wait(), 2);
    outputs.push_back(crawl.stdout_text());
    outputs.push_back(crawl.stderr_text());
  }
  {  // a REDIS_URL the client cannot read is quoted without its password
    child_process dedup({crawler_binary(), "dedup", "-s", "DUPEFILTER_CLASS=redis_set", "-s",
                         "REDIS_URL=redis://:" + password + "@127.0.0.1:notaport/0", "-"});
    EXPECT_EQ(dedup.wait(), 2);
    EXPECT_NE(dedup.stderr_text().find("REDIS_URL"), std::string::npos) << dedup.stderr_text();
    outputs.push_back(dedup.stdout_text());
    outputs.push_back(dedup.stderr_text());
  }
  for (const auto& output : outputs) {
    EXPECT_EQ(output.find(password), std::string::npos) << output;
  }
}

// LOG_FILE takes the log off standard error, appending (LOG_FILE_APPEND) or starting afresh;
// LOG_FORMAT, LOG_DATEFORMAT and LOG_SHORT_NAMES shape the lines as in Scrapy; LOG_ENABLED=false
// silences it; a field LOG_FORMAT cannot print stops the crawl naming the setting.
TEST(crawler_command, log_file_format_dateformat_short_names_and_enabled) {
  temp_dir dir;
  auto log = dir.path() / "crawl.log";
  auto quotes = [&](std::vector<std::string> settings) {
    std::vector<std::string> argv{crawler_binary(),
                                  "crawl",
                                  "quotes",
                                  "-L",
                                  "INFO",
                                  "-O",
                                  (dir.path() / "quotes.jsonl").string()};
    for (auto& setting : settings) argv.insert(argv.end(), {"-s", setting});
    return std::make_unique<child_process>(argv);
  };
  auto read_log = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  for (int run = 0; run < 2; ++run) {
    auto crawl = quotes({"LOG_FILE=" + log.string()});
    ASSERT_EQ(crawl->wait(), 0) << crawl->stderr_text();
    EXPECT_EQ(crawl->stderr_text(), "");
  }
  EXPECT_EQ(count_of(read_log(), "] INFO: Spider closed (finished)\n"), 2u);  // appended
  auto shaped = quotes({"LOG_FILE=" + log.string(), "LOG_FILE_APPEND=false",
                        "LOG_FORMAT=%(levelname)s|%(name)s|%(message)s", "LOG_SHORT_NAMES=true"});
  ASSERT_EQ(shaped->wait(), 0) << shaped->stderr_text();
  auto text = read_log();
  EXPECT_EQ(count_of(text, "Spider closed"), 1u) << text;  // started afresh
  EXPECT_NE(text.find("\nINFO|crawler|Spider closed (finished)\n"), std::string::npos) << text;

  auto dated = quotes({"LOG_DATEFORMAT=%H:%M"});
  ASSERT_EQ(dated->wait(), 0) << dated->stderr_text();
  std::regex hour_minute(R"(^\d\d:\d\d \[crawler\] INFO: )");
  EXPECT_TRUE(std::regex_search(dated->stderr_text(), hour_minute)) << dated->stderr_text();
  auto silent = quotes({"LOG_ENABLED=false"});
  ASSERT_EQ(silent->wait(), 0);
  EXPECT_EQ(silent->stderr_text(), "");
  auto unknown = quotes({"LOG_FORMAT=%(asctime)s %(module)s %(message)s"});
  EXPECT_EQ(unknown->wait(), 2);
  EXPECT_NE(unknown->stderr_text().find("LOG_FORMAT: unsupported field %(module)"),
            std::string::npos)
      << unknown->stderr_text();
}

// Runs `argv` with standard output and error on a pseudo-terminal, as a user's shell would; returns
// the exit status and everything it wrote.
// On a terminal a live status line is drawn under the log (carriage return, erase to the end of
// the line) and erased before the stats are dumped; PROGRESS=false, or standard error not being a
// terminal (every other test here), leaves the log as plain lines.
TEST(crawler_command, on_a_terminal_a_live_progress_line_is_drawn_under_the_log) {
  http_server server({.site_pages = 60, .page_delay_ms = 20});
  std::vector<std::string> argv{crawler_binary(),
                                "crawl",
                                "site",
                                "-a",
                                "start=" + server.url("/site/0"),
                                "-L",
                                "INFO",
                                "-s",
                                "CLOSESPIDER_PAGECOUNT=40",
                                "-s",
                                "CONCURRENT_REQUESTS=2"};
  auto [status, output] = run_on_a_terminal(argv);
  ASSERT_EQ(status, 0) << output;
  EXPECT_NE(output.find("\r0:00 | "), std::string::npos) << output;
  EXPECT_NE(output.find(" in flight | "), std::string::npos) << output;
  EXPECT_NE(output.find("%\x1b[K"), std::string::npos) << "a bar toward CLOSESPIDER_PAGECOUNT";
  auto erased = output.rfind("\r\x1b[K");
  auto dumped = output.find("Dumping crawler stats");
  ASSERT_NE(dumped, std::string::npos);
  EXPECT_LT(erased, dumped);
  // After the erase, only the summary that replaces the line, last of all.
  auto summary = output.find("Done in 0:0", dumped);
  ASSERT_NE(summary, std::string::npos) << output;
  EXPECT_EQ(output.find(" pages ", dumped), output.find(" pages ", summary));
  EXPECT_LT(output.find("Spider closed", dumped), summary);

  argv.insert(argv.end(), {"-s", "PROGRESS=false"});
  auto [plain_status, plain] = run_on_a_terminal(argv);
  ASSERT_EQ(plain_status, 0) << plain;
  EXPECT_EQ(plain.find("\x1b[K"), std::string::npos) << plain;
}

// A crawl in a real terminal (tmux) `columns` wide, its pane kept after the crawl exits.
class tmux_crawl {
 public:
  tmux_crawl(std::size_t columns, const std::vector<std::string>& argv)
      : socket_("crawler-test-" + std::to_string(getpid()) + "-" + std::to_string(columns)) {
    std::string command;
    for (const auto& arg : argv) command += "'" + arg + "' ";
    tmux({"new-session", "-d", "-x", std::to_string(columns), "-y", "50",
          "sh -c \"" + command + "; echo EXIT=\\$?; sleep 120\""});
  }
  ~tmux_crawl() { tmux({"kill-server"}); }

  /// The pane as its rows read, a row wrapped by the terminal joined to the one before.
  std::vector<std::string> rows() {
    child_process capture({"/usr/bin/tmux", "-L", socket_, "capture-pane", "-p", "-J"});
    capture.wait();
    std::vector<std::string> rows;
    std::istringstream text(capture.stdout_text());
    for (std::string row; std::getline(text, row);) {
      while (!row.empty() && row.back() == ' ') row.pop_back();
      rows.push_back(row);
    }
    return rows;
  }

 private:
  void tmux(std::vector<std::string> arguments) {
    arguments.insert(arguments.begin(), {"/usr/bin/tmux", "-L", socket_, "-f", "/dev/null"});
    child_process run(arguments);
    if (run.wait() != 0) ADD_FAILURE() << "tmux: " << run.stderr_text();
  }

  std::string socket_;
};

// The progress line fits its terminal, however narrow: it never wraps, so each redraw replaces it
// and no stale copy is left above; at the end a one-line summary takes its place.
TEST(crawler_command, the_progress_line_fits_60_80_and_200_columns_and_ends_with_a_summary) {
  http_server server({.site_pages = 80, .page_delay_ms = 30});
  std::regex progress_row(R"(^[0-9]+:[0-9]{2} \| )");
  std::vector<std::string> argv{crawler_binary(), "crawl", "site", "-a",
                                "start=" + server.url("/site/0"), "-L", "INFO", "-s",
                                "CLOSESPIDER_PAGECOUNT=60", "-s", "CONCURRENT_REQUESTS=1"};
  std::map<std::size_t, std::unique_ptr<tmux_crawl>> terminals;
  for (std::size_t columns : {60, 80, 200}) {
    terminals[columns] = std::make_unique<tmux_crawl>(columns, argv);
  }
  std::map<std::size_t, std::size_t> drawn;
  std::map<std::size_t, std::vector<std::string>> last;
  auto finished = [](const std::vector<std::string>& rows) {
    return std::any_of(rows.begin(), rows.end(), [](auto& r) { return r.starts_with("EXIT="); });
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (std::size_t done = 0; done < terminals.size() && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
    done = 0;
    for (auto& [columns, terminal] : terminals) {
      auto& rows = last[columns];
      if (finished(rows)) {
        ++done;
        continue;
      }
      rows = terminal->rows();
      std::size_t lines = 0;
      for (const auto& row : rows) {
        if (!std::regex_search(row, progress_row)) continue;
        ++lines;
        EXPECT_LT(row.size(), columns) << "wrapped at " << columns << " columns: " << row;
      }
      if (!finished(rows)) {
        EXPECT_LE(lines, 1u) << "a stale row at " << columns << " columns";
      }
      drawn[columns] += lines;
    }
  }
  for (auto& [columns, rows] : last) {
    EXPECT_GT(drawn[columns], 0u) << "the line was drawn at " << columns << " columns";
    auto exit = std::find_if(rows.begin(), rows.end(), [](auto& r) { return r.starts_with("EXIT="); });
    ASSERT_NE(exit, rows.end()) << columns;
    EXPECT_EQ(*exit, "EXIT=0");
    ASSERT_NE(exit, rows.begin());
    const auto& summary = *(exit - 1);
    EXPECT_TRUE(summary.starts_with("Done in 0:0")) << summary;
    EXPECT_NE(summary.find("(closespider_pagecount): 6"), std::string::npos) << summary;
    EXPECT_LT(summary.size(), columns) << summary;
    for (const auto& row : rows) {
      EXPECT_FALSE(std::regex_search(row, progress_row)) << row;
    }
    if (columns == 200) {
      EXPECT_TRUE(std::regex_search(summary, std::regex(" items, [0-9,]+ dupes, 0 errors$")))
          << summary;
    }
  }
}

// A loopback port nothing listens on (bound and released: nothing else takes it meanwhile).
unsigned short unused_port() {
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(probe, reinterpret_cast<sockaddr*>(&address), length);
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(probe);
  return ntohs(address.sin_port);
}

// METRICS_PORT: a running crawl is scraped as Prometheus scrapes it, and what it serves passes
// `promtool check metrics` (format and lint).
TEST(crawler_command, metrics_port_serves_a_running_crawls_stats_that_promtool_accepts) {
  http_server server({.site_pages = 80, .page_delay_ms = 40});
  temp_dir dir;
  auto port = std::to_string(unused_port());
  child_process crawl({crawler_binary(), "crawl", "site", "-a", "start=" + server.url("/site/0"),
                       "-s", "METRICS_PORT=" + port, "-s", "CONCURRENT_REQUESTS=1", "-s",
                       "CLOSESPIDER_PAGECOUNT=40", "-L", "INFO"});
  auto scrape = [&](const std::string& path) {
    child_process fetch({crawler_binary(), "fetch", "http://127.0.0.1:" + port + path});
    fetch.wait();
    return fetch.stdout_text();
  };
  std::string metrics;
  std::regex pages(R"(crawler_response_received_count_total\{spider="site"\} ([0-9]+))");
  std::smatch found;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    metrics = scrape("/metrics");
    if (std::regex_search(metrics, found, pages) && std::stoi(found[1]) >= 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::regex_search(metrics, found, pages)) << metrics;
  EXPECT_GE(std::stoi(found[1]), 5);
  EXPECT_NE(metrics.find("# TYPE crawler_response_received_count_total counter\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("crawler_downloader_response_status_count_total{spider=\"site\","
                         "response_status=\"200\"} "),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("crawler_requests_in_flight{spider=\"site\"} "), std::string::npos);
  EXPECT_NE(scrape("/other").find("Not found: the metrics are at /metrics"), std::string::npos);
  auto exposition = dir.path() / "metrics.txt";
  std::ofstream(exposition) << metrics;
  child_process promtool({"/usr/bin/promtool", "check", "metrics"}, exposition);
  EXPECT_EQ(promtool.wait(), 0) << promtool.stdout_text() << promtool.stderr_text();
  EXPECT_EQ(promtool.stdout_text() + promtool.stderr_text(), "");

  ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  EXPECT_NE(crawl.stderr_text().find("Metrics for Prometheus at http://127.0.0.1:" + port +
                                     "/metrics"),
            std::string::npos);
  // A port already taken stops the crawl before it starts, naming the port.
  int taken = ::socket(AF_INET, SOCK_STREAM, 0);
  int reuse = 1;  // the crawl's connections may still be in TIME_WAIT
  ::setsockopt(taken, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(std::stoi(port));
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::listen(taken, 1);
  child_process refused({crawler_binary(), "crawl", "site", "-a", "start=" + server.url("/site/0"),
                         "-s", "METRICS_PORT=" + port});
  EXPECT_EQ(refused.wait(), 2);
  ::close(taken);
  EXPECT_NE(refused.stderr_text().find("METRICS_PORT: cannot serve metrics on 127.0.0.1:" + port),
            std::string::npos)
      << refused.stderr_text();
}

// A fleet worker's queue is the fleet's, in Redis: its progress line counts that queue, as
// scrapy-redis's len(scheduler) does, not an empty local one.
TEST(crawler_command, a_fleet_workers_progress_line_counts_the_fleets_queue) {
  http_server server({.site_pages = 200, .page_delay_ms = 50});
  redis_server redis;
  auto [status, output] =
      run_on_a_terminal({crawler_binary(), "crawl", "site", "-a", "start=" + server.url("/site/0"),
                         "-L", "INFO", "-s", "SCHEDULER=redis", "-s", "DUPEFILTER_CLASS=redis_set",
                         "-s", "REDIS_URL=" + redis.url(), "-s", "CLOSESPIDER_PAGECOUNT=40", "-s",
                         "CONCURRENT_REQUESTS=2"});
  ASSERT_EQ(status, 0) << output;
  std::regex queued(R"(\| ([0-9,]+) queued \|)");
  std::size_t most = 0, lines = 0;
  for (std::sregex_iterator at(output.begin(), output.end(), queued), end; at != end; ++at) {
    auto digits = (*at)[1].str();
    std::erase(digits, ',');
    most = std::max<std::size_t>(most, std::stoul(digits));
    ++lines;
  }
  ASSERT_GT(lines, 0u) << output;
  EXPECT_GT(most, 10u) << output;
}

// `crawler bench` needs nothing but itself: it serves its site, crawls it until
// CLOSESPIDER_TIMEOUT with a LOGSTATS line a second, and sums up in pages/min.
TEST(crawler_command, bench_crawls_its_own_site_for_the_timeout_and_prints_pages_per_minute) {
  child_process bench({crawler_binary(), "bench", "-s", "CLOSESPIDER_TIMEOUT=2"});
  ASSERT_EQ(bench.wait(), 0) << bench.stderr_text();
  std::smatch summary;
  auto out = bench.stdout_text();
  ASSERT_TRUE(std::regex_match(
      out, summary,
      std::regex(R"(crawler bench: (\d+) pages in 2\.\d s: (\d+) pages/min \((\d+) pages/s\)\n)")))
      << out;
  EXPECT_GT(std::stol(summary[1]), 100);  // a loopback site, not one page and a stall
  EXPECT_NEAR(std::stod(summary[2]), std::stod(summary[3]) * 60, 60);
  auto log = bench.stderr_text();
  EXPECT_GE(count_of(log, "INFO: Crawled "), 2u) << log;  // LOGSTATS_INTERVAL=1
  EXPECT_NE(log.find("Spider closed (closespider_timeout)"), std::string::npos) << log;
}

// -L sets LOG_LEVEL over the default DEBUG, and over -s; --nolog silences the log.
TEST(crawler_command, minus_l_sets_the_log_level_and_nolog_silences_it) {
  temp_dir dir;
  auto feed = (dir.path() / "quotes.jsonl").string();
  auto log_of = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv{crawler_binary(), "crawl", "quotes", "-O", feed};
    argv.insert(argv.end(), flags.begin(), flags.end());
    child_process crawl(argv);
    EXPECT_EQ(crawl.wait(), 0) << crawl.stderr_text();
    return crawl.stderr_text();
  };
  EXPECT_NE(log_of({}).find("] DEBUG: Crawled (200)"), std::string::npos);
  auto info = log_of({"-L", "INFO", "-s", "LOG_LEVEL=DEBUG"});
  EXPECT_EQ(info.find("DEBUG"), std::string::npos) << info;
  EXPECT_NE(info.find("] INFO: Spider closed (finished)"), std::string::npos) << info;
  EXPECT_EQ(log_of({"-L", "ERROR"}), "");
  EXPECT_EQ(log_of({"--nolog"}), "");
}

// `crawler parse --spider NAME` runs a compiled-in spider's callback on one page: the quotes
// spider on a shipped page yields its ten quotes and the request for the next page.
TEST(crawler_command, parse_runs_a_compiled_in_spider_on_one_page) {
  auto page = crawler::fixtures::source_dir() / "spiders/data/quotes/page-1.json";
  auto url = "file://" + std::filesystem::weakly_canonical(page).string();
  child_process parse({crawler_binary(), "parse", url, "--spider", "quotes", "--nolog"});
  ASSERT_EQ(parse.wait(), 0) << parse.stderr_text();
  auto text = parse.stdout_text();
  EXPECT_EQ(count_of(text, "{\"text\":"), 10u) << text;
  EXPECT_NE(text.find("\n<GET " + url.substr(0, url.size() - 6) + "2.json>\n"), std::string::npos)
      << text;
}

// -o appends to a feed, -O starts it afresh, as in Scrapy.
TEST(crawler_command, minus_o_appends_and_capital_o_overwrites) {
  temp_dir dir;
  auto feed = (dir.path() / "quotes.jsonl").string();
  auto lines = [&] {
    std::ifstream in(feed);
    std::size_t count = 0;
    for (std::string line; std::getline(in, line);) ++count;
    return count;
  };
  for (const char* flag : {"-o", "-o", "-O"}) {
    child_process crawl({crawler_binary(), "crawl", "quotes", flag, feed, "--nolog"});
    ASSERT_EQ(crawl.wait(), 0) << crawl.stderr_text();
  }
  EXPECT_EQ(lines(), 30u);  // the last run's 30 quotes only
  child_process again({crawler_binary(), "crawl", "quotes", "-o", feed, "--nolog"});
  ASSERT_EQ(again.wait(), 0);
  EXPECT_EQ(lines(), 60u);
}

TEST(crawler_command, dedup_takes_settings_before_the_files_as_readme_shows) {
  temp_dir dir;
  auto urls = dir.path() / "urls.txt";
  std::ofstream(urls) << "http://a.example/1\nhttp://a.example/2\nhttp://a.example/1\n";
  child_process dedup({crawler_binary(), "dedup", "-s", "DUPEFILTER_CLASS=bloom", urls.string()});
  ASSERT_EQ(dedup.wait(), 0) << dedup.stderr_text();
  EXPECT_EQ(dedup.stdout_text(), "http://a.example/1\nhttp://a.example/2\n");
}

// A URL that is not one is reported with its file and line, the others still go through; a file
// that cannot be read is named; a last line without a newline counts.
TEST(crawler_command, dedup_names_the_file_and_line_of_a_bad_url) {
  temp_dir dir;
  auto urls = dir.path() / "urls.txt";
  std::ofstream(urls) << "http://a.example/1\nhttp://[bad\n\nhttp://a.example/2";
  auto missing = dir.path() / "missing.txt";
  child_process dedup({crawler_binary(), "dedup", urls.string(), missing.string()});
  EXPECT_EQ(dedup.wait(), 1);
  EXPECT_EQ(dedup.stdout_text(), "http://a.example/1\nhttp://a.example/2\n");
  EXPECT_NE(
      dedup.stderr_text().find("crawler dedup: " + urls.string() + ":2: invalid URL 'http://[bad'"),
      std::string::npos)
      << dedup.stderr_text();
  EXPECT_NE(dedup.stderr_text().find("crawler dedup: cannot read " + missing.string()),
            std::string::npos)
      << dedup.stderr_text();
}

// --seed-scenario feeds the seed articles' 110 URLs first (10 duplicates), then the files; --spider
// names the Redis keys; "-" reads standard input.
TEST(crawler_command, dedup_seed_scenario_spider_and_stdin_flags) {
  redis_server redis;
  temp_dir dir;
  auto urls = dir.path() / "urls.txt";
  std::ofstream(urls) << "http://127.0.0.1:8080/s?wd=5\nhttp://b.example/new\n";
  child_process dedup({crawler_binary(), "dedup", "-s", "DUPEFILTER_CLASS=redis_set", "-s",
                       "REDIS_URL=" + redis.url(), "--spider", "shop", "--seed-scenario", "-"},
                      urls);
  ASSERT_EQ(dedup.wait(), 0) << dedup.stderr_text();
  auto printed = dedup.stdout_text();
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 101) << printed;  // 100 + 1 new
  EXPECT_TRUE(printed.ends_with("\nhttp://b.example/new\n")) << printed;
  auto* context = redisConnect("127.0.0.1", redis.port());
  auto* members = static_cast<redisReply*>(redisCommand(context, "SCARD shop:dupefilter"));
  EXPECT_EQ(members->integer, 101);
  freeReplyObject(members);
  redisFree(context);
}

// --method and --body enter the fingerprint as Scrapy's do (expected values from Scrapy 2.8's
// scrapy.utils.request.fingerprint); "-" reads the URLs from standard input.
TEST(crawler_command, fingerprint_method_body_and_stdin_flags) {
  temp_dir dir;
  auto urls = dir.path() / "urls.txt";
  std::ofstream(urls) << "http://a.example/x?b=2&a=1\n";
  child_process post({crawler_binary(), "fingerprint", "--method", "POST", "--body", "k=v", "-"},
                     urls);
  ASSERT_EQ(post.wait(), 0) << post.stderr_text();
  EXPECT_EQ(post.stdout_text(),
            "ee68b583e3d9408675ffdb034902c502f904a8f6\thttp://a.example/x?a=1&b=2\n");
  child_process get({crawler_binary(), "fingerprint", "-"}, urls);
  ASSERT_EQ(get.wait(), 0) << get.stderr_text();
  EXPECT_EQ(get.stdout_text(),
            "7352f045b0032bbf35b876e36396029285936737\thttp://a.example/x?a=1&b=2\n");
}

// Standard input is read a block at a time: lines that straddle blocks, a bad URL reported with its
// line number (the others still printed), and a last line without a newline.
TEST(crawler_command, fingerprint_reads_long_stdin_line_by_line) {
  temp_dir dir;
  auto urls = dir.path() / "urls.txt";
  const std::string good = "http://a.example/x?b=2&a=1";
  {
    std::ofstream file(urls);
    for (int line = 1; line <= 5000; ++line) {
      file << (line == 2500 ? "http://[bad" : good);
      if (line < 5000) file << '\n';
    }
  }
  child_process get({crawler_binary(), "fingerprint", "-"}, urls);
  EXPECT_EQ(get.wait(), 1);
  EXPECT_EQ(get.stderr_text(),
            "crawler fingerprint: stdin line 2500: invalid URL 'http://[bad': unbalanced '[' or "
            "']' in the host (Invalid IPv6 URL)\n");
  std::istringstream printed(get.stdout_text());
  int lines = 0, wrong = 0;
  for (std::string line; std::getline(printed, line); ++lines) {
    wrong += line != "7352f045b0032bbf35b876e36396029285936737\thttp://a.example/x?a=1&b=2";
  }
  EXPECT_EQ(lines, 4999);
  EXPECT_EQ(wrong, 0) << "lines whose fingerprint or canonical URL is wrong";
}

TEST(crawler_command, a_start_url_that_is_not_a_url_is_one_line_before_anything_is_fetched) {
  // What `crawler crawl` says of `start`, and that it exits 2 saying it.
  auto refusal_of = [](const std::string& start) {
    child_process crawl({crawler_binary(), "crawl", "site", "-a", "start=" + start, "--nolog"});
    EXPECT_EQ(crawl.wait(), 2) << start;
    return crawl.stderr_text();
  };
  EXPECT_EQ(refusal_of("www.example.org/"),
            "crawler crawl: start URL \"www.example.org/\": Missing scheme in request url: "
            "www.example.org/\n");
  // A one-letter scheme is a scheme (RFC 3986), as Scrapy reads "c:/data/a.html": named as one
  // no download handler takes, not as a URL without one.
  EXPECT_EQ(refusal_of("c:/data/a.html"),
            "crawler crawl: start URL \"c:/data/a.html\": scheme \"c\" is not in "
            "DOWNLOAD_SCHEMES\n");
  // A scheme is named in lower case, whatever case it was written in, A and Z included.
  EXPECT_EQ(refusal_of("JAVASCRIPT:void(0)"),
            "crawler crawl: start URL \"JAVASCRIPT:void(0)\": scheme \"javascript\" is not in "
            "DOWNLOAD_SCHEMES\n");
  EXPECT_EQ(refusal_of("Z:/data/a.html"),
            "crawler crawl: start URL \"Z:/data/a.html\": scheme \"z\" is not in "
            "DOWNLOAD_SCHEMES\n");
}

}  // namespace
