// The scheduler: owns the request queue and calls the dupefilter before queueing, as Scrapy's.
//
//   auto scheduler = crawler::scheduler::create({settings, stats, "books", io.get_executor()});
//   scheduler->async_open(handler);                          // dupefilter + JOBDIR queue
//   scheduler->async_enqueue(std::move(page_links), handler); // one dupefilter batch per call
//   while (auto next = scheduler->next_request()) ...;
//   scheduler->async_close(handler);                         // saves queue and dupefilter
//
// A call to async_enqueue fingerprints every request that is not `dont_filter` and asks the
// dupefilter about all of them in one batch (one Redis round trip for the Redis backends).
// Duplicates are logged through the dupefilter (`dupefilter/filtered` or `bloomfilter/filtered`);
// a request whose URL cannot be fingerprinted is logged as an error and dropped. Counts
// `scheduler/enqueued[/memory]` and `scheduler/dequeued[/memory]`.
//
// With JOBDIR set, close writes the queue to JOBDIR/requests.queue.jsonl (one request per line)
// and open reads it back, so a crawl stopped with Ctrl-C resumes where it left off. One process
// at a time: create throws, naming the holder's pid, while another holds the JOBDIR.
// Used from the engine's loop only. Completions take `(std::exception_ptr, ...)`.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "dedup/dupefilter.h"
#include "request/request.h"
#include "scheduler/request_journal.h"
#include "scheduler/request_queue.h"

namespace crawler {

namespace asio = boost::asio;
namespace detail {
class jobdir_lock;
}

/// Whether `name`, a SCHEDULER value, selects the fleet's scheduler: "redis", or scrapy-redis's
/// "scrapy_redis.scheduler.Scheduler".
bool scheduler_is_redis(std::string_view name);

/// What a scheduler is built from: the crawl's settings, stats, spider name and event loop.
struct scheduler_context {
  const crawler::settings& settings;
  crawler::stats& stats;
  std::string spider_name;
  asio::any_io_executor executor;
  /// A Redis connection to share with the dupefilter; null makes one when a backend needs it.
  std::shared_ptr<redis::client> redis = nullptr;
};

/// What async_enqueue did with a batch.
struct enqueue_outcome {
  std::size_t queued = 0;
  /// False when the parent's lease was no longer this worker's (SCHEDULER=redis: it stalled past
  /// SCHEDULER_LEASE_TIME and the fleet gave the request to another worker): nothing of the
  /// page's outcome was stored, since its new holder stores it, so its items are not this
  /// worker's to export or count either.
  bool settled = true;
};

class scheduler {
 public:
  using done_signature = void(std::exception_ptr);
  /// On an error (the dupefilter could not answer) nothing was queued and the batch comes back
  /// untouched as `unqueued`, so the caller can try again: a request is never lost.
  using enqueue_signature = void(std::exception_ptr, enqueue_outcome outcome,
                                 std::vector<request> unqueued);

  /// Builds the queue SCHEDULER and SCHEDULER_MEMORY_QUEUE select and the dupefilter
  /// DUPEFILTER_CLASS selects. Throws settings_error naming the setting when one is invalid, and
  /// std::runtime_error when another process holds JOBDIR.
  static std::unique_ptr<scheduler> create(const scheduler_context& context);
  virtual ~scheduler();

  /// Opens the dupefilter and, with JOBDIR, loads the saved queue.
  template <asio::completion_token_for<done_signature> Token>
  auto async_open(Token&& token) {
    return asio::async_initiate<Token, done_signature>(
        [this](auto handler) { do_open(std::move(handler)); }, token);
  }

  /// Filters `requests` through the dupefilter as one batch and queues the new ones; completes
  /// with how many were queued. `parent_lease` is the lease of the request they came from
  /// (request::lease, SCHEDULER=redis): its outcome is stored and its lease settled in the same
  /// step, so this is called, with no requests, for every finished leased request too.
  /// `items` (REDIS_PIPELINE, SCHEDULER=redis only) are stored in the same step.
  template <asio::completion_token_for<enqueue_signature> Token>
  auto async_enqueue(std::vector<request> requests, std::string parent_lease,
                     std::vector<nlohmann::json> items, Token&& token) {
    return asio::async_initiate<Token, enqueue_signature>(
        [this](auto handler, std::vector<request> batch, std::string lease,
               std::vector<nlohmann::json> items) {
          do_enqueue(std::move(batch), std::move(lease), std::move(items), std::move(handler));
        },
        token, std::move(requests), std::move(parent_lease), std::move(items));
  }
  template <asio::completion_token_for<enqueue_signature> Token>
  auto async_enqueue(std::vector<request> requests, Token&& token) {
    return async_enqueue(std::move(requests), std::string(), {}, std::forward<Token>(token));
  }

  /// The next request to download, or nullopt when none is at hand (with SCHEDULER=redis, one
  /// may arrive later: see on_ready).
  virtual std::optional<request> next_request();

  /// Puts back a request that was taken but not crawled (a forced shutdown), without the
  /// dupefilter and without counting it again, so JOBDIR (or the fleet's queue) keeps it.
  virtual void restore(request request);

  /// Keeps requests the dupefilter could not check (Redis away while closing): JOBDIR saves
  /// them marked unchecked, and the next run puts them through the dupefilter before queueing
  /// them, so they are neither lost nor crawled twice. SCHEDULER=redis: their leases (if any) go
  /// back to the fleet's queue.
  virtual void restore_unchecked(std::vector<request> requests);

  /// Requests queued and not yet handed out. SCHEDULER=redis: the fleet's whole queue as this
  /// worker last saw it (its last take, and what it queued since), plus what it has taken and
  /// not yet handed out (scrapy-redis's len(scheduler) is the Redis queue's length too).
  virtual std::size_t size() const { return queue_.size(); }
  /// REQUEST_FINGERPRINTER_IMPLEMENTATION, for remember_fingerprint. Fixed at construction, so
  /// any thread may read it.
  dedup::fingerprint_scheme fingerprint_scheme() const { return scheme_; }
  /// False once there is nothing left to crawl (SCHEDULER=redis: for the whole fleet, for
  /// MAX_IDLE_TIME_BEFORE_CLOSE seconds).
  virtual bool has_pending_requests() const { return !queue_.empty(); }

  /// Why this scheduler could never run `request`, a start request, or "": the engine asks
  /// before the start requests go in, so a crawl that cannot run one stops before it starts.
  /// SCHEDULER=redis: the fleet's workers read their queue back as shared requests, so a start
  /// request must pass shared_request_problem (a file:// start URL is for one process).
  virtual std::string start_request_problem(const request&) const { return {}; }

  /// Whether the scheduler stores a page's items with its outcome (SCHEDULER=redis with
  /// REDIS_PIPELINE: in <spider>:items, in the step that settles the page), so the engine hands
  /// them to async_enqueue.
  virtual bool stores_items() const { return false; }

  /// Whether a request's lease can be lost before its outcome is stored (SCHEDULER=redis: a
  /// worker that stalls past SCHEDULER_LEASE_TIME), so that async_enqueue may answer
  /// `settled = false`.
  virtual bool leases_can_be_lost() const { return false; }

  /// What every request taken from a shared queue must pass (SCHEDULER=redis: the spider has its
  /// callback and errback): the reason it fails, or "". Requests this process queued itself are
  /// not checked.
  virtual void set_request_check(std::function<std::string(const request&)>) {}

  /// Called when requests arrive that next_request() had not (SCHEDULER=redis takes them from
  /// Redis in the background), or when has_pending_requests() changes: the engine pumps again.
  void on_ready(std::function<void()> ready) { ready_ = std::move(ready); }

  /// Called when the scheduler cannot go on: a fleet's Redis failed for REDIS_FAILURE_TIMEOUT
  /// ("redis_unavailable"), JOBDIR cannot be written ("jobdir_write_failed"). The engine closes
  /// the spider with that reason.
  void on_fatal(std::function<void(const std::string& reason)> fatal) { fatal_ = std::move(fatal); }

  /// Saves the queue (JOBDIR) and closes the dupefilter.
  template <asio::completion_token_for<done_signature> Token>
  auto async_close(Token&& token) {
    return asio::async_initiate<Token, done_signature>(
        [this](auto handler) { do_close(std::move(handler)); }, token);
  }

  dedup::rfp_dupefilter& dupefilter() { return *dupefilter_; }

 protected:
  scheduler(const scheduler_context& context, std::unique_ptr<dedup::rfp_dupefilter> dupefilter);

  virtual void do_open(asio::any_completion_handler<done_signature> handler);
  virtual void do_enqueue(std::vector<request> requests, std::string parent_lease,
                          std::vector<nlohmann::json> items,
                          asio::any_completion_handler<enqueue_signature> handler);
  virtual void do_close(asio::any_completion_handler<done_signature> handler);
  void ready() {
    if (ready_) ready_();
  }
  void fatal(const std::string& reason) {
    if (fatal_) fatal_(reason);
  }
  std::size_t queue_new(std::vector<request>& requests, const dedup::seen_flags& flags,
                        const std::vector<dedup::fingerprint>& fingerprints,
                        const std::vector<std::size_t>& filtered_positions,
                        const std::string& parent_lease, bool journaled_ahead);
  void commit_journal();
  void check_dupefilter_record();
  void jobdir_failed(const std::string& why);
  void load_queue();
  void check_loaded(asio::any_completion_handler<done_signature> handler);
  std::size_t save_queue();  // how many requests it saved

  const crawler::settings& settings_;
  crawler::stats& stats_;
  std::string jobdir_;
  dedup::fingerprint_scheme scheme_;
  memory_queue queue_;
  std::vector<request> unchecked_;  // restore_unchecked; saved to and loaded from JOBDIR
  std::unique_ptr<detail::jobdir_lock> jobdir_lock_;    // with JOBDIR: held while this lives
  std::unique_ptr<request_journal> journal_;            // with JOBDIR
  std::vector<request> journaled_;                      // queued since the last clean close: seen
  std::unordered_set<std::string> torn_settles_;        // request_journal::replay::torn_settles
  std::unordered_set<std::uint64_t> journal_prefixes_;  // while torn_settles_: queue_new
  bool jobdir_failed_ = false;
  std::unique_ptr<dedup::rfp_dupefilter> dupefilter_;
  bool dupefilter_records_at_once_;  // a Redis backend: the journal writes ahead of it
  std::shared_ptr<spdlog::logger> logger_;
  std::function<void()> ready_;
  std::function<void(const std::string&)> fatal_;
};

}  // namespace crawler
