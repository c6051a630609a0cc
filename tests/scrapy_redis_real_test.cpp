// Mixed fleets against scrapy-redis itself: scrapy-redis 0.9.1's own code
// (../shared/scrapy-redis/real/src, not an imitation) on Debian's Scrapy, beside our workers on one
// real Redis, with the settings a scrapy-redis user copies into a crawl file. A RedisCrawlSpider
// (two rules, a callback each) beside crawl files with the same rules, and a RedisSpider beside
// the `site` spider, on each of scrapy-redis's three queue classes; then one side's queue taken
// over by the other alone. What a user of a mixed fleet is promised: every page crawled once
// (the start page at most twice: scrapy-redis's start requests skip the dupefilter, and the `site`
// spider yields its own), each page's item made by the callback of the rule that took its link,
// whichever side wrote the request and whichever ran it, nothing set aside, no error in
// scrapy-redis's log.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "fleet.h"
#include "http_server.h"
#include "redis_server.h"
#include "scheduler/fleet/pickle.h"
#include "scheduler/fleet/scrapy_request.h"
#include "set_aside_records.h"
#include "tree_paths.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_list;
using crawler::fixtures::redis_run;
using crawler::fixtures::redis_server;
using crawler::fixtures::temp_dir;

constexpr const char* python_agent = "python-worker";
constexpr const char* our_agent = "cpp-worker";

std::filesystem::path scrapy_redis_source() {
  return crawler::fixtures::source_dir() / ".." / "shared" / "scrapy-redis" / "real" / "src";
}

enum class spider_kind { crawl, plain };

struct fleet_case {
  spider_kind kind;
  std::string queue_class;  // scrapy_redis.queue.<this>
  bool start_urls_as_zset = false;
};

std::string case_name(const testing::TestParamInfo<fleet_case>& info) {
  return std::string(info.param.kind == spider_kind::crawl ? "RedisCrawlSpider_" : "RedisSpider_") +
         info.param.queue_class + (info.param.start_urls_as_zset ? "_start_urls_as_zset" : "");
}

// The settings both sides share, as a scrapy-redis project's settings.py holds them.
nlohmann::json shared_settings(const redis_server& redis, const fleet_case& fleet) {
  return {{"SCHEDULER", "scrapy_redis.scheduler.Scheduler"},
          {"DUPEFILTER_CLASS", "scrapy_redis.dupefilter.RFPDupeFilter"},
          {"SCHEDULER_QUEUE_CLASS", "scrapy_redis.queue." + fleet.queue_class},
          {"SCHEDULER_PERSIST", true},
          {"REDIS_START_URLS_AS_ZSET", fleet.start_urls_as_zset},
          {"ITEM_PIPELINES", {{"scrapy_redis.pipelines.RedisPipeline", 300}}},
          {"REDIS_URL", redis.url()},
          {"MAX_IDLE_TIME_BEFORE_CLOSE", 3}};
}

// The start URL, where both sides read it: a list, or a sorted set (highest score first).
void push_start_url(const redis_server& redis, const fleet_case& fleet, const std::string& url) {
  if (fleet.start_urls_as_zset) {
    redis_run(redis.port(), {"ZADD", "site:start_urls", "10", url});
  } else {
    redis_run(redis.port(), {"LPUSH", "site:start_urls", url});
  }
}

// A scrapy-redis worker: Scrapy running the spider of real_scrapy_redis_spider.py.
std::unique_ptr<child_process> python_worker(
    const fleet_case& fleet, const redis_server& redis,
    const nlohmann::json& extra = nlohmann::json::object()) {
  auto settings = shared_settings(redis, fleet);
  settings.update({{"USER_AGENT", python_agent},
                   {"STATS_CLASS", "scrapy_redis.stats.RedisStatsCollector"},
                   {"CONCURRENT_REQUESTS", 8},
                   {"TELNETCONSOLE_ENABLED", false},
                   {"REQUEST_FINGERPRINTER_IMPLEMENTATION", "2.7"},
                   {"LOG_LEVEL", "INFO"}});
  settings.update(extra);
  std::vector<std::string> argv{
      "/usr/bin/env",
      "PYTHONPATH=" + scrapy_redis_source().string(),
      std::string("SPIDER_KIND=") + (fleet.kind == spider_kind::crawl ? "crawl" : "plain"),
      "/usr/bin/python3",
      "-m",
      "scrapy",
      "runspider",
      (crawler::fixtures::fixtures_dir() / "real_scrapy_redis_spider.py").string()};
  for (const auto& [key, value] : settings.items()) {
    argv.push_back("-s");
    argv.push_back(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return std::make_unique<child_process>(argv);
}

// One of ours: a crawl file with the same rules (RedisCrawlSpider), or the `site` spider
// (RedisSpider), with the same settings.
std::unique_ptr<child_process> our_worker(const fleet_case& fleet, const http_server& site,
                                          const redis_server& redis, const temp_dir& dir,
                                          const std::string& name,
                                          std::vector<std::string> extra = {},
                                          bool even_rule_only = false) {
  auto settings = shared_settings(redis, fleet);
  settings.update({{"USER_AGENT", our_agent}, {"CONCURRENT_REQUESTS", 2}, {"LOG_LEVEL", "INFO"}});
  std::vector<std::string> argv{crawler::fixtures::crawler_binary()};
  if (fleet.kind == spider_kind::crawl) {
    nlohmann::json crawl{
        {"settings", settings},
        {"spider",
         {{"name", "site"},
          {"rules",
           {{{"allow", {R"(/site/\d*[02468]$)"}}, {"callback", "parse_even"}, {"follow", true}},
            {{"allow", {R"(/site/\d*[13579]$)"}}, {"callback", "parse_odd"}, {"follow", true}}}},
          {"callbacks",
           {{"parse_even", {{"fields", {{"url", "$url"}, {"even", "$status"}}}}},
            {"parse_odd", {{"fields", {{"url", "$url"}, {"odd", "$status"}}}}}}}}}};
    if (even_rule_only) crawl["spider"]["rules"].erase(1);
    auto file = dir.path() / (name + ".json");
    std::ofstream(file) << crawl.dump(2);
    argv.insert(argv.end(), {"run", file.string()});
  } else {
    argv.insert(argv.end(), {"crawl", "site", "-a", "start=" + site.url("/site/0")});
    for (const auto& [key, value] : settings.items()) {
      argv.insert(
          argv.end(),
          {"-s", key + "=" + (value.is_string() ? value.get<std::string>() : value.dump())});
    }
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<child_process>(argv);
}

// What a mixed fleet promises, checked on the site, the Python log and Redis.
struct outcome {
  std::size_t by_python = 0, by_ours = 0;
};

outcome check_the_crawl(const fleet_case& fleet, const http_server& site, std::size_t pages,
                        const redis_server& redis, const std::string& python_log) {
  outcome counted;
  for (std::size_t page = 0; page < pages; ++page) {
    auto hits = site.hits("/site/" + std::to_string(page));
    if (page == 0) {
      EXPECT_GE(hits, 1u) << "the start page";
      EXPECT_LE(hits, 2u) << "the start page";
    } else {
      EXPECT_EQ(hits, 1u) << "/site/" << page;
    }
  }
  counted.by_python = site.targets_asked_by(python_agent).size();
  counted.by_ours = site.targets_asked_by(our_agent).size();
  for (const char* level : {" CRITICAL: ", " ERROR: "}) {
    EXPECT_EQ(python_log.find(level), std::string::npos) << python_log;
  }
  for (const auto& key : redis_run(redis.port(), {"KEYS", "site:*"})) {
    EXPECT_FALSE(key.ends_with(":bad") || key.ends_with(":dead"))
        << key << " holds what was set aside";
  }
  // Each page's item, from the callback its rule names: even pages to parse_even, odd ones to
  // parse_odd, whichever side wrote the request and whichever ran it.
  std::set<std::string> items_by;
  std::set<std::string> item_urls;
  for (const auto& line : redis_list(redis.port(), "site:items")) {
    auto item = nlohmann::json::parse(line);
    auto url = item.at("url").get<std::string>();
    item_urls.insert(url);
    items_by.insert(item.value("by", "ours"));
    if (fleet.kind == spider_kind::crawl) {
      bool even = (url.back() - '0') % 2 == 0;
      EXPECT_TRUE(item.contains(even ? "even" : "odd")) << item.dump();
      EXPECT_FALSE(item.contains(even ? "odd" : "even")) << item.dump();
    }
  }
  // An item for every page a link reaches, each once. The start page has one only when a rule
  // fetched it again: scrapy-redis's start requests skip the dupefilter, ours go through it
  // (docs/fleet.md: a URL pushed twice is crawled once).
  for (std::size_t page = 1; page < pages; ++page) {
    EXPECT_TRUE(item_urls.contains(site.url("/site/" + std::to_string(page)))) << page;
  }
  EXPECT_LE(item_urls.size(), pages);
  EXPECT_EQ(items_by, (std::set<std::string>{"ours", "python"}))
      << "items in site:items come from both sides";
  return counted;
}

// The pickle reader's allow-list, against pickles Python makes now: lxml's str subclass as XPath
// gives it, in every protocol scrapy-redis could write (2 to 5), and a request Scrapy 2.8's
// CrawlSpider built from a real page, as scrapy-redis queues it (to_dict, protocol -1). Each reads
// as plain data: the rule's request with its callback, errback and meta.
TEST(scrapy_redis_pickle_from_python, lxml_text_and_a_crawl_spiders_request_read_as_data) {
  const char* script = R"py(
import pickle, lxml.html
from scrapy.http import HtmlResponse, Request
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
text = lxml.html.fromstring("<p><a>A <b>x</b></a></p>").xpath("string(//a)")
assert type(text).__name__ == "_ElementUnicodeResult", type(text)
for protocol in (2, 3, 4, 5):
    print(pickle.dumps({"link_text": text}, protocol=protocol).hex())
class Site(CrawlSpider):
    name = "site"
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)
    def parse_page(self, response):
        pass
spider = Site()
page = HtmlResponse("http://a.example/", body=b'<a href="/b">B <i>c</i></a>', encoding="utf-8",
                    request=Request("http://a.example/"))
request = next(iter(spider._requests_to_follow(page)))
assert type(request.meta["link_text"]).__name__ == "_ElementUnicodeResult"
print(pickle.dumps(request.to_dict(spider=spider), protocol=-1).hex())
)py";
  child_process python({"/usr/bin/python3", "-c", script});
  ASSERT_EQ(python.wait(), 0) << python.stderr_text();
  std::vector<std::string> pickles;
  std::istringstream lines(python.stdout_text());
  for (std::string hex; std::getline(lines, hex);) {
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
      bytes += char(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    pickles.push_back(std::move(bytes));
  }
  ASSERT_EQ(pickles.size(), 5u);
  for (std::size_t protocol = 2; protocol <= 5; ++protocol) {
    auto read = crawler::pickle::read(pickles[protocol - 2]);
    const auto* text = read.find("link_text");
    ASSERT_NE(text, nullptr) << "protocol " << protocol;
    EXPECT_EQ(text->type, crawler::pickle::value::kind::text) << "protocol " << protocol;
    EXPECT_EQ(text->text, "A x") << "protocol " << protocol;
  }
  auto request = crawler::request_from_scrapy_dict(crawler::pickle::read(pickles[4]), "test");
  EXPECT_EQ(request.url, "http://a.example/b");
  EXPECT_EQ(request.callback, "_callback");
  EXPECT_EQ(request.errback, "_errback");
  EXPECT_EQ(request.meta["rule"], 0);
  EXPECT_EQ(request.meta["link_text"], "B c");
}

class mixed_fleet_with_real_scrapy_redis : public testing::TestWithParam<fleet_case> {};

// Two of ours and one scrapy-redis worker crawl a site of 2,000 pages together from one pushed
// start URL: every page once, each side at least 15% of them.
TEST_P(mixed_fleet_with_real_scrapy_redis, crawls_every_page_once_each_side_a_share) {
  constexpr std::size_t pages = 2000;
  const auto& fleet = GetParam();
  // Pages slow enough that each side's share follows its concurrency (Python's 8 against two of
  // ours at 2), not how much of a loaded machine's CPU each process gets.
  http_server site({.site_pages = pages, .page_delay_ms = 60});
  redis_server redis;
  temp_dir dir;
  // scrapy-redis reads start URLs when its spider is idle, at once after it opens, then on
  // Scrapy's 5 s heartbeat: the URL is there first, and ours start once Python has fetched it.
  push_start_url(redis, fleet, site.url("/site/0"));
  auto python = python_worker(fleet, redis);
  crawler::fixtures::wait_until([&] { return !site.targets_asked_by(python_agent).empty(); },
                                "the scrapy-redis worker's first page");
  auto ours_a = our_worker(fleet, site, redis, dir, "a");
  auto ours_b = our_worker(fleet, site, redis, dir, "b");
  EXPECT_EQ(ours_a->wait(300s), 0) << ours_a->stderr_text();
  EXPECT_EQ(ours_b->wait(300s), 0) << ours_b->stderr_text();
  EXPECT_EQ(python->wait(300s), 0) << python->stderr_text();
  auto counted = check_the_crawl(fleet, site, pages, redis, python->stderr_text());
  std::cout << "pages fetched: " << counted.by_python << " by scrapy-redis, " << counted.by_ours
            << " by ours\n";
  EXPECT_GE(counted.by_python, pages * 15 / 100);
  EXPECT_GE(counted.by_ours, pages * 15 / 100);
  // scrapy-redis's RedisStatsCollector and ours add to one <spider>:stats: `crawler stats` sums
  // both sides' pages.
  child_process stats(
      {crawler::fixtures::crawler_binary(), "stats", "site", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(stats.wait(), 0) << stats.stderr_text();
  auto summed = nlohmann::json::parse(stats.stdout_text());
  EXPECT_EQ(summed.value("response_received_count", std::int64_t{-1}),
            std::int64_t(counted.by_python + counted.by_ours))
      << summed.dump();
}

INSTANTIATE_TEST_SUITE_P(each_spider_and_queue_class, mixed_fleet_with_real_scrapy_redis,
                         testing::Values(fleet_case{spider_kind::crawl, "PriorityQueue"},
                                         fleet_case{spider_kind::crawl, "FifoQueue"},
                                         fleet_case{spider_kind::crawl, "LifoQueue"},
                                         fleet_case{spider_kind::plain, "PriorityQueue"},
                                         fleet_case{spider_kind::plain, "FifoQueue"},
                                         fleet_case{spider_kind::plain, "LifoQueue"},
                                         fleet_case{spider_kind::crawl, "PriorityQueue", true}),
                         case_name);

// A queue one side wrote alone, taken over by the other alone: a RedisCrawlSpider stops at
// CLOSESPIDER_PAGECOUNT with its rules' requests queued (link texts pickled as lxml's str
// subclass), and two of ours finish the crawl, each page by the rule that took its link; then
// the reverse, ours first and scrapy-redis after.
class taken_over_by_the_other_side : public testing::TestWithParam<bool> {};

TEST_P(taken_over_by_the_other_side, every_request_is_run_by_its_rule_and_nothing_set_aside) {
  constexpr std::size_t pages = 500;
  bool python_first = GetParam();
  const fleet_case fleet{spider_kind::crawl, "PriorityQueue"};
  http_server site({.site_pages = pages});
  redis_server redis;
  temp_dir dir;
  push_start_url(redis, fleet, site.url("/site/0"));
  auto run_python = [&](nlohmann::json extra) {
    auto python = python_worker(fleet, redis, std::move(extra));
    EXPECT_EQ(python->wait(300s), 0) << python->stderr_text();
    return python->stderr_text();
  };
  auto run_ours = [&](std::vector<std::string> extra) {
    auto ours = our_worker(fleet, site, redis, dir, "ours", std::move(extra));
    EXPECT_EQ(ours->wait(300s), 0) << ours->stderr_text();
  };
  std::string python_log;
  if (python_first) {
    python_log = run_python({{"CLOSESPIDER_PAGECOUNT", 100}, {"CONCURRENT_REQUESTS", 1}});
  } else {
    run_ours({"-s", "CLOSESPIDER_PAGECOUNT=100", "-s", "CONCURRENT_REQUESTS=1"});
  }
  auto queued = redis_run(redis.port(), {"ZRANGE", "site:requests", "0", "-1"}).size();
  std::cout << queued << " requests queued by the first side\n";
  EXPECT_GT(queued, 0u) << "the first side left nothing to take over";
  if (python_first) {
    run_ours({});
  } else {
    python_log = run_python(nlohmann::json::object());
  }
  auto counted = check_the_crawl(fleet, site, pages, redis, python_log);
  EXPECT_GT(python_first ? counted.by_ours : counted.by_python, pages / 2);
}

// Two sides whose rules differ: scrapy-redis's spider has two, the crawl file only the first.
// Python's own CrawlSpider and PriorityQueue queue a page's links (one for each rule); ours set
// aside the second rule's request, saying why, and crawl the first rule's.
TEST(real_scrapy_redis, a_request_of_a_rule_ours_lack_is_set_aside_never_run_by_another) {
  const fleet_case fleet{spider_kind::crawl, "PriorityQueue"};
  http_server site({.site_pages = 200});
  redis_server redis;
  temp_dir dir;
  const char* script = R"py(
import sys, redis
from scrapy.http import HtmlResponse, Request
from scrapy_redis import picklecompat
from scrapy_redis.queue import PriorityQueue
from real_scrapy_redis_spider import Site
base = sys.argv[2]
page = HtmlResponse(base + "/site/0", body=b'<a href="/site/3">3</a> <a href="/site/4">4</a>',
                    encoding="utf-8", request=Request(base + "/site/0"))
spider = Site()
queue = PriorityQueue(redis.Redis.from_url(sys.argv[1]), spider, "site:requests", picklecompat)
for request in spider._requests_to_follow(page):
    queue.push(request)
)py";
  child_process push({"/usr/bin/env",
                      "PYTHONPATH=" + scrapy_redis_source().string() + ":" +
                          crawler::fixtures::fixtures_dir().string(),
                      "SPIDER_KIND=crawl", "/usr/bin/python3", "-c", script, redis.url(),
                      site.url("")});
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  ASSERT_EQ(redis_run(redis.port(), {"ZRANGE", "site:requests", "0", "-1"}).size(), 2u);
  auto ours = our_worker(fleet, site, redis, dir, "even", {}, true);
  ASSERT_EQ(ours->wait(300s), 0) << ours->stderr_text();
  auto bad = redis_list(redis.port(), "site:requests:bad");
  ASSERT_EQ(bad.size(), 1u) << ours->stderr_text();
  EXPECT_EQ(crawler::fixtures::set_aside_json(bad[0])["reason"],
            "spider site has no rule 1 (it has 1): both sides of a fleet must declare the same "
            "rules in the same order");
  EXPECT_EQ(site.hits("/site/3"), 0u) << "run by another rule";
  EXPECT_EQ(site.hits("/site/4"), 1u);
  for (const auto& target : site.targets_asked_by(our_agent)) {
    EXPECT_EQ((target.back() - '0') % 2, 0) << target << " fetched by ours, which have no odd rule";
  }
}

INSTANTIATE_TEST_SUITE_P(real_scrapy_redis, taken_over_by_the_other_side, testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "python_first" : "ours_first";
                         });

}  // namespace
