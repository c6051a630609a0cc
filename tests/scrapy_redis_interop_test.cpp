// Our workers and scrapy-redis's on one queue, checked against Python itself: Debian's Scrapy
// reads what we write (pickle.loads + request_from_dict) and writes what we read, and a Python
// process playing a scrapy-redis worker (fixtures/scrapy_redis_peer.py) crawls one site with two
// of ours. The one suite that runs Python; it needs python3-scrapy and python3-redis
// (.ci/packages.txt), and fails without them.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "event_loop.h"
#include "fleet.h"
#include "http_server.h"
#include "redis/client.h"
#include "redis/endpoint.h"
#include "redis_server.h"
#include "scheduler/fleet/pickle.h"
#include "scheduler/fleet/redis_queue.h"
#include "scheduler/fleet/scrapy_request.h"
#include "tree_paths.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::fleet_worker;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_list;
using crawler::fixtures::redis_run;
using crawler::fixtures::redis_server;
using crawler::fixtures::temp_dir;

const std::string python = "/usr/bin/python3";
const std::string peer = (crawler::fixtures::fixtures_dir() / "scrapy_redis_peer.py").string();

// The fleet's queue as our workers see it with scrapy-redis's settings.
struct pickled_queue {
  redis_server server;
  crawler::fixtures::event_loop loop;
  std::shared_ptr<crawler::redis::client> client = crawler::redis::client::create(
      loop.executor(), crawler::redis::parse_redis_url(server.url()));
  crawler::redis_queue queue{
      client,
      {.key = "site:requests", .form = crawler::queue_entry_form::pickle, .worker = "cpp-worker"}};

  void push(const std::vector<crawler::request>& requests) {
    std::promise<void> done;
    queue.async_push(requests, nullptr, crawler::dedup::fingerprint_scheme::scrapy_redis_0_8,
                     [&](std::exception_ptr error, crawler::settle_result) {
                       if (error) return done.set_exception(error);
                       done.set_value();
                     });
    done.get_future().get();
  }
  std::vector<crawler::leased_request> take() {
    std::promise<std::vector<crawler::leased_request>> taken;
    queue.async_take(100, [&](std::exception_ptr error, std::vector<crawler::leased_request> got) {
      if (error) return taken.set_exception(error);
      taken.set_value(std::move(got));
    });
    return taken.get_future().get();
  }
};

// What Python's Scrapy makes of each entry, by URL.
std::map<std::string, nlohmann::json> as_python_reads_them(const redis_server& server) {
  child_process dump({python, peer, "dump", server.url(), "site:requests"});
  EXPECT_EQ(dump.wait(), 0) << dump.stderr_text();
  std::map<std::string, nlohmann::json> out;
  std::istringstream lines(dump.stdout_text());
  for (std::string line; std::getline(lines, line);) {
    auto request = nlohmann::json::parse(line);
    out[request["url"].get<std::string>()] = request;
  }
  return out;
}

TEST(scrapy_redis_interop, requests_we_queue_are_the_same_requests_to_python) {
  pickled_queue fleet;
  crawler::request get{"http://127.0.0.1:1/get?b=2&a=1", "parse_item"};
  get.meta = {{"depth", 2}, {"tags", {"x", 1.5, nullptr}}};
  get.priority = 5;
  crawler::request post{"http://127.0.0.1:1/search"};
  post.method = "POST";
  post.body = "q=caf%C3%A9&page=2";
  post.headers = {
      {"Content-Type", "application/x-www-form-urlencoded"}, {"X-A", "1"}, {"X-A", "2"}};
  post.errback = "on_error";
  post.dont_filter = true;
  // A FormRequest scrapy-redis queued, read and written back by one of ours (a retry, a release).
  crawler::request form{"http://127.0.0.1:1/form"};
  form.method = "POST";
  form.meta[std::string(crawler::scrapy_request_meta_key)] = {
      {"_class", "scrapy.http.request.form.FormRequest"}};
  form.cb_kwargs = {{"page", 7}};
  fleet.push({get, post, form});

  auto read = as_python_reads_them(fleet.server);
  ASSERT_EQ(read.size(), 3u);
  const auto& got = read[get.url];
  EXPECT_EQ(got["class"], "Request");
  EXPECT_EQ(got["method"], "GET");
  EXPECT_EQ(got["callback"], "parse_item");
  EXPECT_EQ(got["errback"], nullptr);
  EXPECT_EQ(got["meta"], get.meta);
  EXPECT_EQ(got["priority"], 5);
  EXPECT_EQ(got["score"], -5.0);  // PriorityQueue's score: -priority
  EXPECT_EQ(got["dont_filter"], false);
  const auto& posted = read[post.url];
  EXPECT_EQ(posted["method"], "POST");
  EXPECT_EQ(posted["body"], post.body);
  EXPECT_EQ(posted["headers"],
            (nlohmann::json{{"Content-Type", {"application/x-www-form-urlencoded"}},
                            {"X-A", {"1", "2"}}}));
  EXPECT_EQ(posted["callback"], nullptr);  // the spider's parse
  EXPECT_EQ(posted["errback"], "on_error");
  EXPECT_EQ(posted["dont_filter"], true);
  const auto& formed = read[form.url];
  EXPECT_EQ(formed["class"], "FormRequest");
  EXPECT_EQ(formed["cb_kwargs"], (nlohmann::json{{"page", 7}}));
  EXPECT_EQ(formed["meta"], nlohmann::json::object());  // the carried members are not meta there
}

TEST(scrapy_redis_interop, requests_python_queues_are_the_same_requests_here) {
  pickled_queue fleet;
  child_process push({python, peer, "push", fleet.server.url(), "site:requests"});
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  std::map<std::string, crawler::request> taken;
  for (auto& leased : fleet.take()) taken[leased.request.url] = std::move(leased.request);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(fleet.queue.bad(), 0u);

  const auto& first = taken["http://127.0.0.1:1/from-python?a=1"];
  EXPECT_EQ(first.callback, "parse_item");
  EXPECT_EQ(first.priority, 3);
  EXPECT_EQ(first.meta["depth"], 3);
  EXPECT_EQ(first.meta["tags"], (nlohmann::json{"x", "y"}));
  EXPECT_EQ(first.cb_kwargs, (nlohmann::json{{"page", 7}}));  // the callback's, as in Scrapy
  EXPECT_EQ(first.origin, crawler::request_origin::shared);

  const auto& login = taken["http://127.0.0.1:1/login"];
  EXPECT_EQ(login.method, "POST");
  EXPECT_EQ(login.body, "user=ann&q=caf%C3%A9");
  EXPECT_EQ(login.errback, "on_error");
  EXPECT_EQ(crawler::find_header(login.headers, "content-type"),
            "application/x-www-form-urlencoded");
  EXPECT_EQ(login.meta[std::string(crawler::scrapy_request_meta_key)]["_class"],
            "scrapy.http.request.form.FormRequest");

  const auto& api = taken["http://127.0.0.1:1/api"];
  EXPECT_EQ(api.body, R"({"k": [1, 2]})");
  EXPECT_TRUE(api.dont_filter);

  // Written back as they were read (what a release or a retry writes): Python reads the same.
  redis_run(fleet.server.port(), {"DEL", "site:requests"});
  std::vector<crawler::request> again;
  for (const auto& [url, request] : taken) again.push_back(request);
  fleet.push(again);
  auto read = as_python_reads_them(fleet.server);
  EXPECT_EQ(read["http://127.0.0.1:1/login"]["class"], "FormRequest");
  EXPECT_EQ(read["http://127.0.0.1:1/api"]["class"], "JsonRequest");
  EXPECT_EQ(read["http://127.0.0.1:1/from-python?a=1"]["cb_kwargs"], (nlohmann::json{{"page", 7}}));
  EXPECT_EQ(read["http://127.0.0.1:1/from-python?a=1"]["callback"], "parse_item");
}

// The acceptance's mixed fleet: a scrapy-redis worker and two of ours with the settings a
// scrapy-redis project has, on one queue and one dupefilter. Every page once, each side a share.
TEST(mixed_fleet, a_scrapy_redis_worker_and_two_of_ours_share_one_queue_and_crawl_each_page_once) {
  constexpr std::size_t pages = 300;
  http_server site({.site_pages = pages, .page_delay_ms = 10});
  redis_server redis;
  temp_dir dir;
  std::vector<std::string> settings{"-s", "SCHEDULER=scrapy_redis.scheduler.Scheduler",
                                    "-s", "SCHEDULER_QUEUE_CLASS=scrapy_redis.queue.PriorityQueue",
                                    "-s", "CONCURRENT_REQUESTS=2",
                                    "-s", "SCHEDULER_PERSIST=true",
                                    // copied from scrapy-redis's settings: warned about, ignored
                                    "-s", "SCHEDULER_IDLE_BEFORE_CLOSE=10",
                                    "-L", "WARNING"};
  child_process python_worker(
      {python, peer, "crawl", redis.url(), "site", (dir.path() / "python.txt").string()});
  crawler::fixtures::wait_until(
      [&] { return std::filesystem::exists(dir.path() / "python.txt.ready"); },
      "the Python worker to start");
  auto ours_a = fleet_worker(site, redis, dir.path() / "a.jsonl",
                             "scrapy_redis.dupefilter.RFPDupeFilter", settings);
  auto ours_b = fleet_worker(site, redis, dir.path() / "b.jsonl",
                             "scrapy_redis.dupefilter.RFPDupeFilter", settings);
  ASSERT_EQ(ours_a->wait(), 0) << ours_a->stderr_text();
  ASSERT_EQ(ours_b->wait(), 0) << ours_b->stderr_text();
  ASSERT_EQ(python_worker.wait(), 0) << python_worker.stderr_text();
  EXPECT_NE(ours_a->stderr_text().find("SCHEDULER_IDLE_BEFORE_CLOSE (scrapy-redis's blocking-pop "
                                       "timeout) has no effect here"),
            std::string::npos)
      << ours_a->stderr_text();

  for (std::size_t page = 0; page < pages; ++page) {
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  std::ifstream fetched(dir.path() / "python.txt");
  std::size_t by_python = 0;
  for (std::string line; std::getline(fetched, line);) by_python += !line.empty();
  auto count_lines = [](const std::filesystem::path& path) {
    std::ifstream in(path);
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  };
  auto by_ours = count_lines(dir.path() / "a.jsonl") + count_lines(dir.path() / "b.jsonl");
  EXPECT_EQ(by_python + by_ours, pages);
  std::cout << "pages crawled: " << by_python << " by the Python worker, " << by_ours
            << " by ours\n";
  EXPECT_GE(by_python, pages / 20) << "the Python worker crawled " << by_python;
  EXPECT_GE(by_ours, pages / 20) << "ours crawled " << by_ours;
  EXPECT_TRUE(redis_list(redis.port(), "site:requests:bad").empty());
  // One fingerprint per page: both sides computed scrapy-redis's dupefilter's.
  EXPECT_EQ(redis_list(redis.port(), "site:dupefilter", "SMEMBERS").size(), pages);
}

}  // namespace
