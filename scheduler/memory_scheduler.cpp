#include "scheduler/memory_scheduler.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "config/log.h"
#include "request/canonical_url.h"
#include "scheduler/detail/jobdir_lock.h"
#include "scheduler/request_journal.h"

namespace crawler {

namespace {

// SCHEDULER_MEMORY_QUEUE_LIMIT: segments in JOBDIR/queue-segments, or a temporary folder, written
// as JOBDIR's queue is (never a secret header; request_secrets.h).
spill_options spill_options_for(const settings& settings, const std::string& jobdir) {
  spill_options options;
  options.memory_limit = std::size_t(settings.get_int("SCHEDULER_MEMORY_QUEUE_LIMIT"));
  if (options.memory_limit == 0) return options;
  if (!jobdir.empty()) options.directory = std::filesystem::path(jobdir) / "queue-segments";
  options.encode = [secrets = request_secrets(settings)](const request& request) {
    return secrets.to_json(request).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  options.decode = [](std::string_view line, const std::string& where) {
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_discarded()) throw std::invalid_argument(where + ": not JSON");
    auto read = request::from_json(json, where);
    // A request read from a shared queue keeps what it may not ask for.
    if (json.is_object() && json.value("origin", "") == "shared")
      read.origin = request_origin::shared;
    return read;
  };
  return options;
}

// SCHEDULER_QUEUE_CLASS: "host" for the host frontier; the fleet's orders (priority, fifo,
// lifo and scrapy-redis's class paths) leave SCHEDULER_MEMORY_QUEUE in charge.
std::unique_ptr<request_frontier> frontier_for(const settings& settings,
                                               const std::string& jobdir) {
  if (settings.get_string("SCHEDULER_QUEUE_CLASS") != "host") {
    return std::make_unique<memory_queue>(queue_order_from(settings),
                                          spill_options_for(settings, jobdir));
  }
  if (settings.get_int("SCHEDULER_MEMORY_QUEUE_LIMIT") > 0) {
    throw settings_error(
        "SCHEDULER_MEMORY_QUEUE_LIMIT: the host frontier (SCHEDULER_QUEUE_CLASS = \"host\") keeps "
        "its requests in memory; set one or the other");
  }
  return std::make_unique<host_queue>(
      queue_order_from(settings),
      host_queue::pace{
          .limit = std::size_t(
              std::max<std::int64_t>(0, settings.get_int("CONCURRENT_REQUESTS_PER_DOMAIN"))),
          .delay = settings.get_double("DOWNLOAD_DELAY"),
          .randomize = settings.get_bool("RANDOMIZE_DOWNLOAD_DELAY")});
}

}  // namespace

std::unique_ptr<scheduler> memory_scheduler::create(const scheduler_context& context) {
  auto dupefilter = dedup::make_dupefilter(
      {context.settings, context.stats, context.spider_name, context.executor, context.redis});
  return std::unique_ptr<scheduler>(new memory_scheduler(context, std::move(dupefilter)));
}

memory_scheduler::memory_scheduler(const scheduler_context& context,
                                   std::unique_ptr<dedup::rfp_dupefilter> dupefilter)
    : scheduler(context),
      settings_(context.settings),
      jobdir_(context.settings.get_string("JOBDIR")),
      // Now, before the engine builds the feeds: a second process writes nothing at all.
      jobdir_lock_(jobdir_.empty() ? nullptr : std::make_unique<detail::jobdir_lock>(jobdir_)),
      queue_(frontier_for(context.settings, jobdir_)),
      hosts_(dynamic_cast<host_queue*>(queue_.get())),
      due_timer_(context.executor),
      dupefilter_(std::move(dupefilter)),
      dupefilter_records_at_once_(!dupefilter_->stored_keys().empty()) {}

memory_scheduler::~memory_scheduler() = default;

void memory_scheduler::do_open(asio::any_completion_handler<done_signature> handler) {
  try {
    load_queue();
  } catch (...) {
    return std::move(handler)(std::current_exception());
  }
  auto open = [this](asio::any_completion_handler<done_signature> handler) {
    dupefilter_->async_open([this, handler = std::move(handler)](std::exception_ptr error) mutable {
      if (error) return std::move(handler)(error);
      check_loaded(std::move(handler));
    });
  };
  // scrapy-redis's SCHEDULER_FLUSH_ON_START: this crawl starts from an empty Redis dupefilter.
  if (!settings_.get_bool("SCHEDULER_FLUSH_ON_START")) return open(std::move(handler));
  dupefilter_->async_flush([open, handler = std::move(handler)](std::exception_ptr error) mutable {
    if (error) return std::move(handler)(error);
    open(std::move(handler));
  });
}

// Requests the last run saved unchecked go through the dupefilter now, as any new request does.
void memory_scheduler::check_loaded(asio::any_completion_handler<done_signature> handler) {
  if (!journaled_.empty()) {
    // Requests queued since the last clean close: their fingerprints are seen, whether or not
    // the dupefilter saved them before the crash.
    auto fingerprints = std::move(journaled_);
    journaled_.clear();
    return dupefilter_->async_seen(
        fingerprints,
        [this, handler = std::move(handler)](std::exception_ptr error, dedup::seen_flags) mutable {
          if (error) return std::move(handler)(error);
          check_loaded(std::move(handler));
        });
  }
  if (unchecked_.empty()) return std::move(handler)(nullptr);
  auto batch = std::move(unchecked_);
  unchecked_.clear();
  auto count = batch.size();
  do_store({.requests = std::move(batch)},
           [this, count, handler = std::move(handler)](
               std::exception_ptr error, stored_outcome outcome, page_outcome unstored) mutable {
             if (error) {
               unchecked_ = std::move(unstored.requests);  // saved again at close
               return std::move(handler)(error);
             }
             logger_->info("Checked {} requests saved unchecked: {} queued, {} already seen", count,
                           outcome.queued, count - outcome.queued);
             std::move(handler)(nullptr);
           });
}

void memory_scheduler::do_store(page_outcome outcome,
                                asio::any_completion_handler<attempt_signature> handler) {
  host_done(outcome.lease);
  if (journal_failed_) return not_recorded(std::move(outcome), std::move(handler));
  auto requests = std::move(outcome.requests);
  const auto& parent_lease = outcome.lease;
  std::vector<dedup::fingerprint> fingerprints;
  std::vector<std::size_t> filtered_positions;  // requests[i] that go through the dupefilter
  fingerprints.reserve(requests.size());
  filtered_positions.reserve(requests.size());
  // Those accepted are moved down in place, not into a second vector: a page of a million links
  // would hold two million requests here.
  std::size_t kept = 0;
  for (auto& request : requests) {
    if (!request.dont_filter) {
      try {
        fingerprints.push_back(fingerprint_of(request, scheme_));
      } catch (const dedup::url_error& error) {
        logger_->error("Dropped {}: {}", request.describe(), error.what());
        continue;
      }
      request.remembered_fingerprint.reset();  // used: not worth its bytes in the queue
      filtered_positions.push_back(kept);
    }
    if (&requests[kept] != &request) requests[kept] = std::move(request);
    ++kept;
  }
  requests.erase(requests.begin() + std::ptrdiff_t(kept), requests.end());
  if (fingerprints.empty()) {
    std::vector<request> none_dropped;
    auto queued = queue_new(requests, {}, {}, {}, parent_lease, false, none_dropped);
    return std::move(handler)(nullptr,
                              stored_outcome{.queued = queued,
                                             .items = std::move(outcome.items),
                                             .recorded = !journal_failed_},
                              page_outcome{});
  }
  // A Redis dupefilter records what it answers at once: the journal writes ahead of it
  // (request_journal.h), or a crash between the two would leave fingerprints without requests.
  bool ahead = journal_ && dupefilter_records_at_once_;
  bool journaled_ahead = ahead && parent_lease.empty();
  if (ahead) {
    if (journaled_ahead) {
      for (auto& request : requests) journal_->queued(request);
    } else {
      journal_->settling(parent_lease);
    }
    commit_journal();
    if (journal_failed_) return not_recorded(std::move(outcome), std::move(handler));
  }
  // queue_new needs the fingerprints only while pages torn by a crash wait (torn_settles_, which
  // only shrinks).
  auto tracked = torn_settles_.empty() ? std::vector<dedup::fingerprint>{} : fingerprints;
  dupefilter_->async_seen(
      fingerprints,
      [this, batch = std::move(requests), positions = std::move(filtered_positions),
       fingerprints = std::move(tracked), outcome = std::move(outcome), journaled_ahead,
       handler = std::move(handler)](std::exception_ptr error, dedup::seen_flags flags) mutable {
        if (error) {
          // The caller keeps the batch and offers it again: these journal ids are not its.
          if (journaled_ahead) {
            for (const auto& request : batch) journal_->done(request.lease);
            commit_journal();
          }
          outcome.requests = std::move(batch);
          return std::move(handler)(error, stored_outcome{}, std::move(outcome));
        }
        check_dupefilter_record();
        stored_outcome stored;
        stored.queued = queue_new(batch, flags, fingerprints, positions, outcome.lease,
                                  journaled_ahead, stored.dropped);
        stored.items = std::move(outcome.items);
        stored.recorded = !journal_failed_;
        std::move(handler)(nullptr, std::move(stored), page_outcome{});
      });
}

std::size_t memory_scheduler::queue_new(std::vector<request>& requests,
                                        const dedup::seen_flags& flags,
                                        const std::vector<dedup::fingerprint>& fingerprints,
                                        const std::vector<std::size_t>& filtered_positions,
                                        const std::string& parent_lease, bool journaled_ahead,
                                        std::vector<request>& dropped) {
  // Mark duplicates first: flags[i] (fingerprints[i]) belongs to requests[filtered_positions[i]].
  // A page whose links were being checked at a crash gets no verdict from the dupefilter, which
  // may have recorded them just before it: its link is a duplicate when the journal holds its
  // request. So until every such page is settled, the journal's fingerprints are kept here.
  bool tracking = !torn_settles_.empty();
  bool torn = tracking && !parent_lease.empty() && torn_settles_.erase(parent_lease) > 0;
  std::vector<bool> duplicate(requests.size(), false);
  for (std::size_t i = 0; i < flags.size(); ++i) {
    bool seen = flags[i];
    if (tracking) {
      auto prefix = fingerprints[i].prefix64();
      if (torn) seen = journal_prefixes_.contains(prefix);
      if (!seen) journal_prefixes_.insert(prefix);
    }
    duplicate[filtered_positions[i]] = seen;
  }
  if (tracking && torn_settles_.empty()) journal_prefixes_ = {};
  std::size_t queued = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (duplicate[i]) {
      if (journaled_ahead) journal_->done(requests[i].lease);
      auto referer = find_header(requests[i].headers, "Referer");
      dupefilter_->log(requests[i].describe(), referer.empty() ? "None" : referer);
      if (report_dropped_) dropped.push_back(std::move(requests[i]));
      continue;
    }
    if (journal_ && !journaled_ahead) journal_->queued(requests[i]);
    queue_->push(std::move(requests[i]));
    ++queued;
  }
  // In one write, before the dupefilter's file gets these fingerprints (request_journal.h).
  if (journal_) {
    if (!parent_lease.empty()) journal_->done(parent_lease);
    commit_journal();
  }
  check_segments();
  if (!told_segments_ && queue_->in_memory() < queue_->size()) {
    told_segments_ = true;
    logger_->info(
        "The queue passed SCHEDULER_MEMORY_QUEUE_LIMIT ({} requests): the requests past "
        "it wait in {}",
        settings_.get_int("SCHEDULER_MEMORY_QUEUE_LIMIT"), queue_->segments_directory().string());
  }
  if (queued) {
    stats_.inc_value("scheduler/enqueued/memory", std::int64_t(queued));
    stats_.inc_value("scheduler/enqueued", std::int64_t(queued));
  }
  return queued;
}

// A JOBDIR that cannot be written stops the crawl: what is not journaled would be lost to a crash.
// From the first failure on, nothing more is recorded (request_journal::commit): the dupefilter's
// own record, which trails the journal, stops too, or a resume would take the links of a page the
// journal never got for seen, and lose them.
void memory_scheduler::commit_journal() {
  try {
    journal_->commit();
  } catch (const std::exception& error) {
    if (!journal_failed_) {
      journal_failed_ = true;
      dupefilter_->stop_recording();
    }
    jobdir_failed(error.what());
  }
}

// Once the journal has failed, an outcome is neither checked nor queued: a Redis dupefilter would
// record its links for good, and the queue would not be saved. Its page stays pending in JOBDIR,
// so the resume crawls it again and finds its links again.
void memory_scheduler::not_recorded(page_outcome outcome,
                                    asio::any_completion_handler<attempt_signature> handler) {
  std::move(handler)(nullptr, stored_outcome{.items = std::move(outcome.items), .recorded = false},
                     page_outcome{});
}

void memory_scheduler::check_dupefilter_record() {
  if (auto failure = dupefilter_->record_failure(); !failure.empty()) jobdir_failed(failure);
}

void memory_scheduler::jobdir_failed(const std::string& why) {
  if (jobdir_failed_) return;
  jobdir_failed_ = true;
  logger_->error("{}; closing the spider", why);
  fatal("jobdir_write_failed");
}

// Segments that cannot be written or read back stop the crawl, as a JOBDIR that cannot be
// written does: a crawl that goes on past its memory limit, or past lost requests, would not be
// the crawl that was asked for.
void memory_scheduler::check_segments() {
  if (segments_failed_ || queue_->spill_failure().empty()) return;
  segments_failed_ = true;
  logger_->error("{}; closing the spider (SCHEDULER_MEMORY_QUEUE_LIMIT)", queue_->spill_failure());
  fatal("queue_segments_failed");
}

std::optional<request> memory_scheduler::next_request() {
  auto next = queue_->pop();
  check_segments();
  if (next) {
    stats_.inc_value("scheduler/dequeued/memory");
    stats_.inc_value("scheduler/dequeued");
    if (hosts_) {
      // Its outcome, stored under this lease, ends its host's turn.
      if (next->lease.empty()) next->lease = "host-" + std::to_string(++next_lease_);
      running_[next->lease] = pacing_host(*next);
    }
  } else if (hosts_) {
    wake_when_due();
  }
  return next;
}

void memory_scheduler::wake_when_due() {
  auto due = hosts_->next_due();
  if (!due) return;  // every host with requests is at its limit: a stored outcome frees one
  due_timer_.expires_at(*due);
  due_timer_.async_wait([this](boost::system::error_code cancelled) {
    if (!cancelled) ready();
  });
}

void memory_scheduler::host_done(const std::string& lease) {
  if (!hosts_ || lease.empty()) return;
  auto found = running_.find(lease);
  if (found == running_.end()) return;
  hosts_->done(found->second);
  running_.erase(found);
}

void memory_scheduler::record_pace(const request& fetched, const host_pace& pace) {
  if (hosts_) hosts_->set_pace(pacing_host(fetched), pace);
}

void memory_scheduler::restore(request request) {
  host_done(request.lease);
  queue_->push(std::move(request));
  check_segments();
}

void memory_scheduler::keep_unchecked(page_outcome outcome) {
  for (auto& request : outcome.requests) unchecked_.push_back(std::move(request));
}

void memory_scheduler::do_close(asio::any_completion_handler<done_signature> handler) {
  std::exception_ptr save_error;
  std::size_t saved = 0;
  try {
    saved = save_queue();
  } catch (...) {
    save_error = std::current_exception();
  }
  // Close the dupefilter even when the queue could not be saved: each component in its own guard.
  // Without SCHEDULER_PERSIST a Redis dupefilter's keys go with the crawl, as in scrapy-redis; a
  // crawl that JOBDIR will resume has not ended, and its resume needs them.
  bool keep = settings_.get_bool("SCHEDULER_PERSIST");
  if (!keep && saved && dupefilter_records_at_once_) {
    logger_->info(
        "Kept the dupefilter's Redis keys for the resume, SCHEDULER_PERSIST=false "
        "notwithstanding");
    keep = true;
  }
  dupefilter_->async_close(
      [this, keep, save_error, handler = std::move(handler)](std::exception_ptr error) mutable {
        if (error || keep) return std::move(handler)(save_error ? save_error : error);
        dupefilter_->async_flush(
            [save_error, handler = std::move(handler)](std::exception_ptr error) mutable {
              std::move(handler)(save_error ? save_error : error);
            });
      });
}

void memory_scheduler::load_queue() {
  if (jobdir_.empty()) return;
  journal_ = std::make_unique<request_journal>(jobdir_, settings_.get_bool("JOBDIR_FSYNC"),
                                               request_secrets(settings_));
  // A line at a time, so a resumed queue larger than memory goes to its segments as it is read.
  // Of the journaled requests (seen, done or not) only the fingerprints are kept.
  bool torn = false;
  auto replay = journal_->open(
      [this](request queued) {
        if (queued.dont_filter) return;
        try {
          journaled_.push_back(fingerprint_of(queued, scheme_));
        } catch (const dedup::url_error&) {
        }
      },
      [this, &torn](const request_journal::replay_summary& found) {
        torn = !found.torn_settles.empty();
        if (!torn) return;
        torn_settles_.insert(found.torn_settles.begin(), found.torn_settles.end());
        for (const auto& fingerprint : journaled_) journal_prefixes_.insert(fingerprint.prefix64());
      },
      [this, &torn](request pending) {
        if (torn) {
          try {
            journal_prefixes_.insert(fingerprint_of(pending, scheme_).prefix64());
          } catch (const dedup::url_error&) {
          }
        }
        queue_->push(std::move(pending));
      });
  if (replay.torn_lines) {
    logger_->warn("{}/requests.journal: dropped its last line, cut short by a crash", jobdir_);
  }
  if (replay.stale_journal) {
    logger_->warn(
        "{}/requests.journal: left by a crash during a close, whose queue was "
        "saved: ignored",
        jobdir_);
  }
  if (torn) {
    logger_->info(
        "{} pages had their links checked by the dupefilter when the crawl stopped: their links "
        "are checked against the journal when they are crawled",
        torn_settles_.size());
  }
  if (auto failure = queue_->spill_failure(); !failure.empty()) throw std::runtime_error(failure);
  for (auto& request : replay.unchecked) unchecked_.push_back(std::move(request));
  if (!queue_->empty() || !unchecked_.empty()) {
    logger_->info("Resuming crawl ({} requests scheduled{})", queue_->size(),
                  unchecked_.empty()
                      ? std::string()
                      : ", " + std::to_string(unchecked_.size()) + " to check with the dupefilter");
  }
}

std::size_t memory_scheduler::save_queue() {
  if (!journal_) return 0;
  if (auto failure = dupefilter_->record_failure(); !failure.empty()) {
    // The dupefilter's file lacks fingerprints: the journal, whose every request the resume marks
    // seen again, stays whole rather than being compacted into a snapshot of what is pending.
    for (auto& request : unchecked_) journal_->queued(request);
    journal_->commit();
    logger_->warn("Kept {}/requests.journal uncompacted, as the dupefilter could not save: {}",
                  jobdir_, failure);
    return queue_->size() + unchecked_.size();
  }
  journal_->compact(
      [this](const auto& visit) {
        queue_->for_each(visit);
        // A segment that could not be read back: the journal, which still has its requests,
        // stays as it is rather than giving way to a snapshot without them.
        if (auto failure = queue_->spill_failure(); !failure.empty()) {
          throw std::runtime_error(failure);
        }
      },
      unchecked_);
  auto saved = queue_->size() + unchecked_.size();
  if (saved > 0) {
    logger_->info("Saved {} pending requests to {}/requests.queue.jsonl", saved, jobdir_);
  }
  return saved;
}

}  // namespace crawler
