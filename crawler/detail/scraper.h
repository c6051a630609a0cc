// The scraper: Scrapy's Scraper. It takes a page the fetcher brought (or the failure that ended
// it) and turns it into the page's outcome: the spider middlewares' input side, the request's
// callback or errback (the page's document built on the parse pool first, or with
// concurrent_callbacks the callback run there too), the middlewares' output side, the items
// through the item pipelines (some of which may answer later) and out to the feeds.
//
//   scraper.scrape(std::move(response), page);   // the outcome comes back through hooks.store
//
// It counts what Scrapy's Scraper and CloseSpider count (responses, spider errors, scraped and
// dropped items) and asks for the close CLOSESPIDER_PAGECOUNT, _ERRORCOUNT and _ITEMCOUNT make.
// When the scheduler says a page's items wait for its outcome to be stored (a fleet worker, whose
// lease may be lost meanwhile), it exports them once stored; with JOBDIR it writes a page's items
// through to the feeds before the page is marked done.
//
// On the engine's loop, but for the jobs it runs on its parse pool.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "crawler/detail/page_ledger.h"
#include "crawler/feeds.h"
#include "crawler/middleware.h"
#include "crawler/parse/html.h"
#include "crawler/pipeline.h"
#include "crawler/signals.h"
#include "crawler/spider.h"
#include "scheduler/scheduler.h"

namespace crawler::detail {

class scraper {
 public:
  /// What the scraper asks of the engine.
  struct hooks {
    /// Store `outcome` through the scheduler, `page` marked as storing until it is stored; then
    /// run `then` (when set) with what the store did.
    std::function<void(page_outcome outcome, page_ledger::ticket page,
                       std::function<void(const stored_outcome&)> then)>
        store;
    /// `page` is not done (its items could not all be written, or a close cancelled a download
    /// its items waited for): back to the queue, to be crawled again.
    std::function<void(const request& page)> put_back;
    /// Close the spider with `reason` (a CLOSESPIDER_* count reached, a feed that failed).
    std::function<void(const std::string& reason)> close;
  };

  /// Builds the feeds; the middlewares and pipelines come from components (middlewares(),
  /// pipelines()). `queue`: the scheduler, which says how a page's items are exported and works
  /// out what it needs of a page's links on the parse pool.
  scraper(boost::asio::io_context& io, const settings& settings, stats& stats, spider& spider,
          signal_bus& signals, const scheduler& queue, hooks hooks);
  ~scraper();
  scraper(const scraper&) = delete;
  scraper& operator=(const scraper&) = delete;

  /// The spider middlewares, in their order.
  std::vector<std::unique_ptr<spider_middleware>>& middlewares() { return middlewares_; }
  void add_pipeline(std::unique_ptr<item_pipeline> pipeline);

  /// Opens the item pipelines; throws what one throws.
  void open();
  /// The start requests and items (`page` stands for them), through the spider middlewares'
  /// process_start_requests and the pipelines, stored as the outcome of no page.
  void start(output start, page_ledger::ticket page);
  /// A page fetched: its callback's outcome is stored (hooks.store).
  void scrape(response response, page_ledger::ticket page);
  /// A page whose download failed, or that a middleware turned away: its errback's outcome.
  void scrape_failure(failure failure, page_ledger::ticket page);
  /// A close cancelled a component's download: pages still in the pipelines are put back.
  void downloads_were_cancelled() { downloads_cancelled_ = true; }
  /// Closes the pipelines and the feeds; false when a feed could not be written.
  bool close();

 private:
  // What a callback run off the loop threw, to be logged and counted on it.
  struct callback_outcome {
    enum class kind { done, skipped, failed } kind = kind::done;
    std::string type, reason, message;
  };
  // A page's items, each in its slot, while a pipeline that waits holds some of them.
  struct page_items;
  // A page's ticket is handed on by value, down to the store that lets it go: a copy left up the
  // stack would keep the page in the ledger after its outcome was stored.

  void deliver(response response, page_ledger::ticket page);
  // On a refusal it hands `page` on with the failure.
  bool admit(response& response, page_ledger::ticket& page);
  void call_concurrently(response response, page_ledger::ticket page);
  // From the parse pool: the requests a callback has yielded so far go to the loop, which
  // stores them as store_yielded does; returns once the loop has taken them.
  void hand_over(std::vector<request>& yielded, const response& from);
  void store_yielded(std::vector<request> requests, const response& from);
  static callback_outcome call_spider(spider& spider, const response& response, output& out);
  void settle_callback(const callback_outcome& outcome, const response& response, output& out,
                       page_ledger::ticket page);
  // `page`: the request whose outcome this is; its lease is settled with it.
  void process_output(output& out, const response* from, const request& page,
                      page_ledger::ticket ticket);
  std::optional<crawler::item> process_item(crawler::item item, const response* from);
  bool passes(item_pipeline& pipeline, crawler::item& item, const response* from);
  void report_stopped(const crawler::item& item, const response* from, std::exception_ptr error);
  void log_scraped(const crawler::item& item, const response* from) const;
  void process_items_later(std::vector<crawler::item> items, const response* from,
                           const request* page, page_outcome outcome, bool export_now,
                           page_ledger::ticket ticket);
  void run_pipelines(crawler::item item, std::size_t slot, std::size_t next,
                     const std::shared_ptr<page_items>& held);
  void item_through(const std::shared_ptr<page_items>& held, std::size_t slot,
                    std::optional<crawler::item> item);
  void finish_page(page_outcome outcome, const request& page, bool had_items,
                   page_ledger::ticket ticket);
  // Hands an outcome to the engine to store; then settles what the scraper keeps for it.
  // `flushed`: with JOBDIR, the feeds' flush that handed on the page's items (0: none).
  void store(page_outcome outcome, page_ledger::ticket page, std::uint64_t flushed = 0);
  bool items_wait_for_store(const std::string& lease) const;
  void export_item(const crawler::item& item, const response* from = nullptr, bool counted = false);
  void count_page();
  void count_error();
  void feed_failed();

  boost::asio::io_context& io_;
  stats& stats_;
  spider& spider_;
  signal_bus& signals_;
  const scheduler& queue_;
  hooks hooks_;
  std::shared_ptr<spdlog::logger> logger_;
  html_limits html_limits_;
  html_parser html_parser_;
  std::vector<std::unique_ptr<spider_middleware>> middlewares_;
  std::vector<std::unique_ptr<item_pipeline>> pipelines_;
  bool pipelines_wait_ = false;  // some pipeline is an async_item_pipeline
  std::unique_ptr<feed_exporter> feeds_;
  bool flush_feeds_per_page_;  // JOBDIR: a page's items reach the OS before it is marked done
  bool feeds_hold_unrecorded_ = false;       // JOBDIR could not record a page whose items they hold
  std::set<std::string> skip_reasons_said_;  // page_too_complex reasons logged at WARNING
  // Responses received for leased pages whose outcome waits for its store, by lease: the
  // scheduler counts them with the outcome (page_outcome::responses).
  std::unordered_map<std::string, std::size_t> responses_to_store_;
  bool downloads_cancelled_ = false;
  std::int64_t item_limit_, page_limit_, error_limit_;
  std::int64_t items_ = 0, pages_ = 0, errors_ = 0;
  // A callback on the pool waits here while the loop takes what it handed over; the scraper's
  // end lets it go, so joining the pool never waits on a loop that has stopped.
  std::mutex hand_over_mutex_;
  std::condition_variable handed_over_;
  bool abandoned_ = false;
  // Last, so it is joined before anything its jobs could touch is destroyed.
  // With spider.parses_html or concurrent_callbacks.
  std::unique_ptr<boost::asio::thread_pool> parsers_;
};

}  // namespace crawler::detail
