// What a user reads in the log about duplicates, as Scrapy's RFPDupeFilter.log writes it.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <boost/asio/use_future.hpp>

#include "config/log.h"
#include "dedup/dupefilter.h"
#include "event_loop.h"
#include "redis_server.h"

using namespace crawler;
using namespace crawler::dedup;
using boost::asio::use_future;

namespace {

// Captures what the "dupefilter" logger writes during one test.
class captured_log {
 public:
  captured_log() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000)) {
    logger_ = get_logger("dupefilter");
    logger_->sinks().push_back(sink_);
    logger_->set_level(spdlog::level::debug);
  }
  ~captured_log() { logger_->sinks().pop_back(); }
  std::vector<std::string> lines() { return sink_->last_formatted(); }
  std::size_t count(std::string_view text) {
    std::size_t n = 0;
    for (const auto& line : lines()) n += line.find(text) != std::string::npos;
    return n;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

void log_three_duplicates(crawler::settings& settings, crawler::stats& stats) {
  fixtures::event_loop loop;
  auto filter = make_dupefilter({settings, stats, "spider", loop.executor()});
  filter->async_open(use_future).get();
  for (const char* url : {"http://a.example/", "http://b.example/", "http://c.example/"})
    filter->log(std::string("<GET ") + url + ">");
}

}  // namespace

TEST(dupefilter_log, shows_the_first_duplicate_only_but_counts_all) {
  captured_log log;
  crawler::settings settings;
  crawler::stats stats;
  log_three_duplicates(settings, stats);
  EXPECT_EQ(log.count("Filtered duplicate request"), 1u);
  EXPECT_EQ(
      log.count(
          "Filtered duplicate request: <GET http://a.example/> - no more duplicates will be shown "
          "(see DUPEFILTER_DEBUG to show all duplicates)"),
      1u);
  EXPECT_EQ(stats.get_int("dupefilter/filtered"), 3);
}

TEST(dupefilter_log, dupefilter_debug_shows_every_duplicate) {
  captured_log log;
  crawler::settings settings;
  crawler::stats stats;
  settings.set("DUPEFILTER_DEBUG", true);
  settings.set("DUPEFILTER_CLASS", "bloom");
  log_three_duplicates(settings, stats);
  EXPECT_EQ(log.count("Filtered duplicate request"), 3u);
  EXPECT_EQ(log.count("Filtered duplicate request: <GET http://c.example/> (referer: None)"), 1u);
  EXPECT_EQ(stats.get_int("bloomfilter/filtered"), 3);
}

TEST(dupefilter_log, an_overfull_bloom_filter_warns_once) {
  // A 2^12-bit redis_bitmap cannot hold 3000 fingerprints at 0.1%: the estimate passes twice the
  // rate early, and the warning must appear once, not once per page.
  captured_log log;
  fixtures::redis_server server;
  fixtures::event_loop loop;
  crawler::settings settings;
  crawler::stats stats;
  settings.set("DUPEFILTER_CLASS", "redis_bitmap");
  settings.set("REDIS_URL", server.url());
  settings.set("BLOOMFILTER_BIT", 12);
  auto filter = make_dupefilter({settings, stats, "spider", loop.executor()});
  filter->async_open(use_future).get();
  for (int page = 0; page < 30; ++page) {
    std::vector<fingerprint> batch;
    for (int i = 0; i < 100; ++i)
      batch.push_back(
          request_fingerprint("GET", "http://x.example/" + std::to_string(page * 100 + i)));
    filter->async_seen(batch, use_future).get();
  }
  EXPECT_EQ(log.count("is more than twice the configured"), 1u);
  EXPECT_GT(stats.get_value("bloomfilter/estimated_fpr")->get<double>(), 0.002);
}
