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
// Built by scheduler::create; used from the engine's loop only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "dedup/dupefilter.h"
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
  std::size_t size() const override { return queue_.size(); }
  bool has_pending_requests() const override { return !queue_.empty(); }

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
                        const std::string& parent_lease, bool journaled_ahead);
  void commit_journal();
  void check_dupefilter_record();
  void jobdir_failed(const std::string& why);
  void check_segments();
  void load_queue();
  void check_loaded(asio::any_completion_handler<done_signature> handler);
  std::size_t save_queue();  // how many requests it saved

  const crawler::settings& settings_;
  std::string jobdir_;
  // With JOBDIR: held while this lives. Taken first: a second process writes nothing at all,
  // not even the queue's segments in JOBDIR/queue-segments.
  std::unique_ptr<detail::jobdir_lock> jobdir_lock_;
  memory_queue queue_;
  std::vector<request> unchecked_;                // keep_unchecked; saved to and loaded from JOBDIR
  std::unique_ptr<request_journal> journal_;      // with JOBDIR
  std::vector<request> journaled_;                // queued since the last clean close: seen
  std::unordered_set<std::string> torn_settles_;  // request_journal::replay::torn_settles
  std::unordered_set<std::uint64_t> journal_prefixes_;  // while torn_settles_: queue_new
  bool jobdir_failed_ = false;
  bool segments_failed_ = false, told_segments_ = false;
  std::unique_ptr<dedup::rfp_dupefilter> dupefilter_;
  bool dupefilter_records_at_once_;  // a Redis backend: the journal writes ahead of it
};

}  // namespace crawler
