// The JOBDIR queue, crash-safe: a snapshot written at each clean close, and a journal appended as
// the crawl goes, so that a crawl killed at any instant (kill -9, power cut with JOBDIR_FSYNC)
// resumes with every request it had queued and not finished.
//
//   JOBDIR/requests.queue.jsonl   the snapshot: "# <token>", then one request (JSON) a line,
//                                 "unchecked": true on those the dupefilter could not check
//   JOBDIR/requests.journal       "# <token of the snapshot it follows>", then
//                                 "+<id> <request JSON>"  queued
//                                 "~<id>"                 its links are being checked (below)
//                                 "-<id>"                 its outcome is stored (done)
//
// A request in the snapshot has the id "s<line>"; one queued in a run has a number. Resuming
// replays the journal over the snapshot: what was queued and is not done is pending. A clean close
// writes a new snapshot (to a temporary file, then renamed over the old one) and deletes the
// journal; a crash between the two leaves a journal whose token no longer matches, which is then
// ignored, since the new snapshot already holds its effect. A last line without its newline is the
// mark of a crash mid-write: dropped with a warning. Any other line that does not read is an error
// naming the file and line.
//
// The scheduler appends the requests it queues (and the done mark of the page they came from) in
// one write before the dupefilter's own file records their fingerprints, so no fingerprint is ever
// durable without its request; on resume every journaled request is marked seen again, for
// dupefilters that had not saved theirs.
//
// A Redis dupefilter records a fingerprint the moment it answers, before the journal can hold the
// request. So with one the scheduler writes ahead instead: a batch without a parent page (start
// requests, requests saved unchecked) is journaled as queued before the check, and its duplicates
// are marked done after it; a page's links are announced by "~<page id>" before the check. A crash
// in between leaves that page pending and marked: resumed, its links are queued whatever the
// dupefilter answers, since the dupefilter may have recorded them just before the crash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "request/request.h"
#include "scheduler/request_secrets.h"

namespace crawler {

class request_journal {
 public:
  /// What a resume finds besides the requests themselves.
  struct replay_summary {
    /// Saved unchecked at the last close (the dupefilter could not answer): to check first.
    std::vector<request> unchecked;
    /// Ids of pending requests whose links were being checked at a crash ("~" without "-").
    std::vector<std::string> torn_settles;
    std::size_t torn_lines = 0;  // dropped: a crash cut them short
    bool stale_journal = false;  // a journal the snapshot already holds (crash during a close)
  };
  /// And the requests: the pending ones in queue order (each with its id in `lease`), and every
  /// request queued since the snapshot, done or not, whose fingerprints must be seen.
  struct replay : replay_summary {
    std::vector<request> pending;
    std::vector<request> journaled;
  };
  using visitor = std::function<void(request)>;

  /// `dir` is JOBDIR; `fsync`: JOBDIR_FSYNC; `secrets`: what of a request is never written.
  request_journal(std::filesystem::path dir, bool fsync, request_secrets secrets = {});
  ~request_journal();
  request_journal(const request_journal&) = delete;
  request_journal& operator=(const request_journal&) = delete;

  /// Reads the snapshot and the journal, then opens the journal for appending. Throws
  /// std::runtime_error naming the file and line of a line that does not read.
  replay open();
  /// The same, a line at a time, so that a resume holds no more of the queue than its consumer
  /// does (a memory_queue with a limit): `journaled` gets each request queued since the snapshot,
  /// `summary` what else was found once the journal is read, then `pending` each pending
  /// request in queue order. Holds 16 bytes per id and mark in the journal meanwhile.
  replay_summary open(const visitor& journaled,
                      const std::function<void(const replay_summary&)>& summary,
                      const visitor& pending);

  /// Gives `request` its id (in `lease`) and writes it as queued; written by the next commit().
  void queued(request& request);
  /// Announces that the links of the request with id `id` are being checked by a dupefilter that
  /// records them at once; written by the next commit().
  void settling(const std::string& id);
  /// Marks the request with id `id` done; written by the next commit().
  void done(const std::string& id);
  /// Writes what queued() and done() collected, in one write (and fsync with JOBDIR_FSYNC).
  /// Throws std::runtime_error naming the file when the write fails (a full disk). The journal
  /// then goes back to what the commits before wrote, and every later commit (and compact) throws
  /// the same error without writing: nothing is recorded after the first failure.
  void commit();
  /// Whether the journal holds exactly what the commits that returned wrote: false only when a
  /// write failed and the file could not be cut back after it (the resume may then find part of
  /// that batch).
  bool holds_only_commits() const { return holds_only_commits_; }

  /// Calls its argument with each pending request in queue order (memory_queue::for_each), so a
  /// queue larger than memory is written without being read into it.
  using pending_requests = std::function<void(const std::function<void(const request&)>&)>;

  /// The clean close: `pending` (and `unchecked`, marked so) become the snapshot, and the journal
  /// goes. Throws on a write error, leaving the previous snapshot and the journal as they were.
  void compact(const pending_requests& pending, const std::vector<request>& unchecked);
  void compact(const std::vector<request>& pending, const std::vector<request>& unchecked);

 private:
  std::filesystem::path snapshot_path_, journal_path_;
  bool fsync_;
  request_secrets secrets_;
  int fd_ = -1;
  std::uint64_t next_id_ = 1;
  std::string token_;    // the snapshot's
  std::string pending_;  // lines collected for the next commit
  std::uintmax_t committed_size_ = 0;  // the file's size after the last commit that succeeded
  std::string failure_;                // the first commit that failed, why
  bool holds_only_commits_ = true;
};

}  // namespace crawler
