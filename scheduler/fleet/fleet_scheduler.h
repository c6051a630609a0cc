// SCHEDULER=redis: the scheduler of one worker in a fleet that shares a Redis queue and
// dupefilter (redis_queue.h says how a request is held and settled).
//
// With the host frontier (SCHEDULER_QUEUE_CLASS = "host") the worker takes no more than it can
// download at once (CONCURRENT_REQUESTS less what it holds), so a request is fetched as soon as
// its host's turn is given, takes again as each page settles and when the next host is due, and
// reports with each settle what the download said of its host's pace (host_pace.h).
//
// The worker tops its batch of taken requests up to CONCURRENT_REQUESTS when fewer than a quarter
// are at hand (so it holds at most twice its concurrency: a batch and the downloads under way) and
// settles each finished request with its new requests in one round trip. Every
// SCHEDULER_HEARTBEAT_INTERVAL it renews its leases, adds what its counters gained to the hash
// <spider>:stats (HINCRBY; `crawler stats NAME`) and writes its line in <spider>:workers (`crawler
// status NAME`). An idle worker polls with a backoff up to 2 s. With MAX_IDLE_TIME_BEFORE_CLOSE > 0
// it reports nothing pending once the fleet's queue, start URLs and leases have been empty that
// long; 0 waits for work forever, as scrapy-redis. At close it puts back what it took and did not
// crawl; with SCHEDULER_PERSIST false it deletes the queue and the dupefilter only when no other
// worker is alive and nothing is queued or leased.
//
// Requests the spider starts with (no parent) are pushed through the dupefilter even when they
// are dont_filter, so a fleet whose workers all start from the same URLs crawls them once. Start
// URLs pushed to REDIS_START_URLS_KEY (`crawler push`) are moved into the queue, through the
// dupefilter, before each take.
// Redis away: the worker retries its takes and heartbeats with a backoff, and its outcomes wait in
// scheduler.h's way; leases live on Redis's clock, so an outage shorter than SCHEDULER_LEASE_TIME
// loses no lease. JOBDIR is ignored: the fleet's state is in Redis.
// Built by scheduler::create; used from the engine's loop only.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "config/crawl_clock.h"
#include "dedup/dupefilter.h"
#include "redis/backoff.h"
#include "scheduler/fleet/redis_queue.h"
#include "scheduler/fleet/sharded_queue.h"
#include "scheduler/scheduler.h"

namespace crawler {

class fleet_scheduler final : public scheduler {
 public:
  /// Throws settings_error when DUPEFILTER_CLASS is not a Redis backend or a setting conflicts.
  static std::unique_ptr<scheduler> create(const scheduler_context& context);
  ~fleet_scheduler() override;

  std::optional<request> next_request() override;
  void restore(request request) override;
  bool has_pending_requests() const override;
  std::string start_request_problem(const request& request) const override;
  bool items_wait_for_store() const override { return true; }
  std::size_t size() const override { return queue_.queued() + buffer_.size(); }
  void set_request_check(std::function<std::string(const request&)> check) override {
    queue_.set_check(std::move(check));
  }
  bool paces_hosts() const override { return queue_.order() == "host"; }
  bool paces_addresses() const override { return paces_hosts(); }
  void record_pace(const request& fetched, const host_pace& pace) override;

 private:
  fleet_scheduler(const scheduler_context& context,
                  std::vector<std::unique_ptr<dedup::rfp_dupefilter>> dupefilters,
                  std::unique_ptr<settings> shard_settings, std::shared_ptr<redis::client> client,
                  std::optional<entry_signer> signer);

  void do_open(asio::any_completion_handler<done_signature> handler) override;
  void do_store(page_outcome outcome,
                asio::any_completion_handler<attempt_signature> handler) override;
  void keep_unchecked(page_outcome outcome) override;
  void do_close(asio::any_completion_handler<done_signature> handler) override;

  void check_key_types(std::function<void()> then,
                       std::shared_ptr<asio::any_completion_handler<done_signature>> fail);
  // Why this Redis is too old for the fleet's scripts (INFO server's answer), or null.
  std::exception_ptr version_problem(const redis::reply& info) const;
  std::exception_ptr layout_problem(const redis::reply& fleet, const std::string& layout_key) const;
  void open_dupefilters(std::size_t next,
                        std::shared_ptr<asio::any_completion_handler<done_signature>> handler);
  void warn_if_evicting();
  // Leases that hold a download or wait to be downloaded (fleet_scheduler.cpp says which).
  std::size_t holding() const;
  void take_more();
  void take_leased();
  void after_empty_take();
  void heartbeat();
  void renew_leases();
  // Adds to the stats what the last takes set aside, reclaimed and moved to the dead letters.
  void count_set_asides();
  void redis_failed(const std::string& doing, std::exception_ptr error);
  // True (and the worker stops, saying why once) when retrying cannot help: the fleet's state is
  // gone (fleet_state_lost), or Redis refused a command in a way it will refuse it again (a
  // redis::reply_error that is not an outage: a key of the wrong type, a script's runtime error),
  // or the queue holds entries of the other form (queue_form_mismatch).
  bool stopped(std::exception_ptr error);
  // Stops the worker for an error no retry fixes: counts `stat`, logs `message`, closes with
  // `finish_reason`; once. Returns true.
  bool stop_for_good(const char* stat, const std::string& message, const char* finish_reason);
  void redis_answered();
  // True when `error` is Redis's OOM answer, which is said once until memory_recovered().
  bool out_of_memory(const std::string& doing, std::exception_ptr error);
  void open_fleet(std::shared_ptr<asio::any_completion_handler<done_signature>> opened);
  // Whether `error` is worth waiting out (Redis away or out of memory) rather than failing on.
  static bool worth_waiting_for(std::exception_ptr error);
  void join_epoch(std::shared_ptr<asio::any_completion_handler<done_signature>> opened);
  void memory_recovered();
  // An error reply to one of this file's scripts, as a redis::reply_error.
  std::exception_ptr refusal(const std::string& doing, const std::string& text) const;
  // Counts and reports records of `key` a script moved to <queue>:bad.
  void set_aside_here(long long count, const std::string& key);
  std::string worker_record() const;
  std::vector<std::string> fleet_keys() const;
  // The shards' :bad (or :dead) lists, for a log line.
  std::string bad_keys(const char* suffix) const;
  // A shard's keys of the crawl's state: its queue's and its dupefilter's.
  std::vector<std::string> shard_keys(std::size_t shard) const;
  // SCHEDULER_FLUSH_ON_START and SCHEDULER_PERSIST=false for more than one shard, whose keys no
  // one script may touch on a cluster: each in steps (fleet_scheduler.cpp says which).
  void flush_shards(std::function<void()> then,
                    std::shared_ptr<asio::any_completion_handler<done_signature>> fail);
  void delete_finished_shards(std::function<void()> then);
  // What a flush's answer says went wrong: an error, or leases of `leased` not yet expired.
  std::exception_ptr flush_problem(std::exception_ptr error, const redis::reply& answer,
                                   const std::string& leased) const;
  void close_dupefilters(asio::any_completion_handler<done_signature> handler);
  // Adds what the counters gained since the last flush to the fleet's stats hash.
  // Adds what the counters gained since the last flush to <spider>:stats; `then` gets the error
  // when they could not be added (the next flush sends them again).
  void flush_stats(std::function<void(std::exception_ptr)> then = {});
  // Counts `count` of `key` in this worker's stats as one the fleet's stats have already (a
  // settle added it) or must not (another worker held the page): heartbeats add the rest.
  void count_with_page(const std::string& key, std::size_t count);
  void flush_stats_at_close(std::chrono::steady_clock::time_point since,
                            std::function<void()> then);
  void leave_fleet(asio::any_completion_handler<done_signature> handler);

  // What shard dupefilters are built from (BLOOMFILTER_CAPACITY shared out among them); null for
  // one shard. Declared first: the dupefilters read it.
  std::unique_ptr<settings> shard_settings_;
  // One per shard (SCHEDULER_SHARDS), each with its shard's key.
  std::vector<std::unique_ptr<dedup::rfp_dupefilter>> dupefilters_;
  std::shared_ptr<redis::client> client_;
  std::string spider_, queue_key_, start_urls_key_, stats_key_, workers_key_;
  std::map<std::string, std::int64_t> flushed_;  // the counters as last added to stats_key_
  sharded_queue queue_;
  std::size_t batch_size_;
  std::size_t start_urls_batch_;  // REDIS_START_URLS_BATCH_SIZE
  std::chrono::milliseconds heartbeat_interval_;
  std::chrono::seconds max_idle_;
  std::chrono::milliseconds failure_timeout_;  // REDIS_FAILURE_TIMEOUT
  bool persist_, flush_on_start_;
  bool store_items_;  // REDIS_PIPELINE
  std::deque<leased_request> buffer_;
  // Leases taken and not yet settled or released, each with the time until which it is surely
  // held: its take or its last renewal was sent less than the lease time before.
  std::map<std::string, std::chrono::steady_clock::time_point> held_;
  std::chrono::milliseconds lease_time_;  // SCHEDULER_LEASE_TIME
  std::vector<std::string> to_release_;   // restored by the engine; released at close
  // A close that waits for the take under way (taking_) to come back.
  std::optional<asio::any_completion_handler<done_signature>> close_waiting_;
  // The host frontier: what each leased page's download said of its host, until its settle.
  std::map<std::string, host_pace> paces_;
  // The host frontier: leases whose page's outcome waits for its store (holding()).
  std::set<std::string> storing_;
  // Whether a heartbeat has carried this worker's first page to the fleet's stats: `crawler status`
  // should not show 0 pages for a whole heartbeat interval.
  bool first_page_told_ = false;
  bool open_ = false, taking_ = false, renewing_ = false, fleet_done_ = false, state_lost_ = false,
       refused_ = false, out_of_memory_ = false;
  std::size_t reclaimed_ = 0, set_aside_ = 0, dead_ = 0;  // as last counted in the stats
  redis::backoff idle_backoff_{std::chrono::milliseconds(50), std::chrono::milliseconds(2000)};
  // On the crawl's clock, which a test can drive: MAX_IDLE_TIME_BEFORE_CLOSE and
  // REDIS_FAILURE_TIMEOUT are measured from these. The polls and heartbeats keep the machine's
  // time: leases live on Redis's clock.
  crawl_clock::time_point idle_since_{};
  std::optional<crawl_clock::time_point> redis_down_since_;
  asio::steady_timer poll_timer_, heartbeat_timer_;
  // Redis answers may arrive after the scheduler is gone: they check this first.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace crawler
