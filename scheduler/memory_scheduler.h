// SCHEDULER=memory (the default): the queue of one process, as Scrapy's own scheduler, in the
// order SCHEDULER_MEMORY_QUEUE says (priority first, then lifo or fifo).
//
// With JOBDIR, every request queued and every page done is journaled as it happens
// (request_journal.h), close compacts the journal to JOBDIR/requests.queue.jsonl (one request per
// line), and open reads it back, so a crawl stopped with Ctrl-C, or killed, resumes where it left
// off. One process at a time: create throws, naming the holder's pid, while another holds the
// JOBDIR. Requests kept unchecked (scheduler.h) are saved marked so, and the next run puts them
// through the dupefilter before queueing them. A request whose URL cannot be fingerprinted is
// logged as an error and dropped. Counts `scheduler/enqueued/memory` and
// `scheduler/dequeued/memory`.
//
// SCHEDULER_QUEUE_CLASS = "host" queues into the host frontier (host_queue.h) instead: a host's
// requests go out no faster than its delay and no more at once than
// CONCURRENT_REQUESTS_PER_DOMAIN, each in SCHEDULER_MEMORY_QUEUE's order, and the engine is woken
// when the next host is due. It keeps every request in memory (no SCHEDULER_MEMORY_QUEUE_LIMIT).
// Built by scheduler::create; used from the engine's loop only.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dedup/dupefilter.h"
#include "scheduler/host_queue.h"
#include "scheduler/request_journal.h"
#include "scheduler/request_queue.h"
#include "scheduler/scheduler.h"

namespace crawler {

namespace detail {
class jobdir_lock;
}

class memory_scheduler final : public scheduler {
 public:
  /// Throws settings_error for an invalid setting, std::runtime_error when another process holds
  /// JOBDIR.
  static std::unique_ptr<scheduler> create(const scheduler_context& context);
  ~memory_scheduler() override;

  std::optional<request> next_request() override;
  void restore(request request) override;
  std::size_t size() const override { return queue_->size(); }
  bool has_pending_requests() const override { return !queue_->empty(); }
  bool paces_hosts() const override { return hosts_ != nullptr; }
  void record_pace(const request& fetched, const host_pace& pace) override;

 private:
  memory_scheduler(const scheduler_context& context,
                   std::unique_ptr<dedup::rfp_dupefilter> dupefilter);

  void do_open(asio::any_completion_handler<done_signature> handler) override;
  void do_store(page_outcome outcome,
                asio::any_completion_handler<attempt_signature> handler) override;
  void keep_unchecked(page_outcome outcome) override;
  void do_close(asio::any_completion_handler<done_signature> handler) override;

  std::size_t queue_new(std::vector<request>& requests, const dedup::seen_flags& flags,
                        const std::vector<dedup::fingerprint>& fingerprints,
                        const std::vector<std::size_t>& filtered_positions,
                        const std::string& parent_lease, bool journaled_ahead,
                        std::vector<request>& dropped);
  void commit_journal();
  void not_recorded(page_outcome outcome, asio::any_completion_handler<attempt_signature> handler);
  void check_dupefilter_record();
  void jobdir_failed(const std::string& why);
  void check_segments();
  void load_queue();
  void check_loaded(asio::any_completion_handler<done_signature> handler);
  std::size_t save_queue();  // how many requests it saved
  // The host frontier: the request with `lease` is done with; its host has room again.
  void host_done(const std::string& lease);
  // The host frontier: pumps the engine when the next host is due.
  void wake_when_due();

  const crawler::settings& settings_;
  std::string jobdir_;
  // With JOBDIR: held while this lives. Taken first: a second process writes nothing at all,
  // not even the queue's segments in JOBDIR/queue-segments.
  std::unique_ptr<detail::jobdir_lock> jobdir_lock_;
  std::unique_ptr<request_frontier> queue_;
  // The host frontier (SCHEDULER_QUEUE_CLASS = "host"): queue_ itself, and what it handed out,
  // by lease, with the host each one holds a turn of.
  host_queue* hosts_ = nullptr;
  std::unordered_map<std::string, std::string> running_;
  std::uint64_t next_lease_ = 0;  // for requests without one (no JOBDIR)
  asio::steady_timer due_timer_;
  std::vector<request> unchecked_;                // keep_unchecked; saved to and loaded from JOBDIR
  std::unique_ptr<request_journal> journal_;      // with JOBDIR
  // The fingerprints of what was queued since the last clean close, dont_filter's aside: seen.
  std::vector<dedup::fingerprint> journaled_;
  std::unordered_set<std::string> torn_settles_;  // request_journal::replay::torn_settles
  std::unordered_set<std::uint64_t> journal_prefixes_;  // while torn_settles_: queue_new
  bool jobdir_failed_ = false;
  bool journal_failed_ = false;  // a commit failed: nothing is recorded any more
  bool segments_failed_ = false, told_segments_ = false;
  std::unique_ptr<dedup::rfp_dupefilter> dupefilter_;
  bool dupefilter_records_at_once_;  // a Redis backend: the journal writes ahead of it
};

}  // namespace crawler
