// Components by name and signals (crawler/components.h, crawler/signals.h), used as a Scrapy user
// would: pipelines, middlewares and extensions registered in C++ by a program of one's own built
// on crawler::cli::main, and enabled from a crawl file's settings.
#include "crawler/components.h"

#include <gtest/gtest.h>

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "crawler/cli/main.h"
#include "http_server.h"
#include "in_process_crawl.h"
#include "redis_server.h"

namespace {

using crawler::fixtures::crawl_run;
using crawler::fixtures::crawler_main;
using crawler::fixtures::http_server;
using crawler::fixtures::temp_dir;
using json = nlohmann::json;

// Upper-cases each item's title and counts what it did in the crawl's stats.
class uppercase_title : public crawler::item_pipeline {
 public:
  explicit uppercase_title(crawler::crawl_context& crawl) : stats_(crawl.stats) {}
  void process_item(crawler::item& item, crawler::spider&) override {
    auto title = item.value("title", std::string());
    for (auto& c : title) c = char(std::toupper(static_cast<unsigned char>(c)));
    item["title"] = title;
    stats_.inc_value("uppercase_title/items");
  }

 private:
  crawler::stats& stats_;
};
CRAWLER_REGISTER_ITEM_PIPELINE(uppercase_title, "tests.UppercaseTitle");

// Appends its name to the item's "seen_by": the order pipelines ran in.
class mark_a : public crawler::item_pipeline {
  void process_item(crawler::item& item, crawler::spider&) override {
    item["seen_by"].push_back("a");
  }
};
CRAWLER_REGISTER_ITEM_PIPELINE(mark_a, "tests.MarkA");
class mark_b : public crawler::item_pipeline {
  void process_item(crawler::item& item, crawler::spider&) override {
    item["seen_by"].push_back("b");
  }
};
CRAWLER_REGISTER_ITEM_PIPELINE(mark_b, "tests.MarkB");

// Drops the item of page 1, so item_dropped has something to tell.
class drop_page_one : public crawler::item_pipeline {
  void process_item(crawler::item& item, crawler::spider&) override {
    if (item.value("url", std::string()).ends_with("/site/1")) {
      throw crawler::drop_item("page one");
    }
  }
};
CRAWLER_REGISTER_ITEM_PIPELINE(drop_page_one, "tests.DropPageOne");

// Fails on the items of pages 2 (a std::exception) and 3 (something else thrown): item_error,
// each with its message.
class fail_pages_two_and_three : public crawler::item_pipeline {
  void process_item(crawler::item& item, crawler::spider&) override {
    auto url = item.value("url", std::string());
    if (url.ends_with("/site/2")) throw std::runtime_error("page two failed");
    if (url.ends_with("/site/3")) throw 3;
  }
};
CRAWLER_REGISTER_ITEM_PIPELINE(fail_pages_two_and_three, "tests.FailPagesTwoAndThree");

// Says in the stats whether the User-Agent header was set when its process_request ran: at 543 it
// comes after UserAgentMiddleware (500), at 450 before it.
class user_agent_witness : public crawler::downloader_middleware {
 public:
  explicit user_agent_witness(crawler::crawl_context& crawl) : stats_(crawl.stats) {}
  void process_request(crawler::request& request) override {
    bool set = !crawler::find_header(request.headers, "User-Agent").empty();
    stats_.inc_value(set ? "witness/user_agent_set" : "witness/user_agent_unset");
  }

 private:
  crawler::stats& stats_;
};
CRAWLER_REGISTER_DOWNLOADER_MIDDLEWARE(user_agent_witness, "tests.UserAgentWitness");

// Says whether the requests a callback yielded carried DepthMiddleware's meta "depth" when its
// process_spider_output saw them: at 950 it sees them before DepthMiddleware (900), at 850 after,
// as Scrapy runs process_spider_output from the highest order down.
class depth_witness : public crawler::spider_middleware {
 public:
  explicit depth_witness(crawler::crawl_context& crawl) : stats_(crawl.stats) {}
  void process_spider_output(const crawler::response&, crawler::output& out) override {
    for (const auto& request : out.requests) {
      stats_.inc_value(request.meta.contains("depth") ? "witness/depth_set"
                                                      : "witness/depth_unset");
    }
  }

 private:
  crawler::stats& stats_;
};
CRAWLER_REGISTER_SPIDER_MIDDLEWARE(depth_witness, "tests.DepthWitness");

// The same for RefererMiddleware (700) and the Referer header it gives a followed link.
class referer_witness : public crawler::spider_middleware {
 public:
  explicit referer_witness(crawler::crawl_context& crawl) : stats_(crawl.stats) {}
  void process_spider_output(const crawler::response&, crawler::output& out) override {
    for (const auto& request : out.requests) {
      stats_.inc_value(crawler::find_header(request.headers, "Referer").empty()
                           ? "witness/referer_unset"
                           : "witness/referer_set");
    }
  }

 private:
  crawler::stats& stats_;
};
CRAWLER_REGISTER_SPIDER_MIDDLEWARE(referer_witness, "tests.RefererWitness");

// Holds each item 300 ms on a timer of the crawl's loop before passing it on, as a pipeline that
// waits for a database would.
class slow_pipeline : public crawler::async_item_pipeline {
 public:
  explicit slow_pipeline(crawler::crawl_context& crawl) : executor_(crawl.executor) {}
  void process_item_async(crawler::item item, crawler::spider&, crawler::item_done done) override {
    auto timer =
        std::make_shared<boost::asio::steady_timer>(executor_, std::chrono::milliseconds(300));
    timer->async_wait(
        [timer, item = std::move(item), done = std::move(done)](boost::system::error_code) mutable {
          item["held"] = true;
          done(std::move(item), nullptr);
        });
  }

 private:
  boost::asio::any_io_executor executor_;
};
CRAWLER_REGISTER_ITEM_PIPELINE(slow_pipeline, "tests.SlowPipeline");

// Counts signals into the stats, as an extension of Scrapy's would.
class signal_counter : public crawler::extension {
 public:
  explicit signal_counter(crawler::crawl_context& crawl) {
    auto& stats = crawl.stats;
    namespace signals = crawler::signals;
    crawl.signals.connect<signals::spider_opened>(
        [&stats](const signals::spider_opened&) { stats.inc_value("signals/spider_opened"); });
    crawl.signals.connect<signals::response_received>([&stats](const signals::response_received&) {
      stats.inc_value("signals/response_received");
    });
    crawl.signals.connect<signals::item_scraped>([&stats](const signals::item_scraped& scraped) {
      stats.inc_value("signals/item_scraped");
      if (scraped.response) stats.inc_value("signals/item_scraped_with_response");
    });
    crawl.signals.connect<signals::item_dropped>([&stats](const signals::item_dropped& dropped) {
      stats.inc_value("signals/item_dropped/" + std::string(dropped.reason));
    });
    crawl.signals.connect<signals::item_error>([&stats](const signals::item_error& failed) {
      stats.inc_value("signals/item_error/" + std::string(failed.message));
      if (failed.response) stats.inc_value("signals/item_error_with_response");
    });
    crawl.signals.connect<signals::request_scheduled>([&stats](const signals::request_scheduled&) {
      stats.inc_value("signals/request_scheduled");
    });
    crawl.signals.connect<signals::request_dropped>(
        [&stats](const signals::request_dropped& dropped) {
          stats.inc_value("signals/request_dropped");
          if (dropped.request.url.find("/site/") != std::string::npos) {
            stats.inc_value("signals/request_dropped_site_page");
          }
        });
    crawl.signals.connect<signals::spider_closed>([&stats](const signals::spider_closed& closed) {
      stats.set_value("signals/spider_closed", std::string(closed.reason));
    });
  }
};
CRAWLER_REGISTER_EXTENSION(signal_counter, "tests.SignalCounter");

// On each spider_idle, schedules the next of three more pages (scrapy-redis's way of feeding a
// spider that would otherwise close), then lets it close.
class feed_when_idle : public crawler::extension {
 public:
  explicit feed_when_idle(crawler::crawl_context& crawl) {
    auto base = crawl.settings.get_string("TEST_FEED_BASE");
    crawl.signals.connect<crawler::signals::spider_idle>(
        [this, base, &engine = crawl.engine,
         &stats = crawl.stats](const crawler::signals::spider_idle&) {
          stats.inc_value("feed_when_idle/idle");
          if (fed_ == 3) return;
          crawler::request next;
          next.url = base + "/site/" + std::to_string(10 + fed_++);
          engine.crawl(next);
        });
  }

 private:
  int fed_ = 0;
};
CRAWLER_REGISTER_EXTENSION(feed_when_idle, "tests.FeedWhenIdle");

// The natural port of `self.crawler = crawler`: the context kept, and used from a later signal.
class keeps_its_context : public crawler::extension {
 public:
  explicit keeps_its_context(crawler::crawl_context& crawl) : crawl_(crawl) {
    crawl.signals.connect<crawler::signals::item_scraped>(
        [this](const crawler::signals::item_scraped&) {
          crawl_.stats.inc_value("kept/" + crawl_.spider.name() + "/items");
          crawl_.stats.set_value("kept/delay", crawl_.settings.get_double("DOWNLOAD_DELAY"));
        });
  }

 private:
  crawler::crawl_context& crawl_;
};
CRAWLER_REGISTER_EXTENSION(keeps_its_context, "tests.KeepsItsContext");

// Keeps the spider open through its first spider_idle, then lets it close.
class hold_open_once : public crawler::extension {
 public:
  explicit hold_open_once(crawler::crawl_context& crawl) {
    crawl.signals.connect<crawler::signals::spider_idle>(
        [this, &stats = crawl.stats](const crawler::signals::spider_idle&) {
          auto now = std::chrono::steady_clock::now();
          if (idles_++ == 0) {
            first_ = now;
            throw crawler::dont_close_spider();
          }
          stats.set_value("hold_open_once/seconds_open_after_idle",
                          std::chrono::duration<double>(now - first_).count());
        });
  }

 private:
  int idles_ = 0;
  std::chrono::steady_clock::time_point first_;
};
CRAWLER_REGISTER_EXTENSION(hold_open_once, "tests.HoldOpenOnce");

// Closes the spider from its first spider_idle, with a reason of its own (Scrapy's
// crawler.engine.close_spider(spider, reason) from an idle handler).
class close_when_idle : public crawler::extension {
 public:
  explicit close_when_idle(crawler::crawl_context& crawl) {
    crawl.signals.connect<crawler::signals::spider_idle>(
        [&engine = crawl.engine](const crawler::signals::spider_idle&) {
          engine.close_spider("nothing_left_upstream");
        });
  }
};
CRAWLER_REGISTER_EXTENSION(close_when_idle, "tests.CloseWhenIdle");

// `crawler run FILE.json` of `document`, with its items and stats; TEST_FEED_BASE declared for
// feed_when_idle.
crawl_run run_crawl_document(json document) {
  document["user_settings"]["TEST_FEED_BASE"] = "";
  return crawler::fixtures::run_crawl_document(std::move(document));
}

// A crawl file with `settings` over a spider of `pages` pages of `server`, each an item.
crawl_run run_crawl_file(const http_server& server, json settings, std::size_t pages = 3) {
  return run_crawl_document(
      {{"settings", std::move(settings)},
       {"spider",
        {{"name", "components"},
         {"start_urls", {server.url("/site/0")}},
         {"rules",
          {{{"allow", {"/site/[0-" + std::to_string(pages - 1) + "]$"}},
            {"callback", "page"},
            {"follow", true}}}},
         {"callbacks", {{"page", {{"fields", {{"url", "$url"}, {"title", "title::text"}}}}}}}}}});
}

TEST(components, a_pipeline_registered_in_cpp_is_enabled_from_a_crawl_files_item_pipelines) {
  http_server server({.site_pages = 3});
  auto run = run_crawl_file(server, {{"ITEM_PIPELINES", {{"tests.UppercaseTitle", 300}}}});
  ASSERT_EQ(run.status, 0);
  // Pages 0, 1 and 2, by the rule (the start request, sent with dont_filter, left no fingerprint:
  // page 0 comes again as a link, as in Scrapy).
  ASSERT_EQ(run.items.size(), 3u);
  for (const auto& item : run.items) {
    EXPECT_TRUE(item["title"].get<std::string>().starts_with("PAGE ")) << item.dump();
  }
  EXPECT_EQ(run.stats.value("uppercase_title/items", 0), 3);
}

// A page whose items an async pipeline holds is in flight: the spider does not close under it,
// and with CONCURRENT_REQUESTS 1 the next page waits for it.
TEST(components, a_page_waits_for_its_items_in_an_async_pipeline) {
  http_server server({.site_pages = 3});
  auto run = run_crawl_file(
      server, {{"ITEM_PIPELINES", {{"tests.SlowPipeline", 300}, {"tests.UppercaseTitle", 400}}},
               {"CONCURRENT_REQUESTS", 1}});
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.items.size(), 3u) << "an item still held when the spider closed would be lost";
  for (const auto& item : run.items) {
    EXPECT_EQ(item["held"], true);
    EXPECT_TRUE(item["title"].get<std::string>().starts_with("PAGE "))
        << "the pipeline after it ran";
  }
  // Three pages' items held 300 ms each, one page at a time.
  EXPECT_GE(run.stats.value("elapsed_time_seconds", 0.0), 0.9) << run.stats.dump();
}

TEST(components, pipelines_run_lowest_order_first_and_null_leaves_one_out) {
  http_server server({.site_pages = 2});
  auto run =
      run_crawl_file(server, {{"ITEM_PIPELINES", {{"tests.MarkA", 200}, {"tests.MarkB", 100}}}}, 2);
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.items.size(), 2u);
  EXPECT_EQ(run.items[0]["seen_by"], json({"b", "a"}));
  run =
      run_crawl_file(server, {{"ITEM_PIPELINES", {{"tests.MarkA", 100}, {"tests.MarkB", 200}}}}, 2);
  ASSERT_EQ(run.items.size(), 2u);
  EXPECT_EQ(run.items[0]["seen_by"], json({"a", "b"}));

  run = run_crawl_file(server,
                       {{"ITEM_PIPELINES", {{"tests.MarkA", 200}, {"tests.MarkB", nullptr}}}}, 2);
  ASSERT_EQ(run.items.size(), 2u);
  EXPECT_EQ(run.items[0]["seen_by"], json({"a"}));
}

TEST(components, crawler_check_names_each_component_no_one_registered) {
  temp_dir dir;
  auto file = (dir.path() / "crawl.json").string();
  auto write = [&](json settings) {
    std::ofstream(file) << json{{"settings", std::move(settings)},
                                {"spider",
                                 {{"name", "checked"}, {"start_urls", {"http://example.org/"}}}}}
                               .dump();
  };
  write({{"ITEM_PIPELINES", {{"tests.UppercaseTitle", 300}, {"myproject.Clean", 400}}},
         {"EXTENSIONS", {{"myproject.Stats", 500}}},
         {"DOWNLOADER_MIDDLEWARES", {{"tests.UserAgentWitness", "soon"}}}});
  testing::internal::CaptureStderr();
  EXPECT_EQ(crawler_main({"check", file}), 1);
  auto log = testing::internal::GetCapturedStderr();
  EXPECT_NE(
      log.find("settings.ITEM_PIPELINES[\"myproject.Clean\"]: no item pipeline is registered"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("settings.EXTENSIONS[\"myproject.Stats\"]: no extension is registered"),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find("settings.DOWNLOADER_MIDDLEWARES[\"tests.UserAgentWitness\"]: the order must be "
               "an integer"),
      std::string::npos)
      << log;
  EXPECT_EQ(log.find("tests.UppercaseTitle\"]"), std::string::npos) << "registered: no problem";

  write({{"ITEM_PIPELINES",
          {{"tests.UppercaseTitle", 300}, {"scrapy.pipelines.files.FilesPipeline", 1}}}});
  testing::internal::CaptureStdout();
  EXPECT_EQ(crawler_main({"check", file}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("OK"), std::string::npos);
}

TEST(components, a_name_no_one_registered_is_an_error_naming_the_registered_ones) {
  http_server server({.site_pages = 2});
  testing::internal::CaptureStderr();
  auto run = run_crawl_file(server, {{"ITEM_PIPELINES", {{"myproject.pipelines.Clean", 300}}}});
  auto log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(log.find("ITEM_PIPELINES[\"myproject.pipelines.Clean\"]: no item pipeline is "
                     "registered as \"myproject.pipelines.Clean\""),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("tests.UppercaseTitle"), std::string::npos) << log;
  EXPECT_EQ(server.hits("/site/0"), 0u) << "nothing is fetched when a component is missing";

  testing::internal::CaptureStderr();
  run = run_crawl_file(server, {{"EXTENSIONS", {{"tests.SignalCounter", "high"}}}});
  log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(log.find("EXTENSIONS[\"tests.SignalCounter\"]: the order must be an integer"),
            std::string::npos)
      << log;
}

TEST(components, crawler_components_lists_every_registered_name_under_its_setting) {
  testing::internal::CaptureStdout();
  ASSERT_EQ(crawler_main({"components"}), 0);
  auto listed = testing::internal::GetCapturedStdout();
  auto pipelines = listed.find("ITEM_PIPELINES\n");
  auto downloader = listed.find("DOWNLOADER_MIDDLEWARES\n");
  ASSERT_NE(pipelines, std::string::npos) << listed;
  ASSERT_NE(downloader, std::string::npos) << listed;
  auto ours = listed.find("  tests.UppercaseTitle\n");
  EXPECT_TRUE(ours > pipelines && ours < downloader) << listed;
  EXPECT_NE(listed.find("  scrapy.downloadermiddlewares.retry.RetryMiddleware  550 "
                        "(DOWNLOADER_MIDDLEWARES_BASE)\n"),
            std::string::npos)
      << listed;
  auto extensions = listed.find("EXTENSIONS\n");
  ASSERT_NE(extensions, std::string::npos) << listed;
  for (const char* extension : {"  tests.CloseWhenIdle\n", "  tests.FeedWhenIdle\n"}) {
    auto found = listed.find(extension);
    EXPECT_TRUE(found != std::string::npos && found > extensions) << extension << listed;
  }
}

TEST(components, a_builtin_middleware_set_to_null_in_downloader_middlewares_is_left_out) {
  http_server server;
  auto crawl = [&](json settings) {
    settings["LOG_LEVEL"] = "ERROR";
    settings["RETRY_TIMES"] = 2;
    auto run = run_crawl_document(
        {{"settings", std::move(settings)},
         {"spider", {{"name", "retries"}, {"start_urls", {server.url("/status/503")}}}}});
    EXPECT_EQ(run.status, 0);
    return run.stats;
  };
  auto with_retries = crawl(json::object());
  EXPECT_EQ(with_retries.value("retry/count", 0), 2);
  EXPECT_EQ(server.hits("/status/503"), 3u);
  auto without = crawl({{"DOWNLOADER_MIDDLEWARES",
                         {{"scrapy.downloadermiddlewares.retry.RetryMiddleware", nullptr}}}});
  EXPECT_FALSE(without.contains("retry/count")) << without.dump(1);
  EXPECT_EQ(server.hits("/status/503"), 4u);
}

TEST(components, a_downloader_middleware_of_ones_own_runs_among_the_builtins_by_its_order) {
  http_server server({.site_pages = 2});
  auto after =
      run_crawl_file(server, {{"DOWNLOADER_MIDDLEWARES", {{"tests.UserAgentWitness", 543}}}}, 2);
  ASSERT_EQ(after.status, 0);
  EXPECT_EQ(after.stats.value("witness/user_agent_set", 0), 3);
  EXPECT_FALSE(after.stats.contains("witness/user_agent_unset"));
  auto before =
      run_crawl_file(server, {{"DOWNLOADER_MIDDLEWARES", {{"tests.UserAgentWitness", 450}}}}, 2);
  EXPECT_EQ(before.stats.value("witness/user_agent_unset", 0), 3);
  EXPECT_FALSE(before.stats.contains("witness/user_agent_set"));
}

TEST(components, a_spider_middleware_sees_a_callbacks_output_after_those_of_higher_order) {
  http_server server({.site_pages = 2});
  auto after = run_crawl_file(server, {{"SPIDER_MIDDLEWARES", {{"tests.DepthWitness", 850}}}}, 2);
  ASSERT_EQ(after.status, 0);
  EXPECT_GT(after.stats.value("witness/depth_set", 0), 0);
  EXPECT_FALSE(after.stats.contains("witness/depth_unset"));
  auto before = run_crawl_file(server, {{"SPIDER_MIDDLEWARES", {{"tests.DepthWitness", 950}}}}, 2);
  EXPECT_GT(before.stats.value("witness/depth_unset", 0), 0);
  EXPECT_FALSE(before.stats.contains("witness/depth_set"));
}

// RefererMiddleware sits at 700, as in Scrapy: a middleware at 699 sees the links it gave a
// Referer, one at 701 sees them before.
TEST(components, referer_middleware_gives_links_their_referer_at_order_700) {
  http_server server({.site_pages = 2});
  auto after = run_crawl_file(server, {{"SPIDER_MIDDLEWARES", {{"tests.RefererWitness", 699}}}}, 2);
  ASSERT_EQ(after.status, 0);
  EXPECT_GT(after.stats.value("witness/referer_set", 0), 0);
  EXPECT_FALSE(after.stats.contains("witness/referer_unset"));
  auto before =
      run_crawl_file(server, {{"SPIDER_MIDDLEWARES", {{"tests.RefererWitness", 701}}}}, 2);
  EXPECT_GT(before.stats.value("witness/referer_unset", 0), 0);
  EXPECT_FALSE(before.stats.contains("witness/referer_set"));
}

TEST(signals, an_extension_hears_what_the_crawl_does) {
  http_server server({.site_pages = 5});
  auto run = run_crawl_file(
      server,
      {{"EXTENSIONS", {{"tests.SignalCounter", 500}}},
       {"ITEM_PIPELINES", {{"tests.DropPageOne", 300}, {"tests.FailPagesTwoAndThree", 400}}}},
      5);
  ASSERT_EQ(run.status, 0);
  const auto& stats = run.stats;
  EXPECT_EQ(stats.value("signals/spider_opened", 0), 1);
  EXPECT_EQ(stats.value("signals/response_received", 0),
            stats.value("response_received_count", -1));
  // Pages 0 and 4; page 1's was dropped, those of pages 2 and 3 failed in a pipeline.
  EXPECT_EQ(stats.value("signals/item_scraped", 0), 2);
  EXPECT_EQ(stats.value("signals/item_scraped_with_response", 0), 2);
  EXPECT_EQ(stats.value("signals/item_dropped/page one", 0), 1);
  EXPECT_EQ(stats.value("item_dropped_count", 0), 1);  // an error is no drop
  EXPECT_EQ(stats.value("signals/item_error/page two failed", 0), 1);
  EXPECT_EQ(stats.value("signals/item_error/unknown exception", 0), 1);
  EXPECT_EQ(stats.value("signals/item_error_with_response", 0), 2);
  // The start request and each link a page yielded (before the dupefilter).
  EXPECT_GE(stats.value("signals/request_scheduled", 0), 3);
  // Each duplicate the dupefilter filtered, with the request itself.
  EXPECT_GT(stats.value("signals/request_dropped", 0), 0) << stats.dump();
  EXPECT_EQ(stats.value("signals/request_dropped", 0), stats.value("dupefilter/filtered", -1));
  EXPECT_EQ(stats.value("signals/request_dropped_site_page", 0),
            stats.value("signals/request_dropped", -1));
  EXPECT_EQ(stats.value("signals/spider_closed", std::string()), "finished");
}

// The context a component is built with lives for the whole crawl (components.h): kept, it still
// names the crawl's stats, spider and settings at every later signal.
TEST(signals, an_extension_that_keeps_its_context_uses_it_at_every_signal) {
  http_server server({.site_pages = 3});
  auto run = run_crawl_file(
      server, {{"EXTENSIONS", {{"tests.KeepsItsContext", 500}}}, {"DOWNLOAD_DELAY", 0.001}});
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.stats.value("kept/components/items", 0), run.stats.value("item_scraped_count", -1));
  EXPECT_EQ(run.stats.value("kept/components/items", 0), 3) << run.stats.dump();
  EXPECT_EQ(run.stats.value("kept/delay", 0.0), 0.001);
}

TEST(signals, a_fleet_worker_hears_request_dropped_for_the_duplicates_redis_answered) {
  http_server server({.site_pages = 3});
  crawler::fixtures::redis_server redis;
  auto run = run_crawl_file(server, {{"EXTENSIONS", {{"tests.SignalCounter", 500}}},
                                     {"SCHEDULER", "redis"},
                                     {"DUPEFILTER_CLASS", "redis_set"},
                                     {"MAX_IDLE_TIME_BEFORE_CLOSE", 1},
                                     {"REDIS_URL", redis.url()}});
  ASSERT_EQ(run.status, 0);
  const auto& stats = run.stats;
  EXPECT_GT(stats.value("signals/request_dropped", 0), 0) << stats.dump();
  EXPECT_EQ(stats.value("signals/request_dropped", 0), stats.value("dupefilter/filtered", -1))
      << stats.dump();
  EXPECT_EQ(stats.value("signals/request_dropped_site_page", 0),
            stats.value("signals/request_dropped", -1));
}

TEST(signals, a_spider_idle_handler_keeps_the_spider_open_by_scheduling_requests) {
  http_server server({.site_pages = 20});
  auto run = run_crawl_file(
      server, {{"EXTENSIONS", {{"tests.FeedWhenIdle", 500}}}, {"TEST_FEED_BASE", server.url("")}});
  ASSERT_EQ(run.status, 0);
  for (int page : {10, 11, 12}) EXPECT_EQ(server.hits("/site/" + std::to_string(page)), 1u) << page;
  EXPECT_EQ(run.stats.value("feed_when_idle/idle", 0), 4);  // three fed, the fourth let it close
  EXPECT_EQ(run.stats.value("finish_reason", std::string()), "finished");
}

// The close a spider_idle handler asks for is the crawl's, with its reason: the idle close that
// would have followed does not say "finished" over it.
TEST(signals, a_spider_idle_handler_that_closes_the_spider_gives_the_finish_reason) {
  http_server server({.site_pages = 2});
  auto run = run_crawl_file(server, {{"EXTENSIONS", {{"tests.CloseWhenIdle", 500}}}}, 2);
  ASSERT_EQ(run.status, 0);
  EXPECT_EQ(run.stats.value("finish_reason", std::string()), "nothing_left_upstream");
  EXPECT_EQ(run.items.size(), 2u);
}

TEST(signals, dont_close_spider_holds_the_spider_open_until_spider_idle_is_sent_again) {
  http_server server({.site_pages = 2});
  auto run = run_crawl_file(server, {{"EXTENSIONS", {{"tests.HoldOpenOnce", 500}}}}, 2);
  ASSERT_EQ(run.status, 0);
  // Scrapy's engine asks again on its 5-second heartbeat.
  EXPECT_GE(run.stats.value("hold_open_once/seconds_open_after_idle", 0.0), 4.9);
  EXPECT_EQ(run.stats.value("finish_reason", std::string()), "finished");
}

}  // namespace
