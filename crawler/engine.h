// The engine: drives a crawl, as Scrapy's ExecutionEngine: the flow of requests and responses,
// when the spider is idle and how it closes, the CLOSESPIDER_TIMEOUT limit.
//
//   crawler::engine engine{io, settings, stats, spider};
//   engine.add_pipeline(std::make_unique<my_pipeline>());
//   auto reason = engine.run();      // runs `io` until the spider closes: "finished", ...
//
// The engine is flow alone. It pulls from the scheduler while the downloader has room and hands
// each request to the fetcher (detail/fetcher.h: the robots.txt gate, the downloader middlewares,
// the downloader); it hands what comes back to the scraper (detail/scraper.h: the spider
// middlewares, the callback or errback, the item pipelines, the feeds, the CLOSESPIDER_ITEMCOUNT,
// _PAGECOUNT and _ERRORCOUNT counts), and stores the page's outcome the scraper makes (its
// requests as one batch through the dupefilter) through the scheduler. A page's walk enters the
// engine three times: fetched, scraped, stored.
//
// Every page from the scheduler to its stored outcome is in the page ledger
// (detail/page_ledger.h) with its stage: waiting for robots.txt, downloading, being parsed (on a
// pool of worker threads, one per core, for a spider that parses_html; with
// concurrent_callbacks its callback runs there too), its items in the pipelines, its outcome
// being stored (a round trip with a Redis dupefilter or a fleet's queue). A page holds a
// download slot at every stage but the last: up to CONCURRENT_REQUESTS pages waiting for their
// store leave theirs to the next request. The spider is idle when the ledger is empty and
// nothing is queued; it then sends spider_idle (signals.h) and closes with "finished" unless a
// handler scheduled requests or threw dont_close_spider.
//
// close(reason) stops taking requests from the queue and lets downloads in flight finish; their
// responses are still parsed and what they yield is still queued (and saved with JOBDIR).
// force_close() stops at once and puts every request in flight back in the queue. Both are safe to
// call from any thread. A close that waits says, every five seconds of the crawl's clock, what
// holds it, read from the ledger stage by stage with the pages' URLs.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/crawl_clock.h"
#include "config/settings.h"
#include "config/stats.h"
#include "crawler/components.h"
#include "crawler/downloader.h"
#include "crawler/feeds.h"
#include "crawler/middleware.h"
#include "crawler/pipeline.h"
#include "crawler/robots_gate.h"
#include "crawler/scheme_policy.h"
#include "crawler/signals.h"
#include "crawler/spider.h"
#include "scheduler/scheduler.h"

namespace crawler {

namespace detail {
class fetcher;
struct fetched;
class page_ledger;
class page_ticket;
class scraper;
}  // namespace detail

class engine : public crawl_engine {
 public:
  /// Builds the scheduler, dupefilter, downloader, feeds and the components the settings enable
  /// (components.h) from `settings`. Throws settings_error for a setting none of them can use.
  engine(boost::asio::io_context& io, const settings& settings, stats& stats, spider& spider);
  ~engine() override;

  /// The crawl's signals (signals.h): connect before run().
  signal_bus& signals() { return signals_; }
  /// Schedules `request` through the dupefilter (Scrapy's engine.crawl). On the loop only.
  void crawl(request request) override;
  /// Closes the spider with `reason`, as close() does. On the loop only.
  void close_spider(std::string reason) override;
  /// Downloads `request` for a component (components.h). On the loop only.
  void download(request request, std::function<void(download_result)> done) override;

  void add_pipeline(std::unique_ptr<item_pipeline> pipeline);
  void add_downloader_middleware(std::unique_ptr<downloader_middleware> middleware);
  void add_spider_middleware(std::unique_ptr<spider_middleware> middleware);

  /// Runs `action` on the loop once the spider has opened (after "Spider opened"), as Scrapy's
  /// spider_opened signal: the periodic log starts there. Call before run().
  void when_opened(std::function<void()> action);

  /// Opens everything, crawls and closes; returns the finish reason. Runs `io` on the calling
  /// thread until the crawl is over. Throws when the crawl cannot start (a dupefilter or JOBDIR
  /// that cannot open, a fleet's queue unreachable): what() names the problem.
  std::string run();

  /// Stops taking new requests and closes once downloads in flight are done.
  void close(std::string reason);
  /// Stops now: requests in flight go back to the queue (and to JOBDIR), then closes.
  void force_close(std::string reason);

  /// Requests queued in this process. On the loop only.
  std::size_t queued() const;
  /// Requests between the queue and their outcome: downloading, waiting for robots.txt, being
  /// parsed, going through the dupefilter. On the loop only.
  std::size_t in_flight() const;

 private:
  enum class phase { opening, running, closing, closed };

  void open();
  void check_start_request(const request& request) const;
  void pump();
  // Pumps on the loop's next turn, once however often it is asked before then.
  void pump_soon();
  // A page's walk: taken from the scheduler and fetched, then its response or failure handed to
  // the scraper, then its outcome stored.
  void fetch(request request);
  void on_fetched(detail::fetched fetched, detail::page_ticket page);
  void store(page_outcome outcome, detail::page_ticket page,
             std::function<void(const stored_outcome&)> then = {});
  // Pages in the ledger that hold a download slot outside the downloader.
  std::size_t holding_download_slots() const;
  void check_idle();
  // Whether spider_idle's handlers let the spider close (nothing scheduled, none objected).
  bool idle_lets_close();
  void begin_close(const std::string& reason);
  void watch_close();
  void say_what_holds_the_close();
  std::string close_holders() const;
  // Puts requests the fetcher gave back (`were`: "in flight", ...) back in the queue.
  void restore_unsent(std::vector<request> requests, std::string_view were);
  void finish();
  void fail_startup(std::exception_ptr error);

  boost::asio::io_context& io_;
  const settings& settings_;
  stats& stats_;
  spider& spider_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<scheduler> scheduler_;
  std::shared_ptr<detail::page_ledger> ledger_;
  scheme_policy schemes_;
  signal_bus signals_;
  // What components are built with: it names the crawl's own objects and lives as long as the
  // engine, so a component may keep it (as Scrapy's self.crawler = crawler).
  crawl_context context_;
  std::unique_ptr<detail::fetcher> fetcher_;
  std::vector<std::unique_ptr<extension>> extensions_;
  crawl_timer idle_timer_;  // asks spider_idle again while a handler keeps it open
  bool idle_held_ = false;                // a handler threw dont_close_spider: wait for the timer
  crawl_timer closespider_timer_;
  // A close that waits says, every few seconds, what it waits for (watch_close), read from the
  // ledger.
  crawl_timer close_watch_;
  crawl_clock::time_point closing_since_{};
  std::vector<std::function<void()>> when_opened_;

  phase phase_ = phase::opening;
  std::string close_reason_;
  std::exception_ptr startup_error_;
  crawl_clock::time_point started_{};
  bool pumping_ = false;
  bool pump_again_ = false;
  bool pump_posted_ = false;
  // Last, so its parse pool is joined before anything its jobs could touch is destroyed.
  std::unique_ptr<detail::scraper> scraper_;
};

}  // namespace crawler
