// How gently the crawl treats a site, against a real loopback HTTP server: DOWNLOAD_DELAY and its
// randomness, concurrency per domain and per IP, AutoThrottle, robots.txt.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/crawl_clock.h"
#include "crawl_fixture.h"
#include "crawler/downloader.h"
#include "crawler/robots_gate.h"
#include "refusing_port.h"

namespace {

using namespace crawler::fixtures;
using std::chrono::seconds;

// Runs `io` until its loop has looked at the crawl's clock once more: every timer due by now has
// fired (a probe due now fires in the same pass), and what those timers started has started.
void look_at_clock(boost::asio::io_context& io) {
  crawler::crawl_timer probe(io);
  probe.expires_at(crawler::crawl_clock::now());
  bool looked = false;
  probe.async_wait([&](boost::system::error_code) { looked = true; });
  while (!looked) io.run_one();
  io.poll();
}

// A slot's first download owes no delay, however near the clock is to its epoch (a machine
// booted a second ago: the epoch of the machine's monotonic clock is its boot). The next one
// waits the whole DOWNLOAD_DELAY: not at 599 s, at 600 s.
TEST(downloader, a_new_slot_starts_its_first_download_at_once_a_second_after_boot) {
  http_server server;
  crawler::driven_clock clock(seconds(1));
  boost::asio::io_context io;
  crawler::settings settings;
  settings.set("DOWNLOAD_DELAY", 600);
  settings.set("RANDOMIZE_DOWNLOAD_DELAY", false);
  crawler::stats stats;
  crawler::downloader downloader(io.get_executor(), settings, stats);
  std::size_t done = 0;
  for (const char* path : {"/s?wd=1", "/s?wd=2"}) {
    downloader.fetch(get(server.url(path)), [&](crawler::download_result) { ++done; });
  }
  ASSERT_EQ(stats.get_int("downloader/request_count"), 1) << "the first download waited";
  while (done < 1) io.run_one();
  clock.advance(seconds(599));
  look_at_clock(io);
  EXPECT_EQ(stats.get_int("downloader/request_count"), 1) << "the second download left early";
  clock.advance(seconds(1));
  look_at_clock(io);
  EXPECT_EQ(stats.get_int("downloader/request_count"), 2) << "the second download was late";
  while (done < 2) io.run_one();
  EXPECT_EQ(server.total_hits(), 2u);
}

TEST(crawl, download_delay_spaces_requests_to_one_host) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 4; ++i) start.push_back(get(server.url("/s?wd=" + std::to_string(i))));
  recording_spider spider(start);
  auto result = crawl(spider, {"DOWNLOAD_DELAY=0.2", "RANDOMIZE_DOWNLOAD_DELAY=false"});
  EXPECT_EQ(spider.responses.size(), 4u);
  EXPECT_GE(result.stats["elapsed_time_seconds"].get<double>(), 0.6);
}

// RANDOMIZE_DOWNLOAD_DELAY (on by default, as in Scrapy): each wait is the delay times a random
// factor between 0.5 and 1.5, so gaps vary; off, every gap is the delay. The gaps are read on a
// clock the test moves a millisecond at a time, so a loaded machine cannot stretch them.
TEST(downloader, randomize_download_delay_spreads_gaps_between_half_and_one_and_a_half_delays) {
  http_server server;
  crawler::driven_clock clock;
  boost::asio::io_context io;
  crawler::settings settings;
  settings.set("DOWNLOAD_DELAY", 0.1);
  crawler::stats stats;
  crawler::downloader downloader(io.get_executor(), settings, stats);
  std::size_t done = 0;
  for (int i = 0; i < 9; ++i) {
    downloader.fetch(get(server.url("/s?wd=" + std::to_string(i))),
                     [&](crawler::download_result) { ++done; });
  }
  // When each download left, in milliseconds of the driven clock.
  std::vector<int> starts{0};
  ASSERT_EQ(stats.get_int("downloader/request_count"), 1);
  for (int now = 1; now <= 2000 && starts.size() < 9; ++now) {
    clock.advance(std::chrono::milliseconds(1));
    look_at_clock(io);
    auto sent = std::size_t(stats.get_int("downloader/request_count"));
    ASSERT_LE(sent, starts.size() + 1) << "two downloads left in one millisecond, at " << now;
    if (sent > starts.size()) starts.push_back(now);
  }
  ASSERT_EQ(starts.size(), 9u);
  std::vector<int> gaps;
  for (std::size_t i = 1; i < starts.size(); ++i) gaps.push_back(starts[i] - starts[i - 1]);
  auto [least, most] = std::minmax_element(gaps.begin(), gaps.end());
  EXPECT_GE(*least, 50);
  EXPECT_LE(*most, 150 + 1);  // a draw just under 150 ms is seen at the next millisecond
  // Eight uniform draws all within 5 ms of one another: odds of one in 10^8.
  EXPECT_GT(*most - *least, 5) << "gaps do not vary: the delay is not randomised";
  while (done < 9) io.run_one();
  EXPECT_EQ(server.total_hits(), 9u);
}

// CONCURRENT_REQUESTS_PER_DOMAIN caps the requests one host answers at once, whatever
// CONCURRENT_REQUESTS allows.
// Three spellings of 127.0.0.1 are three domains but one server: CONCURRENT_REQUESTS_PER_IP
// caps them together, from their first requests (they wait for the address), where per domain
// each would have its own two.
TEST(crawl, concurrent_requests_per_ip_caps_every_host_name_of_one_server_together) {
  http_server server;
  std::vector<crawler::request> start;
  for (const char* host : {"127.0.0.1", "127.1", "127.0.1"}) {
    for (int i = 0; i < 4; ++i) {
      start.push_back(get("http://" + std::string(host) + ":" + std::to_string(server.port()) +
                          "/slow?ms=100&i=" + std::to_string(i)));
    }
  }
  recording_spider per_ip(start);
  auto result = crawl(per_ip, {"CONCURRENT_REQUESTS_PER_DOMAIN=2", "CONCURRENT_REQUESTS_PER_IP=2"});
  EXPECT_EQ(per_ip.responses.size(), 12u);
  EXPECT_EQ(server.most_in_flight(), 2u);
  recording_spider per_domain(start);
  crawl(per_domain, {"CONCURRENT_REQUESTS_PER_DOMAIN=2"});
  EXPECT_EQ(per_domain.responses.size(), 12u);
  EXPECT_EQ(server.most_in_flight(), 6u);
}

TEST(crawl, concurrent_requests_per_domain_caps_what_one_host_answers_at_once) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 12; ++i) {
    start.push_back(get(server.url("/slow?ms=100&i=" + std::to_string(i))));
  }
  for (std::size_t per_domain : {2u, 6u}) {
    recording_spider spider(start);
    crawl(spider, {"CONCURRENT_REQUESTS=16",
                   "CONCURRENT_REQUESTS_PER_DOMAIN=" + std::to_string(per_domain)});
    EXPECT_EQ(spider.responses.size(), 12u);
    EXPECT_EQ(server.most_in_flight(), per_domain)  // the most so far: 2, then 6
        << "CONCURRENT_REQUESTS_PER_DOMAIN=" << per_domain;
  }
}

// Read on the driven clock, a millisecond at a time, each download answered before the clock
// moves on: the first gap is AUTOTHROTTLE_START_DELAY, and each next one goes halfway toward the
// server's latency (a few ms on loopback; below 500 ms however loaded the machine).
TEST(downloader, autothrottle_starts_at_its_start_delay_and_halves_it_toward_a_fast_servers_latency) {
  http_server server;
  crawler::driven_clock clock;
  boost::asio::io_context io;
  crawler::settings settings;
  settings.set("AUTOTHROTTLE_ENABLED", true);
  settings.set("AUTOTHROTTLE_START_DELAY", 0.5);
  settings.set("RANDOMIZE_DOWNLOAD_DELAY", false);
  crawler::stats stats;
  crawler::downloader downloader(io.get_executor(), settings, stats);
  std::size_t done = 0;
  for (int i = 0; i < 4; ++i) {
    downloader.fetch(get(server.url("/s?wd=" + std::to_string(i))),
                     [&](crawler::download_result) { ++done; });
  }
  std::vector<int> starts{0};
  while (done < 1) io.run_one();
  for (int now = 1; now <= 2000 && starts.size() < 4; ++now) {
    clock.advance(std::chrono::milliseconds(1));
    look_at_clock(io);
    auto sent = std::size_t(stats.get_int("downloader/request_count"));
    if (sent > starts.size()) {
      starts.push_back(now);
      while (done < sent) io.run_one();  // its answer sets the next delay
    }
  }
  ASSERT_EQ(starts.size(), 4u);
  std::vector<int> gaps{starts[1] - starts[0], starts[2] - starts[1], starts[3] - starts[2]};
  EXPECT_EQ(gaps[0], 500);
  EXPECT_GE(gaps[1], 250);
  EXPECT_LT(gaps[1], 500);
  EXPECT_GE(gaps[2], gaps[1] / 2);
  EXPECT_LT(gaps[2], gaps[1]);
  EXPECT_EQ(server.total_hits(), 4u);
}

TEST(crawl, robots_txt_is_fetched_once_per_host_and_forbidden_pages_are_never_requested) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /s?wd=secret\n"});
  auto start = searches(server, {"a", "secret", "b", "secret-too"});
  auto excused = get(server.url("/s?wd=secret-but-excused"));
  excused.meta["dont_obey_robotstxt"] = true;
  start.push_back(excused);
  recording_spider spider(start);
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true"});

  EXPECT_EQ(spider.responses.size(), 3u);
  ASSERT_EQ(spider.failures.size(), 2u);
  for (const auto& failure : spider.failures) {
    EXPECT_EQ(failure.type, "IgnoreRequest");
    EXPECT_EQ(failure.message, "Forbidden by robots.txt");
  }
  EXPECT_EQ(server.hits("/robots.txt"), 1u);
  EXPECT_EQ(server.hits("/s?wd=secret"), 0u);
  EXPECT_EQ(server.hits("/s?wd=secret-too"), 0u);
  EXPECT_EQ(server.hits("/s?wd=secret-but-excused"), 1u);
  EXPECT_EQ(stat(result, "robotstxt/request_count"), 1);
  EXPECT_EQ(stat(result, "robotstxt/response_count"), 1);
  EXPECT_EQ(stat(result, "robotstxt/response_status_count/200"), 1);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 2);
  EXPECT_EQ(result.finish_reason, "finished");
}

// An origin is its scheme, host and port: credentials in a URL's authority make no origin of
// their own, and robots.txt is asked for without them.
TEST(crawl, urls_with_credentials_share_their_origins_robots_txt) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /s?wd=secret\n"});
  auto with_credentials = "http://user:pw@127.0.0.1:" + std::to_string(server.port());
  recording_spider spider({get(with_credentials + "/s?wd=secret"),
                           get(with_credentials + "/s?wd=a"), get(server.url("/s?wd=b")),
                           get(server.url("/s?wd=secret"))});
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true"});
  EXPECT_EQ(server.hits("/robots.txt"), 1u);
  EXPECT_EQ(stat(result, "robotstxt/request_count"), 1);
  EXPECT_EQ(server.hits("/s?wd=secret"), 0u);
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 2);
}

// Where Scrapy keys robots.txt by netloc, ours is one per scheme, host and port (README's
// differences from Scrapy): another host name of the same server asks again, and https:// on
// this plain-http port gets no rules (its handshake fails: unreachable, so disallowed) rather
// than borrowing http://'s.
TEST(crawl, robots_txt_is_one_per_scheme_host_and_port) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /s?wd=secret\n"});
  auto port = std::to_string(server.port());
  recording_spider spider({get("http://127.0.0.1:" + port + "/s?wd=a"),
                           get("http://localhost:" + port + "/s?wd=b"),
                           get("http://localhost:" + port + "/s?wd=secret"),
                           get("https://127.0.0.1:" + port + "/s?wd=c")});
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true", "RETRY_ENABLED=false"});
  EXPECT_EQ(server.hits("/robots.txt"), 2u);
  EXPECT_EQ(stat(result, "robotstxt/request_count"), 3);
  EXPECT_EQ(server.hits("/s?wd=a"), 1u);
  EXPECT_EQ(server.hits("/s?wd=b"), 1u);
  EXPECT_EQ(server.hits("/s?wd=secret"), 0u);
  EXPECT_EQ(server.hits("/s?wd=c"), 0u);
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 2);
}

TEST(crawl, robots_txt_is_ignored_unless_robotstxt_obey_is_set) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /\n"});
  recording_spider spider(searches(server, {"a", "b"}));
  auto result = crawl(spider);
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(server.hits("/robots.txt"), 0u);
}

TEST(crawl, robots_txt_rules_are_matched_against_robotstxt_user_agent) {
  http_server server({.robots_txt = "User-agent: pickybot\nDisallow: /\n"});
  recording_spider as_default(searches(server, {"a"}));
  crawl(as_default, {"ROBOTSTXT_OBEY=true"});
  EXPECT_EQ(as_default.responses.size(), 1u);

  recording_spider as_picky(searches(server, {"a"}));
  auto result = crawl(as_picky, {"ROBOTSTXT_OBEY=true", "ROBOTSTXT_USER_AGENT=PickyBot"});
  EXPECT_TRUE(as_picky.responses.empty());
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 1);
}

TEST(crawl, a_robots_txt_answering_4xx_allows_everything) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /\n", .robots_status = 403});
  recording_spider spider(searches(server, {"a", "b"}));
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true"});
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(stat(result, "robotstxt/response_status_count/403"), 1);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 0);
}

TEST(crawl, a_robots_txt_answering_5xx_after_its_retries_disallows_everything) {
  http_server server({.robots_txt = "User-agent: *\nAllow: /\n", .robots_status = 503});
  recording_spider spider(searches(server, {"a", "b", "c"}));
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true", "RETRY_TIMES=1"});
  EXPECT_TRUE(spider.responses.empty());
  EXPECT_EQ(spider.failures.size(), 3u);
  EXPECT_EQ(server.hits("/robots.txt"), 2u);  // retried once, like any download
  EXPECT_EQ(server.total_hits(), 2u);
  EXPECT_EQ(stat(result, "robotstxt/response_status_count/503"), 1);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 3);
}

TEST(crawl, an_unreachable_robots_txt_disallows_everything) {
  crawler::fixtures::refusing_port refusing;
  recording_spider spider({get("http://127.0.0.1:" + std::to_string(refusing.port()) + "/page")});
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true", "RETRY_ENABLED=false"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].message, "Forbidden by robots.txt");
  EXPECT_EQ(stat(result, "robotstxt/exception_count/ConnectionRefusedError"), 1);
  EXPECT_EQ(stat(result, "downloader/request_count"), 1);  // only robots.txt was tried
}

// RFC 9309 section 2.4: rules are kept for 24 hours, and "unreachable" (a 5xx) disallows for 10
// minutes; then the next request to the origin fetches its robots.txt again. Both at, and a tick
// before, their time on the crawl's clock, which the test drives.
TEST(robots_gate, keeps_rules_24_hours_and_an_unreachable_robots_txt_10_minutes) {
  using crawler::crawl_clock;
  http_server answering({.robots_txt = "User-agent: *\nDisallow: /private\n"});
  http_server failing({.robots_txt = "User-agent: *\nAllow: /\n", .robots_status = 503});
  crawler::driven_clock clock;
  boost::asio::io_context io;
  crawler::settings settings;
  crawler::stats stats;
  crawler::downloader downloader(io.get_executor(), settings, stats);
  crawler::robots_gate gate(
      settings, stats,
      [&](crawler::request request, std::function<void(crawler::download_result)> done) {
        downloader.fetch(std::move(request), std::move(done));
      },
      [](const std::string&, double) {});
  auto allowed = [&](const std::string& url) {
    std::optional<bool> verdict;
    gate.check(get(url), [&](crawler::request, bool allow) { verdict = allow; });
    while (!verdict) io.run_one();
    return *verdict;
  };
  // What the origin's robots.txt says of /private (its rules, or disallow-all) holds for
  // `lifetime` and no tick longer.
  auto kept_for = [&](http_server& server, crawl_clock::duration lifetime, const char* named) {
    const auto tick = crawl_clock::duration(1);
    EXPECT_FALSE(allowed(server.url("/private")));
    clock.advance(lifetime - tick);
    EXPECT_FALSE(allowed(server.url("/private")));
    EXPECT_EQ(server.hits("/robots.txt"), 1u) << "fetched again before its " << named;
    clock.advance(tick);
    EXPECT_FALSE(allowed(server.url("/private")));
    EXPECT_EQ(server.hits("/robots.txt"), 2u) << "kept past its " << named;
  };
  kept_for(answering, std::chrono::hours(24), "24 hours");
  EXPECT_TRUE(allowed(answering.url("/s?wd=a")));
  kept_for(failing, std::chrono::minutes(10), "10 minutes");
  EXPECT_EQ(stats.get_int("robotstxt/request_count"), 4);
  EXPECT_EQ(stats.get_int("robotstxt/forbidden"), 6);
  EXPECT_EQ(answering.hits("/private"), 0u);
}

TEST(crawl, a_robots_txt_crawl_delay_spaces_requests_to_its_host) {
  http_server server({.robots_txt = "User-agent: *\nCrawl-delay: 0.2\n"});
  recording_spider spider(searches(server, {"a", "b", "c", "d"}));
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true", "RANDOMIZE_DOWNLOAD_DELAY=false"});
  EXPECT_EQ(spider.responses.size(), 4u);
  EXPECT_GE(result.stats["elapsed_time_seconds"].get<double>(), 0.6);
}

}  // namespace
