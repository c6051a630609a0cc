#include "scheduler/scheduler.h"

#include <algorithm>
#include <chrono>

#include "config/crawl_clock.h"
#include "config/log.h"
#include "redis/backoff.h"

namespace crawler {

// The outcomes that could not be stored, and when to try them again: one backoff for all of
// them (1 s doubling to 30 s), one log line per ten seconds, and the REDIS_FAILURE_TIMEOUT
// deadline, all on the crawl's clock. What the dupefilter is, and whether Redis exists, it does
// not know.
class scheduler::waiting_outcomes {
 public:
  waiting_outcomes(scheduler& owner, const scheduler_context& context)
      : owner_(owner),
        timer_(context.executor),
        timeout_(to_clock_duration(context.settings.get_double("REDIS_FAILURE_TIMEOUT"))) {}

  ~waiting_outcomes() { *alive_ = false; }

  void wait(page_outcome outcome, asio::any_completion_handler<store_signature> handler,
            std::exception_ptr error) {
    auto now = crawl_clock::now();
    if (!failing_since_) {
      failing_since_ = now;
      owner_.stats_.inc_value("scheduler/store_outages");
    }
    waiting_.push_back({std::move(outcome), std::move(handler)});
    auto deadline = *failing_since_ + timeout_;
    if (timeout_.count() > 0 && now >= deadline) {
      owner_.logger_->error(
          "Could not store outcomes for {:.0f} s (REDIS_FAILURE_TIMEOUT): closing: {}",
          std::chrono::duration<double>(timeout_).count(), describe_error(error));
      // The engine's close calls begin_close, which gives them their last try.
      return owner_.fatal("redis_unavailable");
    }
    if (!armed_) {
      armed_ = true;
      crawl_clock::duration next_try = backoff_.next();
      // The last try is at the deadline, so that an outage of REDIS_FAILURE_TIMEOUT ends the crawl
      // then, not up to a backoff (30 s) later.
      if (timeout_.count() > 0) next_try = std::min(next_try, deadline - now);
      timer_.expires_after(next_try);
      timer_.async_wait([this, alive = alive_](boost::system::error_code) {
        if (!*alive) return;
        armed_ = false;
        // Also when cancelled (a close, or a store that went through): they try now.
        retry();
      });
    }
    if (!last_log_ || now - *last_log_ >= std::chrono::seconds(10)) {
      owner_.logger_->error(
          "{} outcomes (requests through the dupefilter) wait to be stored; next try in {:.0f} s: "
          "{}",
          waiting_.size(), std::chrono::duration<double>(timer_.expiry() - now).count(),
          describe_error(error));
      last_log_ = now;
    }
  }

  // An outcome was stored: the others need not wait out their backoff.
  void stored() {
    if (!failing_since_) return;
    auto down = crawl_clock::now() - *failing_since_;
    failing_since_.reset();
    backoff_.reset();
    owner_.logger_->info("Outcomes are stored again after {:.1f} s",
                         std::chrono::duration<double>(down).count());
    if (!waiting_.empty()) timer_.cancel();
  }

  // Every waiting outcome gets its try now (at close: its last).
  void try_now() {
    if (armed_) {
      timer_.cancel();
    } else {
      retry();
    }
  }

 private:
  struct waiting {
    page_outcome outcome;
    asio::any_completion_handler<store_signature> handler;
  };

  void retry() {
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& one : waiting) owner_.store(std::move(one.outcome), std::move(one.handler));
    owner_.ready();
  }

  scheduler& owner_;
  std::vector<waiting> waiting_;
  crawl_timer timer_;
  crawl_clock::duration timeout_;  // REDIS_FAILURE_TIMEOUT; 0 waits for ever
  bool armed_ = false;
  redis::backoff backoff_{std::chrono::seconds(1), std::chrono::seconds(30)};
  std::optional<crawl_clock::time_point> failing_since_;
  // None before the first line: the clock's epoch is the machine's boot, maybe seconds ago.
  std::optional<crawl_clock::time_point> last_log_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

scheduler::scheduler(const scheduler_context& context)
    : stats_(context.stats),
      scheme_(dedup::fingerprint_scheme_from(context.settings)),
      logger_(get_logger("scheduler")),
      waiting_(std::make_unique<waiting_outcomes>(*this, context)) {}

scheduler::~scheduler() = default;

void scheduler::store(page_outcome outcome, asio::any_completion_handler<store_signature> handler) {
  do_store(std::move(outcome), [this, handler = std::move(handler)](std::exception_ptr error,
                                                                    stored_outcome stored,
                                                                    page_outcome unstored) mutable {
    if (!error) {
      waiting_->stored();
      return std::move(handler)(std::move(stored));
    }
    if (!closing_) return waiting_->wait(std::move(unstored), std::move(handler), error);
    // One line, not one per page: the stat counts them all. Not when this scheduler stopped the
    // crawl: it said why, and this would quote its error a second time.
    if (stats_.get_int("scheduler/kept_unchecked") == 0 && !stopped_) {
      logger_->error(
          "Could not check requests with the dupefilter while closing; keeping them unchecked "
          "(scheduler/kept_unchecked counts them): {}",
          describe_error(error));
    }
    stats_.inc_value("scheduler/kept_unchecked", std::int64_t(unstored.requests.size()));
    auto items = std::move(unstored.items);
    keep_unchecked(std::move(unstored));
    // Not settled: the page is done again, with its outcome, by the run (or worker) that takes
    // it next, so its items are that run's to export.
    std::move(handler)(
        stored_outcome{.settled = false, .items = std::move(items), .recorded = false});
  });
}

void scheduler::connect(engine_hooks hooks) {
  on_ready(std::move(hooks.ready));
  on_fatal(std::move(hooks.fatal));
  if (hooks.request_check) set_request_check(std::move(hooks.request_check));
  if (hooks.report_dropped) report_dropped_requests();
}

void scheduler::begin_close() {
  if (closing_) return;
  closing_ = true;
  waiting_->try_now();
}

void scheduler::fatal(const std::string& reason) {
  stopped_ = true;
  if (fatal_) fatal_(reason);
}

}  // namespace crawler
