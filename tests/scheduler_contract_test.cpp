// One contract for both schedulers, as the dupefilter backends have theirs: the memory scheduler
// and the fleet's (SCHEDULER=redis, on a real redis-server) queue each new URL once and every
// dont_filter request every time, hand out higher priorities first, count what they hold, keep
// their queue and dupefilter across a close when told to (JOBDIR, SCHEDULER_PERSIST), and hold a
// page's outcome through an outage of the Redis behind them until it can be stored. The engine
// sees nothing else of them, so whatever passes here can stand behind it.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "config/crawl_clock.h"
#include "event_loop.h"
#include "fleet.h"
#include "prioritized_request.h"
#include "redis_server.h"
#include "scheduler/scheduler.h"

namespace {

using namespace std::chrono_literals;
using crawler::request;
using crawler::fixtures::event_loop;
using crawler::fixtures::prioritized;
using crawler::fixtures::redis_server;
using crawler::fixtures::temp_dir;

// A scheduler on its own loop, driven as the engine drives it: every call on the loop.
class driven_scheduler {
 public:
  driven_scheduler(const crawler::settings& settings, event_loop& loop)
      : settings_(settings), loop_(loop) {}

  ~driven_scheduler() {
    if (scheduler_) on_loop([&] { scheduler_.reset(); });
  }

  void open() {
    on_loop([&] {
      scheduler_ = crawler::scheduler::create({settings_, stats_, "contract", loop_.executor()});
      scheduler_->on_fatal([this](const std::string& reason) {
        stopped_ = {reason, crawler::crawl_clock::now()};
      });
    });
    wait_for<std::exception_ptr>([&](auto done) {
      scheduler_->async_open([done](std::exception_ptr error) { done(error); });
    });
  }

  void close() {
    wait_for<std::exception_ptr>([&](auto done) {
      scheduler_->async_close([done](std::exception_ptr error) { done(error); });
    });
    on_loop([&] { scheduler_.reset(); });
  }

  // Queues `requests` as the outcome of the request whose lease is `parent` ("" for start
  // requests); returns how many were queued.
  std::size_t enqueue(std::vector<request> requests, const std::string& parent = "") {
    return store({.lease = parent, .requests = std::move(requests)}).get().queued;
  }

  // Hands the scheduler a page's outcome; the future is ready once the scheduler says it stored
  // (or, closing, kept) it.
  std::future<crawler::stored_outcome> store(crawler::page_outcome outcome) {
    auto stored = std::make_shared<std::promise<crawler::stored_outcome>>();
    auto future = stored->get_future();
    on_loop([&] {
      scheduler_->async_store(std::move(outcome), [stored](crawler::stored_outcome result) {
        stored->set_value(std::move(result));
      });
    });
    return future;
  }

  void begin_close() {
    on_loop([&] { scheduler_->begin_close(); });
  }

  // Why and when (on the crawl's clock) the scheduler stopped the crawl, if it did.
  std::optional<std::pair<std::string, crawler::crawl_clock::time_point>> stopped() {
    std::optional<std::pair<std::string, crawler::crawl_clock::time_point>> stopped;
    on_loop([&] { stopped = stopped_; });
    return stopped;
  }

  std::int64_t stat(const std::string& key) {
    std::int64_t value = 0;
    on_loop([&] { value = stats_.get_int(key); });
    return value;
  }

  // Takes `count` requests, waiting for them as the engine does (the fleet's arrive from Redis
  // in the background); fewer when none comes for two seconds.
  std::vector<request> take(std::size_t count) {
    std::vector<request> taken;
    auto quiet_since = std::chrono::steady_clock::now();
    while (taken.size() < count && std::chrono::steady_clock::now() - quiet_since < 2s) {
      std::optional<request> next;
      on_loop([&] { next = scheduler_->next_request(); });
      if (next) {
        taken.push_back(std::move(*next));
        quiet_since = std::chrono::steady_clock::now();
      } else {
        std::this_thread::sleep_for(5ms);
      }
    }
    return taken;
  }

  // Stores a crawled request's outcome with no new requests, as the engine does for every page.
  void settle(const request& crawled) {
    if (!crawled.lease.empty()) enqueue({}, crawled.lease);
  }

  // Queues `url`, takes it and settles it: a crawl of that one page.
  void crawl_one(const std::string& url) {
    ASSERT_EQ(enqueue({request(url)}), 1u) << url;
    auto taken = take(1);
    ASSERT_EQ(taken.size(), 1u) << url;
    settle(taken[0]);
  }

  bool has_pending_requests() {
    bool pending = false;
    on_loop([&] { pending = scheduler_->has_pending_requests(); });
    return pending;
  }

  std::size_t size() {
    std::size_t size = 0;
    on_loop([&] { size = scheduler_->size(); });
    return size;
  }
  // What the engine tells a scheduler that paces hosts once `fetched` is downloaded.
  void downloaded(const request& fetched) {
    on_loop([&] { scheduler_->record_pace(fetched, {}); });
  }

 private:
  void on_loop(const std::function<void()>& work) {
    std::promise<void> done;
    boost::asio::post(loop_.executor(), [&] {
      work();
      done.set_value();
    });
    done.get_future().get();
  }

  template <typename Error>
  void wait_for(const std::function<void(std::function<void(Error)>)>& start) {
    std::promise<void> finished;
    on_loop([&] {
      start([&finished](Error error) {
        if (error) return finished.set_exception(error);
        finished.set_value();
      });
    });
    finished.get_future().get();
  }

  const crawler::settings& settings_;
  event_loop& loop_;
  crawler::stats stats_;
  std::unique_ptr<crawler::scheduler> scheduler_;
  std::optional<std::pair<std::string, crawler::crawl_clock::time_point>> stopped_;
};

std::vector<std::string> urls_of(const std::vector<request>& requests, bool sorted = false) {
  std::vector<std::string> urls;
  for (const auto& r : requests) urls.push_back(r.url);
  if (sorted) std::sort(urls.begin(), urls.end());
  return urls;
}

// Each scheduler with what it needs: the fleet's a redis-server of its own.
class scheduler_contract : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    settings_.set("LOG_LEVEL", "ERROR");
    if (GetParam() == "redis") {
      redis_.emplace();
      settings_.set("SCHEDULER", "redis");
      settings_.set("DUPEFILTER_CLASS", "redis_set");
      settings_.set("REDIS_URL", redis_->url());
    }
  }

  // What keeps the queue and the dupefilter across a close.
  void persist() {
    if (GetParam() == "redis") {
      settings_.set("SCHEDULER_PERSIST", true);
    } else {
      settings_.set("JOBDIR", (dir_.path() / "job").string());
    }
  }

  std::optional<redis_server> redis_;
  temp_dir dir_;
  crawler::settings settings_;
  event_loop loop_;
};

TEST_P(scheduler_contract, queues_a_new_url_once_and_a_dont_filter_request_every_time) {
  driven_scheduler scheduler(settings_, loop_);
  scheduler.open();
  ASSERT_EQ(scheduler.enqueue({request{"https://a.example/"}}), 1u);
  auto start = scheduler.take(1);
  ASSERT_EQ(start.size(), 1u);

  auto again = prioritized("https://a.example/c", 0, true);
  EXPECT_EQ(scheduler.enqueue({request{"https://a.example/b"}, request{"https://a.example/"}, again,
                               again, request{"https://a.example/b"}},
                              start[0].lease),
            3u);  // b once, c twice; a was seen
  EXPECT_EQ(scheduler.size(), 3u);
  auto taken = scheduler.take(4);
  EXPECT_EQ(urls_of(taken, true),
            (std::vector<std::string>{"https://a.example/b", "https://a.example/c",
                                      "https://a.example/c"}));
  EXPECT_EQ(scheduler.size(), 0u);
  for (const auto& crawled : taken) scheduler.settle(crawled);
  scheduler.settle(start[0]);
  EXPECT_EQ(scheduler.enqueue({request{"https://a.example/b"}}), 0u);
  scheduler.close();
}

TEST_P(scheduler_contract, hands_out_higher_priorities_first) {
  driven_scheduler scheduler(settings_, loop_);
  scheduler.open();
  ASSERT_EQ(scheduler.enqueue({prioritized("https://a.example/low", -5),
                               prioritized("https://a.example/high", 10),
                               prioritized("https://a.example/middle", 0)}),
            3u);
  EXPECT_EQ(urls_of(scheduler.take(3)),
            (std::vector<std::string>{"https://a.example/high", "https://a.example/middle",
                                      "https://a.example/low"}));
  scheduler.close();
}

TEST_P(scheduler_contract, a_persisted_queue_and_dupefilter_outlive_a_close) {
  persist();
  {
    driven_scheduler first(settings_, loop_);
    first.open();
    ASSERT_EQ(first.enqueue({prioritized("https://a.example/1", 3),
                             prioritized("https://a.example/2", 2),
                             prioritized("https://a.example/3", 1)}),
              3u);
    auto crawled = first.take(1);
    ASSERT_EQ(urls_of(crawled), std::vector<std::string>{"https://a.example/1"});
    first.settle(crawled[0]);
    first.close();
  }
  driven_scheduler second(settings_, loop_);
  second.open();
  EXPECT_EQ(urls_of(second.take(3)),
            (std::vector<std::string>{"https://a.example/2", "https://a.example/3"}));
  EXPECT_EQ(second.enqueue({request{"https://a.example/1"}, request{"https://a.example/3"},
                            request{"https://a.example/4"}}),
            1u);  // only 4 is new to the dupefilter
  second.close();
}

TEST_P(scheduler_contract, a_requests_cb_kwargs_cookies_and_meta_outlive_a_close_as_they_were) {
  persist();
  request page{"https://a.example/item", "parse_item"};
  page.cb_kwargs = {{"category", "caf\u00e9"}, {"page", 2}, {"path", {"a", "b"}}, {"ok", true}};
  page.cookies = {{{"name", "currency"}, {"value", "USD"}, {"path", "/shop"}}};
  page.meta["depth"] = 3;
  {
    driven_scheduler first(settings_, loop_);
    first.open();
    ASSERT_EQ(first.enqueue({page}), 1u);
    first.close();
  }
  driven_scheduler second(settings_, loop_);
  second.open();
  auto taken = second.take(1);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].callback, "parse_item");
  EXPECT_EQ(taken[0].cb_kwargs, page.cb_kwargs);
  EXPECT_EQ(taken[0].cookies, page.cookies);
  EXPECT_EQ(taken[0].meta["depth"], 3);
  second.close();
}

TEST_P(scheduler_contract, without_persistence_a_new_crawl_starts_empty) {
  {
    driven_scheduler first(settings_, loop_);
    first.open();
    ASSERT_EQ(first.enqueue({request{"https://a.example/1"}, request{"https://a.example/2"}}), 2u);
    auto crawled = first.take(2);
    ASSERT_EQ(crawled.size(), 2u);
    for (const auto& request : crawled) first.settle(request);
    first.close();
  }
  driven_scheduler second(settings_, loop_);
  second.open();
  EXPECT_EQ(second.size(), 0u);
  EXPECT_EQ(second.enqueue({request{"https://a.example/1"}}), 1u);  // seen by nobody now
  second.close();
}

// Both schedulers behind a Redis: the fleet's queue, or a Redis dupefilter behind the memory
// queue. Redis goes away while a page's outcome is on its way: the outcome waits (its store does
// not complete, and nothing is lost), and is stored once Redis answers again. A second outage
// meets a close: the outcome is kept rather than waited for.
TEST_P(scheduler_contract, an_outcome_waits_through_an_outage_and_is_stored_after_it) {
  redis_server redis({.append_only = true});  // a restart keeps the fleet's state
  settings_.set("DUPEFILTER_CLASS", "redis_set");
  settings_.set("REDIS_URL", redis.url());
  settings_.set("REDIS_PARAMS", nlohmann::json{{"socket_timeout", 1}});
  driven_scheduler scheduler(settings_, loop_);
  scheduler.open();
  ASSERT_EQ(scheduler.enqueue({request{"https://a.example/"}}), 1u);
  auto start = scheduler.take(1);
  ASSERT_EQ(start.size(), 1u);

  redis.stop();
  auto stored = scheduler.store({.lease = start[0].lease,
                                 .requests = {request{"https://a.example/b"}},
                                 .items = {nlohmann::json{{"n", 1}}}});
  EXPECT_EQ(stored.wait_for(2500ms), std::future_status::timeout);  // waiting, not failed
  redis.start();
  ASSERT_EQ(stored.wait_for(60s), std::future_status::ready);
  auto outcome = stored.get();
  EXPECT_EQ(outcome.queued, 1u);
  EXPECT_TRUE(outcome.settled);
  EXPECT_EQ(outcome.items, (std::vector<crawler::item>{crawler::item{{"n", 1}}}));
  EXPECT_EQ(scheduler.stat("scheduler/store_outages"), 1);
  auto taken = scheduler.take(1);
  ASSERT_EQ(urls_of(taken), std::vector<std::string>{"https://a.example/b"});

  redis.stop();
  auto kept =
      scheduler.store({.lease = taken[0].lease, .requests = {request{"https://a.example/c"}}});
  EXPECT_EQ(kept.wait_for(1500ms), std::future_status::timeout);
  scheduler.begin_close();  // its last try fails too: kept, not waited for
  ASSERT_EQ(kept.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(kept.get().settled);
  EXPECT_EQ(scheduler.stat("scheduler/kept_unchecked"), 1);
  redis.start();
  scheduler.close();
}

// `command`'s reply on `redis`, as text (a status, a string or an error).
std::string redis_reply(const redis_server& redis, const char* command) {
  auto* context = redisConnect("127.0.0.1", redis.port());
  if (!context || context->err) throw std::runtime_error("cannot connect to the test's Redis");
  auto* reply = static_cast<redisReply*>(redisCommand(context, command));
  std::string text = reply && reply->str ? reply->str : "";
  freeReplyObject(reply);
  redisFree(context);
  return text;
}

// The number after `field` in what INFO `section` says, or 0 if it says nothing of it.
long info_number(const redis_server& redis, const char* section, const std::string& field) {
  auto info = redis_reply(redis, (std::string("INFO ") + section).c_str());
  auto at = info.find(field);
  return at == std::string::npos ? 0 : std::stol(info.substr(at + field.size()));
}

// How many commands `redis` has answered with an error: one more for each try that failed.
long error_replies(const redis_server& redis) {
  return info_number(redis, "stats", "total_error_replies:");
}

// REDIS_FAILURE_TIMEOUT runs on the crawl's clock, which this test drives. Outcomes that Redis
// refuses (a replica's READONLY) are tried again with a backoff. The last try comes when the
// timeout is up, not a backoff later; when it fails too, the scheduler stops the crawl with
// redis_unavailable, and the close keeps the outcome.
TEST_P(scheduler_contract, a_store_refused_for_redis_failure_timeout_stops_the_crawl_at_that_time) {
  using namespace std::chrono;
  crawler::driven_clock clock;
  redis_server redis;
  settings_.set("DUPEFILTER_CLASS", "redis_set");
  settings_.set("REDIS_URL", redis.url());
  settings_.set("REDIS_FAILURE_TIMEOUT", 600);
  driven_scheduler scheduler(settings_, loop_);
  scheduler.open();
  ASSERT_EQ(scheduler.enqueue({request{"https://a.example/"}}), 1u);
  auto start = scheduler.take(1);
  ASSERT_EQ(start.size(), 1u);

  redis_reply(redis, "REPLICAOF 127.0.0.1 1");  // no master there: read-only for good
  auto first_try = crawler::crawl_clock::now();
  auto errors = error_replies(redis);
  auto stored =
      scheduler.store({.lease = start[0].lease, .requests = {request{"https://a.example/b"}}});
  // Until Redis has refused what is asked of it `tries` more times, and the scheduler has heard.
  auto wait_for_refusals = [&](long tries) {
    auto until = steady_clock::now() + 30s;
    while (error_replies(redis) < errors + tries && steady_clock::now() < until) {
      std::this_thread::sleep_for(5ms);
    }
    std::this_thread::sleep_for(200ms);
    errors = error_replies(redis);
  };
  // The store's first try refused (a fleet worker's takes are refused beside it).
  for (auto until = steady_clock::now() + 30s;
       scheduler.stat("scheduler/store_outages") == 0 && steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(scheduler.stat("scheduler/store_outages"), 1);
  EXPECT_EQ(stored.wait_for(0s), std::future_status::timeout);
  errors = error_replies(redis);
  clock.advance(600s - milliseconds(1));  // a try, refused: one millisecond of the timeout left
  wait_for_refusals(1);
  EXPECT_EQ(scheduler.stopped(), std::nullopt);
  clock.advance(milliseconds(1));  // the last try
  for (auto until = steady_clock::now() + 30s;
       !scheduler.stopped() && steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  auto stopped = scheduler.stopped();
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->first, "redis_unavailable");
  EXPECT_EQ(duration_cast<milliseconds>(stopped->second - first_try), 600s);
  EXPECT_EQ(stored.wait_for(0s), std::future_status::timeout);

  scheduler.begin_close();  // the engine's answer to the stop: a last try, and the outcome kept
  ASSERT_EQ(stored.wait_for(30s), std::future_status::ready);
  EXPECT_FALSE(stored.get().settled);
  EXPECT_EQ(scheduler.stat("scheduler/kept_unchecked"), 1);
  redis_reply(redis, "REPLICAOF NO ONE");
  scheduler.close();
}

// REDIS_FAILURE_TIMEOUT=0 waits for ever: refused outcomes are tried again after a backoff that
// starts at 1 s (not a tick sooner, and with no try in between), and no outage, a day included,
// stops the crawl. The memory scheduler's: a fleet worker's own polls would fail beside them.
TEST(memory_scheduler, with_no_redis_failure_timeout_refused_outcomes_wait_for_ever) {
  using namespace std::chrono;
  crawler::driven_clock clock;
  redis_server redis;
  crawler::settings settings;
  settings.set("LOG_LEVEL", "ERROR");
  settings.set("DUPEFILTER_CLASS", "redis_set");
  settings.set("REDIS_URL", redis.url());
  settings.set("REDIS_FAILURE_TIMEOUT", 0);
  event_loop loop;
  driven_scheduler scheduler(settings, loop);
  scheduler.open();
  redis_reply(redis, "REPLICAOF 127.0.0.1 1");
  auto refused = error_replies(redis);
  auto stored = scheduler.store({.requests = {request{"https://a.example/"}}});
  // How many more tries Redis has refused, once it has refused `expected` more or 300 ms of the
  // machine's time have passed since the last.
  auto more_refusals = [&](long expected) {
    auto until = steady_clock::now() + 30s;
    while (error_replies(redis) < refused + expected && steady_clock::now() < until) {
      std::this_thread::sleep_for(5ms);
    }
    std::this_thread::sleep_for(300ms);
    auto now = error_replies(redis);
    return now - std::exchange(refused, now);
  };
  EXPECT_EQ(more_refusals(1), 1);
  clock.advance(1s - milliseconds(1));
  EXPECT_EQ(more_refusals(0), 0);
  clock.advance(milliseconds(1));
  EXPECT_EQ(more_refusals(1), 1);
  clock.advance(24h);
  EXPECT_EQ(more_refusals(1), 1);
  EXPECT_EQ(scheduler.stopped(), std::nullopt);
  EXPECT_EQ(stored.wait_for(0s), std::future_status::timeout);
  redis_reply(redis, "REPLICAOF NO ONE");
  clock.advance(24h);
  ASSERT_EQ(stored.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(stored.get().queued, 1u);
  scheduler.close();
}

// Where the two part: every worker of a fleet yields the same start requests, dont_filter as
// Scrapy's start_requests makes them, and the fleet crawls each once; the memory scheduler queues
// a dont_filter start request every time, as Scrapy's does.
// A fleet worker's settings on `redis`, with redis_set.
crawler::settings fleet_settings(const redis_server& redis) {
  crawler::settings settings;
  settings.set("LOG_LEVEL", "ERROR");
  settings.set("SCHEDULER", "redis");
  settings.set("DUPEFILTER_CLASS", "redis_set");
  settings.set("REDIS_URL", redis.url());
  return settings;
}

TEST(fleet_scheduler, start_requests_every_worker_yields_are_queued_once) {
  redis_server redis;
  auto settings = fleet_settings(redis);
  event_loop loop;
  driven_scheduler first(settings, loop), second(settings, loop);
  first.open();
  second.open();
  auto start = prioritized("https://a.example/", 0, true);
  EXPECT_EQ(first.enqueue({start}), 1u);
  EXPECT_EQ(second.enqueue({start}), 0u);
  EXPECT_EQ(first.enqueue({start}), 0u);
  second.close();
  first.close();

  crawler::settings memory;
  memory.set("LOG_LEVEL", "ERROR");
  driven_scheduler alone(memory, loop);
  alone.open();
  EXPECT_EQ(alone.enqueue({start}), 1u);
  EXPECT_EQ(alone.enqueue({start}), 1u);
  alone.close();
}

// This process's peak resident memory, in MB.
long peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

// `key` on `redis` made a string of 100 MB (zeros, then "x"), as another program could write it.
void fill_100_mb(const redis_server& redis, const std::string& key) {
  auto* context = redisConnect("127.0.0.1", redis.port());
  ASSERT_TRUE(context && !context->err);
  auto* reply = static_cast<redisReply*>(
      redisCommand(context, "SETRANGE %s %d x", key.c_str(), 100 * 1024 * 1024 - 1));
  ASSERT_TRUE(reply && reply->type == REDIS_REPLY_INTEGER);
  freeReplyObject(reply);
  redisFree(context);
}

// Every string a fleet worker reads at its start from keys others may write (the number of
// shards, the layout's version, a Bloom filter's parameters) is read only as far as it can be
// right: each 100 MB long, the worker's memory grows by far less than that, and it says what is
// wrong (or, for parameters over an empty filter, sets them aside and opens).
TEST(fleet_scheduler, values_of_100_mb_where_a_worker_reads_at_start_are_not_read_whole) {
  for (const std::string suffix : {"requests:shards", "requests:layout", "bloomfilter:params"}) {
    redis_server redis;
    auto settings = fleet_settings(redis);
    settings.set("DUPEFILTER_CLASS", "redis_bitmap");
    settings.set("BLOOMFILTER_BIT", 20);
    fill_100_mb(redis, "contract:" + suffix);
    event_loop loop;
    auto before = peak_rss_mb();
    driven_scheduler worker(settings, loop);
    std::string refused;
    try {
      worker.open();
    } catch (const std::exception& error) {
      refused = error.what();
    }
    EXPECT_LT(peak_rss_mb() - before, 50) << suffix << " was read whole";
    if (suffix == "bloomfilter:params") {
      EXPECT_EQ(refused, "");
      worker.close();
    } else {
      EXPECT_NE(refused.find(suffix == "requests:shards" ? "shards" : "laid out as version"),
                std::string::npos)
          << suffix << ": " << refused;
      EXPECT_LT(refused.size(), 2000u) << suffix;
    }
  }
}

// Runs `lua` on `redis` (EVAL, no keys): values made inside Redis, so the test's own memory never
// holds them.
void eval_on(const redis_server& redis, const std::string& lua) {
  auto* context = redisConnect("127.0.0.1", redis.port());
  ASSERT_TRUE(context && !context->err);
  auto* reply = static_cast<redisReply*>(redisCommand(context, "EVAL %s 0", lua.c_str()));
  ASSERT_TRUE(reply && reply->type != REDIS_REPLY_ERROR) << (reply ? reply->str : "no reply");
  freeReplyObject(reply);
  redisFree(context);
}

// The same, for the values a worker meets as it crawls: a queue entry, a lease record whose
// deadline passed, a start URL, the entry counter and a delivery count, each 100 MB long. The
// worker's memory grows by far less than that; the value is set aside (or, for the counter,
// restarted), and the crawl goes on: the request queued beside it is taken.
TEST(fleet_scheduler, values_of_100_mb_where_a_worker_reads_as_it_crawls_are_not_read_whole) {
  const std::string big = "string.rep('x', 100 * 1024 * 1024)";
  const std::vector<std::pair<std::string, std::string>> places{
      {"a queue entry",
       "redis.call('ZADD', 'contract:requests', 0, '0000000000000001|{\"url\":\"' .. " + big +
           ")"},
      {"a lease record",
       "redis.call('HSET', 'contract:requests:leased', '0000000000000002', 'gone|0|' .. " + big +
           "); redis.call('ZADD', 'contract:requests:deadlines', 0, '0000000000000002')"},
      {"a start URL", "redis.call('LPUSH', 'contract:start_urls', 'https://a.example/' .. " + big +
                          ")"},
      {"the entry counter", "redis.call('SET', 'contract:requests:seq', " + big + ")"},
      {"a delivery count",
       "redis.call('HSET', 'contract:requests:deliveries', '0000000000000001', " + big + ")"}};
  for (const auto& [place, lua] : places) {
    SCOPED_TRACE(place);
    redis_server redis;
    auto settings = fleet_settings(redis);
    // Putting a 100 MB lease back and setting it aside keeps Redis busy: on a machine as loaded
    // as CI's, more than the 30 s a command may take, and the retried store then counted the
    // request it had stored as its own duplicate. What this test pins is memory, not that time.
    settings.set("REDIS_PARAMS", nlohmann::json{{"socket_timeout", 300}});
    eval_on(redis, lua);
    event_loop loop;
    auto before = peak_rss_mb();
    driven_scheduler worker(settings, loop);
    worker.open();
    ASSERT_EQ(worker.enqueue({request("https://b.example/next")}), 1u);
    // Setting a 100 MB record aside copies it inside Redis: on a loaded machine that can take
    // longer than take()'s two quiet seconds, so the request is waited for up to a minute.
    std::vector<request> taken;
    for (auto until = std::chrono::steady_clock::now() + 60s;
         taken.empty() && std::chrono::steady_clock::now() < until;) {
      taken = worker.take(1);
    }
    EXPECT_LT(peak_rss_mb() - before, 50) << place << " was read whole";
    ASSERT_EQ(taken.size(), 1u);
    EXPECT_EQ(taken[0].url, "https://b.example/next");
    EXPECT_TRUE(worker.take(1).empty()) << "the 100 MB value ran as a request";
    worker.settle(taken[0]);
    worker.close();
  }
}

// SCHEDULER_SHARDS: the last worker to close deletes every shard's keys, then the fleet's shard
// count and layout, also when a shard never held a request and has no keys to delete (four shards
// and one URL). What stays is each shard's epoch and the fleet's stats.
TEST(fleet_scheduler, the_last_worker_deletes_every_shard_even_one_that_was_never_used) {
  redis_server redis;
  auto settings = fleet_settings(redis);
  settings.set("SCHEDULER_SHARDS", 4);
  event_loop loop;
  driven_scheduler worker(settings, loop);
  worker.open();
  worker.crawl_one("https://a.example/");
  EXPECT_EQ(crawler::fixtures::redis_run(redis.port(), {"GET", "contract:requests:shards"}),
            std::vector<std::string>{"4"});
  worker.close();
  auto kept = crawler::fixtures::redis_run(redis.port(), {"KEYS", "*"});
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{
                      "contract:0:requests:epoch", "contract:1:requests:epoch",
                      "contract:2:requests:epoch", "contract:3:requests:epoch", "contract:stats"}));
}

// MAX_IDLE_TIME_BEFORE_CLOSE runs on the crawl's clock, which this test drives: a worker has
// requests pending until the fleet has been idle for that long, not a millisecond less, counted
// from its last take. (Its polls, which look whether the fleet is idle, keep the machine's time.)
TEST(fleet_scheduler, the_fleet_is_done_after_max_idle_time_before_close_from_its_last_take) {
  using namespace std::chrono;
  crawler::driven_clock clock;
  redis_server redis;
  auto settings = fleet_settings(redis);
  settings.set("MAX_IDLE_TIME_BEFORE_CLOSE", 600);
  event_loop loop;
  driven_scheduler worker(settings, loop);
  worker.open();
  // Until the worker has looked twice more whether the fleet is idle, on the clock as it stands
  // now: each look asks whether its queue and its start URLs exist, two EXISTS, and the second
  // look is asked for after the first was answered.
  auto after_two_looks = [&] {
    auto looked = info_number(redis, "commandstats", "cmdstat_exists:calls=");
    for (auto until = steady_clock::now() + 30s;
         info_number(redis, "commandstats", "cmdstat_exists:calls=") < looked + 4 &&
         steady_clock::now() < until;) {
      std::this_thread::sleep_for(5ms);
    }
  };
  clock.advance(300s);
  worker.crawl_one("https://a.example/");
  clock.advance(600s - milliseconds(1));
  after_two_looks();
  EXPECT_TRUE(worker.has_pending_requests()) << "done before 600 s idle";
  clock.advance(milliseconds(1));
  for (auto until = steady_clock::now() + 30s;
       worker.has_pending_requests() && steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_FALSE(worker.has_pending_requests()) << "not done after 600 s idle";
  worker.close();
}

// The host frontier's worker takes no more than it can download at once: a page downloaded and
// still being parsed holds its download slot (only one whose outcome waits for its store leaves
// it, engine.h), so a lease taken then would wait, and its host's turn would come late.
TEST(fleet_scheduler, host_frontier_takes_no_more_while_its_pages_are_parsed) {
  redis_server redis;
  auto settings = fleet_settings(redis);
  settings.set("SCHEDULER_QUEUE_CLASS", "host");
  settings.set("CONCURRENT_REQUESTS", 2);
  event_loop loop;
  driven_scheduler worker(settings, loop);
  worker.open();
  std::vector<request> starts;
  for (int host = 0; host < 8; ++host) {
    starts.emplace_back("https://host" + std::to_string(host) + ".example/");
  }
  ASSERT_EQ(worker.enqueue(starts), 8u);
  auto first = worker.take(2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(worker.take(1).empty()) << "took more than it could download";
  for (const auto& fetched : first) worker.downloaded(fetched);
  EXPECT_TRUE(worker.take(1).empty()) << "took while its pages were parsed";
  for (const auto& page : first) worker.settle(page);
  EXPECT_EQ(worker.take(2).size(), 2u);
  worker.close();
}

INSTANTIATE_TEST_SUITE_P(each_scheduler, scheduler_contract, testing::Values("memory", "redis"),
                         [](const auto& info) { return info.param; });

}  // namespace
