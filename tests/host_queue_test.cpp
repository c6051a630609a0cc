// The host frontier of one process (SCHEDULER_QUEUE_CLASS = "host", SCHEDULER=memory), on a clock
// the test moves: turns by host, delays, limits, holds.
#include "scheduler/host_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using crawler::host_queue;
using crawler::queue_order;
using crawler::request;

struct fake_clock {
  host_queue::clock::time_point now{};
  std::function<host_queue::clock::time_point()> function() {
    return [this] { return now; };
  }
};

request page(const std::string& host, int n, int priority = 0) {
  request r{"http://" + host + "/" + std::to_string(n)};
  r.priority = priority;
  return r;
}

// Every request pop() gives now, by URL.
std::vector<std::string> pop_all(host_queue& queue) {
  std::vector<std::string> urls;
  while (auto next = queue.pop()) urls.push_back(next->url);
  return urls;
}

TEST(host_queue, gives_each_host_one_turn_per_delay_and_says_when_the_next_is_due) {
  fake_clock clock;
  host_queue queue(queue_order::fifo, {.limit = 8, .delay = 0.5, .randomize = false},
                   clock.function());
  for (int i = 0; i < 3; ++i) {
    queue.push(page("a.test", i));
    queue.push(page("b.test", i));
  }
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://a.test/0", "http://b.test/0"}));
  ASSERT_TRUE(queue.next_due());
  EXPECT_EQ(*queue.next_due(), clock.now + 500ms);
  clock.now += 499ms;
  EXPECT_TRUE(pop_all(queue).empty());
  clock.now += 1ms;
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://a.test/1", "http://b.test/1"}));
  EXPECT_EQ(queue.size(), 2u);
}

TEST(host_queue, a_host_at_its_limit_waits_for_one_of_its_requests_to_be_done) {
  fake_clock clock;
  host_queue queue(queue_order::lifo, {.limit = 2, .delay = 0, .randomize = false},
                   clock.function());
  for (int i = 0; i < 4; ++i) queue.push(page("slow.test", i));
  queue.push(page("fast.test", 0));
  // Turns alternate; depth-first within the host; the other host is not kept waiting behind it.
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://slow.test/3", "http://fast.test/0",
                                                      "http://slow.test/2"}));
  EXPECT_FALSE(queue.next_due());  // nothing waits for a time: slow.test waits for room
  queue.done("slow.test");
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://slow.test/1"}));
}

// One at a time (CONCURRENT_REQUESTS_PER_DOMAIN 1): each request's done makes room for the next,
// down to the last; a done for a host with nothing running changes nothing.
TEST(host_queue, one_at_a_time_each_done_makes_room_for_the_next) {
  fake_clock clock;
  host_queue queue(queue_order::fifo, {.limit = 1, .delay = 0, .randomize = false},
                   clock.function());
  for (int i = 0; i < 3; ++i) queue.push(page("one.test", i));
  queue.done("one.test");  // nothing running yet: no extra room
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://one.test/0"}));
  for (int i = 1; i < 3; ++i) {
    queue.done("one.test");
    EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://one.test/" + std::to_string(i)}));
  }
}

TEST(host_queue, priority_comes_first_within_a_host) {
  fake_clock clock;
  host_queue queue(queue_order::fifo, {.limit = 0, .delay = 0, .randomize = false},
                   clock.function());
  queue.push(page("a.test", 0));
  queue.push(page("a.test", 1, 5));
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://a.test/1", "http://a.test/0"}));
}

TEST(host_queue, a_hold_and_a_reported_delay_pace_the_host_from_then_on) {
  fake_clock clock;
  host_queue queue(queue_order::fifo, {.limit = 8, .delay = 0, .randomize = false},
                   clock.function());
  for (int i = 0; i < 3; ++i) queue.push(page("busy.test", i));
  for (int i = 0; i < 3; ++i) queue.push(page("calm.test", i));
  auto first = pop_all(queue);
  ASSERT_EQ(first.size(), 6u);  // no delay, no limit reached: everything at once
  for (int i = 3; i < 5; ++i) {
    queue.push(page("busy.test", i));
    queue.push(page("calm.test", i));
  }
  queue.set_pace("busy.test", {.hold = 30});  // a 429 with Retry-After: 30
  queue.set_pace("calm.test", {.delay = 2.0});  // a robots.txt Crawl-delay: 2
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://calm.test/3"}));
  clock.now += 2s;
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://calm.test/4"}));
  clock.now += 28s;
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://busy.test/3", "http://busy.test/4"}));
}

TEST(host_queue, a_host_that_ran_out_keeps_its_delay_for_the_next_request) {
  fake_clock clock;
  host_queue queue(queue_order::fifo, {.limit = 8, .delay = 1, .randomize = false},
                   clock.function());
  queue.push(page("a.test", 0));
  ASSERT_EQ(pop_all(queue).size(), 1u);
  queue.done("a.test");
  clock.now += 400ms;
  queue.push(page("a.test", 1));  // found on the page just crawled
  EXPECT_TRUE(pop_all(queue).empty());
  clock.now += 600ms;
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://a.test/1"}));
}

// A host that runs out twice: the first rest, ended early by a new request, must not make the
// host forgotten in the middle of the second, whose delay a new request still waits out.
TEST(host_queue, a_host_that_ran_out_twice_keeps_its_second_delay) {
  fake_clock clock;
  host_queue queue(queue_order::fifo, {.limit = 8, .delay = 1, .randomize = false},
                   clock.function());
  queue.push(page("a.test", 0));
  ASSERT_EQ(pop_all(queue).size(), 1u);  // at 0 s: due again at 1 s
  queue.done("a.test");
  clock.now += 500ms;
  queue.push(page("a.test", 1));
  clock.now += 500ms;
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://a.test/1"}));  // at 1 s
  queue.done("a.test");  // due again at 2 s
  clock.now += 100ms;
  queue.push(page("b.test", 0));  // another host's turn passes the end of the first rest
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://b.test/0"}));
  queue.push(page("a.test", 2));
  EXPECT_TRUE(pop_all(queue).empty()) << "a.test fetched 0.1 s after its last fetch";
  clock.now += 900ms;
  EXPECT_EQ(pop_all(queue), (std::vector<std::string>{"http://a.test/2"}));
}

TEST(host_queue, randomized_delays_fall_between_half_and_one_and_a_half_times_the_delay) {
  fake_clock clock;
  host_queue queue(queue_order::fifo, {.limit = 8, .delay = 1, .randomize = true},
                   clock.function());
  std::set<long long> waits;
  for (int i = 0; i < 200; ++i) queue.push(page("a.test", i));
  for (int i = 0; i < 199; ++i) {
    ASSERT_TRUE(queue.pop());
    queue.done("a.test");
    auto wait = *queue.next_due() - clock.now;
    EXPECT_GE(wait, 500ms);
    EXPECT_LE(wait, 1500ms);
    waits.insert(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
    clock.now += wait;
  }
  EXPECT_GT(waits.size(), 100u);
}

TEST(host_queue, for_each_rebuilds_every_hosts_queue_in_its_order) {
  fake_clock clock;
  host_queue queue(queue_order::lifo, {.limit = 0, .delay = 0, .randomize = false},
                   clock.function());
  for (int i = 0; i < 3; ++i) {
    queue.push(page("a.test", i));
    queue.push(page("b.test", i, i % 2));
  }
  host_queue copy(queue_order::lifo, {.limit = 0, .delay = 0, .randomize = false},
                  clock.function());
  queue.for_each([&](const request& r) { copy.push(r); });
  auto by_host = [](std::vector<std::string> urls) {
    std::map<std::string, std::vector<std::string>> hosts;
    for (auto& url : urls) hosts[url.substr(7, 6)].push_back(url);
    return hosts;
  };
  EXPECT_EQ(by_host(pop_all(copy)), by_host(pop_all(queue)));
}

}  // namespace
