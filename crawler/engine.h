// The engine: drives a crawl, as Scrapy's ExecutionEngine: the flow of requests and responses,
// when the spider is idle and how it closes, the CLOSESPIDER_* limits and the parse pool.
//
//   crawler::engine engine{io, settings, stats, spider};
//   engine.add_pipeline(std::make_unique<my_pipeline>());
//   auto reason = engine.run();      // runs `io` until the spider closes: "finished", ...
//
// It pulls from the scheduler while the downloader has room, runs the downloader middlewares,
// hands responses through the spider middlewares to the request's callback, sends the requests a
// callback yields back to the scheduler (a page's requests as one batch) and its items through the
// pipelines to the feeds. The spider is idle when nothing is queued, nothing is downloading and no
// batch is waiting for the dupefilter; it then sends spider_idle (signals.h) and closes with
// "finished" unless a handler scheduled requests or threw dont_close_spider.
//
// close(reason) stops taking requests from the queue and lets downloads in flight finish; their
// responses are still parsed and what they yield is still queued (and saved with JOBDIR).
// force_close() stops at once and puts every request in flight back in the queue. Both are safe to
// call from any thread. CLOSESPIDER_TIMEOUT/ITEMCOUNT/PAGECOUNT/ERRORCOUNT close the spider with
// Scrapy's reasons (closespider_timeout, ...). With ROBOTSTXT_OBEY, requests pass the robots.txt
// gate (robots_gate.h) before the downloader middlewares; requests it holds count as in flight.
// For a spider that parses_html, HTML responses are parsed on a pool of worker threads (one per
// core) before the spider middlewares and the callback run on the loop; they count as in flight
// too, and so does a page until what it yielded is through the dupefilter (stored: a round trip
// with a Redis dupefilter or a fleet's queue), but up to CONCURRENT_REQUESTS pages waiting for
// their store leave their download slot to the next request. A spider with
// concurrent_callbacks has the callbacks of its 2xx HTML pages run on the pool (parsing or not),
// after the spider middlewares' process_spider_input on the loop; what they yield comes back to
// the loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
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
  void pump();
  void download(request request);
  void send(request request, downloader::completion done);
  void fetch_unscheduled(request request, downloader::completion done);
  std::optional<request> process_download(download_result& result);
  void on_downloaded(download_result result);
  void handle_response(response response);
  void deliver(response response);
  bool admit(response& response);
  // What a callback run off the loop threw, to be logged and counted on it.
  struct callback_outcome {
    enum class kind { done, skipped, failed } kind = kind::done;
    std::string type, reason, message;
  };
  static callback_outcome call_spider(spider& spider, const response& response, output& out);
  void settle_callback(const callback_outcome& outcome, const response& response, output& out);
  std::size_t held_outside_downloader() const;
  // Of those, the ones that hold a download slot.
  std::size_t holding_download_slots() const;
  void check_start_request(const request& request) const;
  void handle_failure(failure failure);
  void run_callback(const response& response);
  // `page`: the request whose outcome this is; its lease (the JOBDIR journal's id, or the fleet's
  // lease) is settled with it.
  void process_output(output& out, const response* from, const request& page);
  // The item as the pipelines left it, or nullopt when one dropped it.
  std::optional<crawler::item> process_item(crawler::item item, const response* from);
  // Whether `pipeline` passed `item` on; when it did not, says why (drop or error).
  bool passes(item_pipeline& pipeline, crawler::item& item, const response* from);
  void report_stopped(const crawler::item& item, const response* from, std::exception_ptr error);
  void log_scraped(const crawler::item& item, const response* from) const;
  // With a pipeline that waits (pipeline.h): a page's items on their way through the pipelines.
  struct page_items;
  void process_items_later(std::vector<crawler::item> items, const response* from,
                           const request* page, page_outcome outcome, bool export_now);
  void run_pipelines(crawler::item item, std::size_t slot, std::size_t next,
                     const std::shared_ptr<page_items>& held);
  void item_through(const std::shared_ptr<page_items>& held, std::size_t slot,
                    std::optional<crawler::item> item);
  // Hands a page's outcome on once its items are through the pipelines (`had_items`: some were
  // yielded, so JOBDIR writes them through first).
  void finish_page(page_outcome outcome, const request& page, bool had_items);
  // Component downloads (download()): sent, answered, and given back by a close.
  void send_component_download(request request);
  void on_component_downloaded(download_result result);
  void answer_component_download(download_result result);
  void cancel_component_download(request request);
  // Writes a processed item to the feeds and counts it (item_scraped_count), unless the
  // scheduler counted it with its page's outcome (`counted`).
  void export_item(const crawler::item& item, const response* from = nullptr,
                   bool counted = false);
  // Whether the items of the page that holds `lease` are exported once its outcome is stored
  // rather than as they come (scheduler::items_wait_for_store).
  bool items_wait_for_store(const std::string& lease) const;
  // Hands a page's outcome to the scheduler, and exports its items once stored when they wait.
  // `flushed`: with JOBDIR, the feeds' flush that handed on the page's items (0: none).
  void store(page_outcome outcome, std::uint64_t flushed = 0);
  void check_idle();
  void watch_close();
  void say_what_holds_the_close();
  std::string close_holders() const;
  // Whether spider_idle's handlers let the spider close (nothing scheduled, none objected).
  bool idle_lets_close();
  void begin_close(const std::string& reason);
  // Puts requests the downloader gave back (`were`: "in flight", ...) back in the queue. A
  // component's download is sent again, or with `forced` answered as cancelled.
  void restore_unsent(std::vector<request> requests, std::string_view were, bool forced = false);
  void finish();
  void count_page();
  void count_error();
  void feed_failed();
  void fail_startup(std::exception_ptr error);

  boost::asio::io_context& io_;
  const settings& settings_;
  stats& stats_;
  spider& spider_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<scheduler> scheduler_;
  std::unique_ptr<downloader> downloader_;
  scheme_policy schemes_;
  html_limits html_limits_;
  html_parser html_parser_;
  std::vector<std::unique_ptr<downloader_middleware>> downloader_middlewares_;
  std::unique_ptr<robots_gate> robots_;  // with ROBOTSTXT_OBEY
  std::vector<std::unique_ptr<spider_middleware>> spider_middlewares_;
  std::vector<std::unique_ptr<item_pipeline>> pipelines_;
  std::unique_ptr<feed_exporter> feeds_;
  signal_bus signals_;
  // What components are built with: it names the crawl's own objects and lives as long as the
  // engine, so a component may keep it (as Scrapy's self.crawler = crawler).
  crawl_context context_;
  std::vector<std::unique_ptr<extension>> extensions_;
  boost::asio::steady_timer idle_timer_;  // asks spider_idle again while a handler keeps it open
  bool idle_held_ = false;                // a handler threw dont_close_spider: wait for the timer
  boost::asio::steady_timer closespider_timer_;
  // A close that waits says, every few seconds, what it waits for (watch_close): stage by stage,
  // with the pages in the pipelines by URL (pipeline_pages_, beside pages_in_pipelines_: the
  // pages themselves, their URLs read only when the close says them).
  crawl_timer close_watch_;
  crawl_clock::time_point closing_since_{};
  std::set<const page_items*> pipeline_pages_;
  std::vector<std::function<void()>> when_opened_;

  phase phase_ = phase::opening;
  std::string close_reason_;
  std::set<std::string> skip_reasons_said_;  // page_too_complex reasons logged at WARNING
  std::exception_ptr startup_error_;
  std::chrono::steady_clock::time_point started_;
  std::size_t pending_stores_ = 0;  // outcomes the scheduler has not stored yet
  bool pumping_ = false;
  bool pump_again_ = false;
  std::int64_t item_limit_, page_limit_, error_limit_;
  std::int64_t items_ = 0, pages_ = 0, errors_ = 0;
  bool flush_feeds_per_page_;  // JOBDIR: a page's items reach the OS before it is marked done
  bool feeds_hold_unrecorded_ = false;  // JOBDIR could not record a page whose items they hold
  std::size_t parsing_ = 0;
  std::size_t answered_here_ = 0;  // a downloader middleware ignored or answered, not yet handed on
  bool pipelines_wait_ = false;    // some pipeline is an async_item_pipeline
  std::size_t pages_in_pipelines_ = 0;
  // Responses received for leased pages whose outcome waits for its store, by lease: the
  // scheduler counts them with the outcome (page_outcome::responses).
  std::unordered_map<std::string, std::size_t> responses_to_store_;
  // A close cancelled component downloads: pages still in the pipelines go back to the queue.
  bool downloads_cancelled_ = false;
  // What components asked download() for, by the id their request's meta carries.
  std::map<std::uint64_t, std::function<void(download_result)>> component_downloads_;
  std::uint64_t next_component_download_ = 0;
  // Last, so it is joined before anything its jobs could touch is destroyed.
  // With spider.parses_html or concurrent_callbacks.
  std::unique_ptr<boost::asio::thread_pool> parsers_;
};

}  // namespace crawler
