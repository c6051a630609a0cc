// The scheduler, as the engine sees it: where requests wait to be crawled, and where a crawled
// page's outcome (the requests and items it yielded) goes. Scrapy's BaseScheduler, which
// scrapy-redis replaces without the engine knowing; here too the engine names no queue and no
// Redis.
//
//   auto scheduler = crawler::scheduler::create({settings, stats, "books", io.get_executor()});
//   scheduler->async_open(handler);                       // dupefilter, saved or shared queue
//   scheduler->async_store({page.lease, links, items}, handler);  // one dupefilter batch
//   while (auto next = scheduler->next_request()) ...;
//   scheduler->begin_close();                             // waiting outcomes: last try
//   scheduler->async_close(handler);                      // saves or hands back the queue
//
// SCHEDULER picks the implementation: memory_scheduler.h, this process's queue (saved to JOBDIR),
// or fleet/fleet_scheduler.h (SCHEDULER=redis), a queue the fleet's workers share in Redis.
// Either filters a page's new requests through the dupefilter DUPEFILTER_CLASS selects (those
// not `dont_filter`, in one batch), logs duplicates through it (`dupefilter/filtered` or
// `bloomfilter/filtered`), and counts `scheduler/enqueued` and `scheduler/dequeued`.
//
// Storing an outcome does not fail. While the dupefilter cannot answer (its Redis away, or
// refusing writes) an outcome waits here, and those waiting are tried again together after a
// backoff (1 s doubling to 30 s), so such a Redis sees a few attempts a minute rather than one per
// finished page; `scheduler/store_outages` counts the outages. When REDIS_FAILURE_TIMEOUT seconds
// of failures are up (on the crawl's clock), a last try is made, and if it fails the scheduler
// calls on_fatal("redis_unavailable"). From begin_close on, an outcome
// that cannot be stored is kept unchecked (`scheduler/kept_unchecked`): JOBDIR saves its requests
// for the next run to put through the dupefilter, and a fleet's page goes back to the queue when
// its lease expires, to be crawled again with its outcome. A request is never lost.
// Used from the engine's loop only.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "request/fingerprint.h"
#include "request/item.h"
#include "request/request.h"
#include "scheduler/host_pace.h"

namespace spdlog {
class logger;
}

namespace crawler {

namespace asio = boost::asio;
namespace redis {
class client;
}

/// Whether `name`, a SCHEDULER value, selects the fleet's scheduler: "redis", or scrapy-redis's
/// "scrapy_redis.scheduler.Scheduler".
bool scheduler_is_redis(std::string_view name);

/// Whether items go to REDIS_ITEMS_KEY with their page (scrapy-redis's RedisPipeline): REDIS_PIPELINE,
/// or scrapy_redis.pipelines.RedisPipeline in ITEM_PIPELINES (other entries are Python classes,
/// named by settings::warnings()). Throws settings_error for a REDIS_ITEMS_SERIALIZER other than
/// scrapy-redis's default.
bool stores_items_in_redis(const settings& settings);

/// What a scheduler is built from: the crawl's settings, stats, spider name and event loop.
struct scheduler_context {
  const crawler::settings& settings;
  crawler::stats& stats;
  std::string spider_name;
  asio::any_io_executor executor;
  /// A Redis connection to share with the dupefilter; null makes one when a backend needs it.
  std::shared_ptr<redis::client> redis = nullptr;
};

/// What one crawled page (or the spider's start) yielded, stored as one step.
struct page_outcome {
  /// The page's request::lease ("" for the start requests): the page is marked done with its
  /// outcome (JOBDIR's journal, the fleet's lease).
  std::string lease;
  /// The requests it yielded, filtered through the dupefilter before they are queued.
  std::vector<request> requests;
  /// Its items, through the pipelines. SCHEDULER=redis with REDIS_PIPELINE stores them with the
  /// page, in <spider>:items; they come back in stored_outcome either way.
  std::vector<crawler::item> items;
  /// The responses received for the page that no counter holds yet: when items_wait_for_store(),
  /// the scheduler counts a page's response_received_count, and the item_scraped_count of its
  /// items (exported once stored), as it stores the outcome. A fleet stores them with the
  /// outcome in one step, so `crawler stats` counts each page a worker killed -9 had settled,
  /// and none it had not (whoever crawls it again counts it).
  std::size_t responses = 0;
};

/// What storing a page_outcome did.
struct stored_outcome {
  std::size_t queued = 0;
  /// False when the page's lease was no longer this worker's (SCHEDULER=redis: it stalled past
  /// SCHEDULER_LEASE_TIME and the fleet gave the request to another worker): nothing of the
  /// page's outcome was stored, since its new holder stores it, so its items are not this
  /// worker's to export or count either.
  bool settled = true;
  /// The outcome's items, handed back.
  std::vector<crawler::item> items;
  /// The requests the dupefilter dropped, when report_dropped_requests() asked for them.
  std::vector<crawler::request> dropped;
  /// False when JOBDIR could not record the outcome (its disk is full): the page stays pending
  /// there, and a resume crawls it again, items and all.
  bool recorded = true;
};

class scheduler {
 public:
  using done_signature = void(std::exception_ptr);
  using store_signature = void(stored_outcome);

  /// Builds the scheduler SCHEDULER selects (SCHEDULER_MEMORY_QUEUE its queue, DUPEFILTER_CLASS
  /// its dupefilter). Throws settings_error naming the setting when one is invalid, and
  /// std::runtime_error when another process holds JOBDIR.
  static std::unique_ptr<scheduler> create(const scheduler_context& context);
  virtual ~scheduler();

  /// Opens the dupefilter and, with JOBDIR, loads the saved queue (SCHEDULER=redis: joins the
  /// fleet). Fails when the crawl cannot start: what() names the problem.
  template <asio::completion_token_for<done_signature> Token>
  auto async_open(Token&& token) {
    return asio::async_initiate<Token, done_signature>(
        [this](auto handler) { do_open(std::move(handler)); }, token);
  }

  /// Filters the outcome's requests through the dupefilter as one batch, queues the new ones and
  /// marks the page done, in one step; completes once that is stored (see above: it waits
  /// through an outage). Called for every finished page that has a lease, with or without
  /// requests.
  template <asio::completion_token_for<store_signature> Token>
  auto async_store(page_outcome outcome, Token&& token) {
    return asio::async_initiate<Token, store_signature>(
        [this](auto handler, page_outcome outcome) {
          store(std::move(outcome), std::move(handler));
        },
        token, std::move(outcome));
  }

  /// The next request to download, or nullopt when none is at hand (with SCHEDULER=redis, one
  /// may arrive later: see on_ready).
  virtual std::optional<request> next_request() = 0;

  /// Puts back a request that was taken but not crawled (a forced shutdown), without the
  /// dupefilter and without counting it again, so JOBDIR (or the fleet's queue) keeps it.
  virtual void restore(request request) = 0;

  /// Requests queued and not yet handed out. SCHEDULER=redis: the fleet's whole queue as this
  /// worker last saw it (its last take, and what it queued since), plus what it has taken and
  /// not yet handed out (scrapy-redis's len(scheduler) is the Redis queue's length too).
  virtual std::size_t size() const = 0;

  /// False once there is nothing left to crawl (SCHEDULER=redis: for the whole fleet, for
  /// MAX_IDLE_TIME_BEFORE_CLOSE seconds).
  virtual bool has_pending_requests() const = 0;

  /// Works out ahead what storing `request` will need, on any thread (the parse pool, where the
  /// page's links were found): its fingerprint by REQUEST_FINGERPRINTER_IMPLEMENTATION, unless it
  /// is dont_filter. The crawl thread is then left only the dupefilter's lookup.
  void prepare(request& request) const {
    if (!request.dont_filter) remember_fingerprint(request, scheme_);
  }

  /// Why this scheduler could never run `request`, a start request, or "": the engine asks
  /// before the start requests go in, so a crawl that cannot run one stops before it starts.
  /// SCHEDULER=redis: the fleet's workers read their queue back as shared requests, so a start
  /// request must pass shared_request_problem (a file:// start URL is for one process).
  virtual std::string start_request_problem(const request&) const { return {}; }

  /// Whether a crawled page's items wait for its outcome to be stored before they are exported.
  /// SCHEDULER=redis: a worker that stalled past its lease finds the page settled by another
  /// worker (stored_outcome::settled false), whose items they are. Otherwise the engine exports
  /// them first, so that a crash just after the store (JOBDIR marks the page done) cannot lose
  /// them.
  /// Such a scheduler also counts the page's response_received_count (page_outcome::responses)
  /// and, once stored, its items' item_scraped_count: the engine counts neither for the page.
  virtual bool items_wait_for_store() const { return false; }

  /// What every request taken from a shared queue must pass (SCHEDULER=redis: the spider has its
  /// callback and errback): the reason it fails, or "". Requests this process queued itself are
  /// not checked.
  virtual void set_request_check(std::function<std::string(const request&)>) {}

  /// Whether this scheduler paces hosts itself (SCHEDULER_QUEUE_CLASS = "host", host_pace.h): it
  /// hands out a host's requests no faster than its delay and no more at once than
  /// CONCURRENT_REQUESTS_PER_DOMAIN, so the downloader waits no delay of its own and tells
  /// record_pace what each download said.
  virtual bool paces_hosts() const { return false; }
  /// With CONCURRENT_REQUESTS_PER_IP, whether a paces_hosts() scheduler also paces the hosts of
  /// one server address together (the fleet's, from the addresses its workers report); when it
  /// does not, the downloader keeps each address's delay itself.
  virtual bool paces_addresses() const { return false; }
  /// What the download of `fetched`, a request next_request() gave, said of its host's pace
  /// (paces_hosts() schedulers only; before its outcome is stored).
  virtual void record_pace(const request& /*fetched*/, const host_pace& /*pace*/) {}

  /// What the engine gives the scheduler before it opens it, in one call: connect().
  struct engine_hooks {
    /// From now on, stored_outcome::dropped holds the requests the dupefilter dropped (the engine
    /// asks when something listens to request_dropped); otherwise they are let go at once.
    bool report_dropped = false;
    /// Called when requests arrive that next_request() had not (SCHEDULER=redis takes them from
    /// Redis in the background), when has_pending_requests() changes, or when waiting outcomes
    /// were tried again: the engine pumps.
    std::function<void()> ready;
    /// Called when the scheduler cannot go on (see on_fatal): the engine closes the spider.
    std::function<void(const std::string& reason)> fatal;
    /// What every request taken from a shared queue must pass (see set_request_check).
    std::function<std::string(const request&)> request_check;
  };
  /// Sets every hook of `hooks` (on_ready, on_fatal, set_request_check,
  /// report_dropped_requests).
  void connect(engine_hooks hooks);

  /// Called when requests arrive that next_request() had not (SCHEDULER=redis takes them from
  /// Redis in the background), when has_pending_requests() changes, or when waiting outcomes
  /// were tried again: the engine pumps.
  void on_ready(std::function<void()> ready) { ready_ = std::move(ready); }

  /// Called when the scheduler cannot go on: its Redis failed for REDIS_FAILURE_TIMEOUT
  /// ("redis_unavailable"), JOBDIR cannot be written ("jobdir_write_failed"), the fleet's state
  /// is gone or Redis refuses its commands. It has said why; the engine closes the spider with
  /// that reason.
  void on_fatal(std::function<void(const std::string& reason)> fatal) { fatal_ = std::move(fatal); }

  /// From now on, stored_outcome::dropped holds the requests the dupefilter dropped (the engine
  /// asks when something listens to request_dropped); otherwise they are let go at once.
  void report_dropped_requests() { report_dropped_ = true; }

  /// The crawl is closing: outcomes waiting through an outage get their last try now, and from
  /// now on one that cannot be stored is kept unchecked instead of waiting.
  void begin_close();

  /// Saves the queue (JOBDIR; SCHEDULER=redis: hands back what it took and did not crawl) and
  /// closes the dupefilter. Every outcome has been stored or kept by then.
  template <asio::completion_token_for<done_signature> Token>
  auto async_close(Token&& token) {
    return asio::async_initiate<Token, done_signature>(
        [this](auto handler) { do_close(std::move(handler)); }, token);
  }

 protected:
  explicit scheduler(const scheduler_context& context);

  /// do_store's completion: on an error, nothing of the outcome was stored and it comes back
  /// untouched as `unstored`, to be tried again.
  using attempt_signature = void(std::exception_ptr, stored_outcome stored, page_outcome unstored);

  virtual void do_open(asio::any_completion_handler<done_signature> handler) = 0;
  virtual void do_store(page_outcome outcome,
                        asio::any_completion_handler<attempt_signature> handler) = 0;
  /// An outcome that could not be stored while closing: kept so that no request is lost.
  virtual void keep_unchecked(page_outcome outcome) = 0;
  virtual void do_close(asio::any_completion_handler<done_signature> handler) = 0;

  void ready() {
    if (ready_) ready_();
  }
  /// Stops the crawl with `reason`, said already.
  void fatal(const std::string& reason);

  crawler::stats& stats_;
  dedup::fingerprint_scheme scheme_;
  std::shared_ptr<spdlog::logger> logger_;
  bool report_dropped_ = false;  // report_dropped_requests() was called

 private:
  class waiting_outcomes;  // scheduler.cpp
  void store(page_outcome outcome, asio::any_completion_handler<store_signature> handler);

  std::unique_ptr<waiting_outcomes> waiting_;
  std::function<void()> ready_;
  std::function<void(const std::string&)> fatal_;
  bool closing_ = false;
  bool stopped_ = false;  // fatal() was called: it said why
};

}  // namespace crawler
