// fleet_scheduler's opening: joining the fleet (SCHEDULER_FLUSH_ON_START's flush by the first
// worker, with shards in two steps), checking what Redis holds under the fleet's keys (their
// types, the layout version, the number of shards, the epoch), waiting out a Redis that is away
// or full, and opening the dupefilters.
#include "config/log.h"
#include "redis/bounded_get.h"
#include "redis/endpoint.h"
#include "redis/reply_error.h"
#include "scheduler/fleet/detail/fleet_lua.h"
#include "scheduler/fleet/fleet_scheduler.h"

namespace crawler {
namespace {

// fleet/lua/flush_once.lua (its keys and arguments at its top), after what it calls.
const std::string flush_once_script =
    std::string(detail::lua::live_worker) + detail::lua::flush + detail::lua::flush_once;

// fleet/lua/claim_flush.lua (its keys and arguments at its top), after what it calls.
const std::string claim_flush_script =
    std::string(detail::lua::live_worker) + detail::lua::claim_flush;

// fleet/lua/flush_shard.lua (its keys and arguments at its top), after what it calls.
const std::string flush_shard_script = std::string(detail::lua::flush) + detail::lua::flush_shard;

// The version of the fleet's key layout: what its keys hold and what its scripts expect of them.
// Raise it with any change a worker of the release before would misread: a worker that finds
// another version in <queue>:layout refuses to start, naming both (check_key_types).
constexpr std::string_view fleet_layout_version = "1";

}  // namespace

void fleet_scheduler::do_open(asio::any_completion_handler<done_signature> handler) {
  open_fleet(std::make_shared<asio::any_completion_handler<done_signature>>(std::move(handler)));
}

// A Redis that is away (restarting, loading its data, paused past the command timeout) or past
// maxmemory (it refuses writes that would grow it): worth waiting for, at the worker's start (the
// open's first writes are the layout's version and the epoch) as mid-crawl and at its close,
// until REDIS_FAILURE_TIMEOUT. An outage at start is no more the crawl's end than one later. A
// refused password or database number is no outage: it stops.
bool fleet_scheduler::worth_waiting_for(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const redis::reply_error& refused) {
    return refused.retrying_helps();
  } catch (const redis::redis_error& away) {
    std::string_view what = away.what();
    return what.find(" refused AUTH") == what.npos && what.find(" refused SELECT") == what.npos;
  } catch (...) {
    return false;
  }
}

void fleet_scheduler::open_fleet(
    std::shared_ptr<asio::any_completion_handler<done_signature>> opened) {
  auto shared = std::make_shared<asio::any_completion_handler<done_signature>>(
      [this, alive = alive_, opened](std::exception_ptr error) {
        if (!*alive) return;
        if (error && worth_waiting_for(error)) {
          redis_failed("open the fleet's keys", error);
          bool too_long = failure_timeout_.count() > 0 &&
                          crawl_clock::now() - *redis_down_since_ >= failure_timeout_;
          if (!too_long) {
            poll_timer_.expires_after(std::chrono::seconds(1));
            return poll_timer_.async_wait([this, alive, opened](boost::system::error_code stop) {
              if (!*alive) return;
              if (!stop) return open_fleet(opened);
              std::move (*opened)(std::make_exception_ptr(std::runtime_error(
                  "closed while waiting for Redis at " + client_->where().address())));
            });
          }
          logger_->error("Could not open the fleet's keys for {} s (REDIS_FAILURE_TIMEOUT)",
                         std::chrono::duration<double>(failure_timeout_).count());
        }
        if (!error) {
          memory_recovered();
          redis_answered();
        }
        std::move (*opened)(error);
      });
  auto check_then_open = [this, alive = alive_, shared] {
    if (!*alive) return;
    check_key_types([this, shared] { join_epoch(shared); }, shared);
  };
  if (!flush_on_start_) return check_then_open();
  if (queue_.size() > 1) return flush_shards(check_then_open, shared);
  const auto& queue = queue_.shard(0);
  auto keys = fleet_keys();
  keys.insert(keys.end(), {queue_key_ + ":bad", queue_key_ + ":dead", queue_key_ + ":shards",
                           stats_key_, queue.epoch_key(), queue_key_ + ":layout"});
  redis::command flush{"EVAL", flush_once_script, std::to_string(keys.size())};
  flush.insert(flush.end(), keys.begin(), keys.end());
  flush.push_back(queue.worker());
  flush.push_back(worker_record());
  if (const auto& frontier = queue.host_frontier_keys(); !frontier.empty()) {
    flush.insert(flush.end(), {queue_key_ + ":host:", frontier[0], frontier[1]});
  }
  client_->async_command(std::move(flush), [this, alive = alive_, shared, check_then_open](
                                               std::exception_ptr error, redis::reply answer) {
    if (!*alive) return;
    error = flush_problem(error, answer, queue_key_ + ":leased");
    if (error) return std::move(*shared)(error);
    if (answer.integer == 1) {
      logger_->info("Flushed the fleet's queue, dupefilter and stats (SCHEDULER_FLUSH_ON_START)");
    } else {
      logger_->info(
          "SCHEDULER_FLUSH_ON_START: workers of this crawl are running; joined them "
          "without flushing");
    }
    check_then_open();
  });
}

std::exception_ptr fleet_scheduler::flush_problem(std::exception_ptr error,
                                                  const redis::reply& answer,
                                                  const std::string& leased) const {
  if (error) return error;
  if (answer.is_error()) {
    return std::make_exception_ptr(
        std::runtime_error("SCHEDULER_FLUSH_ON_START: flushing the fleet's keys at " +
                           client_->where().address() + " failed: " + answer.str));
  }
  if (answer.elements.size() != 2) return nullptr;
  return std::make_exception_ptr(std::runtime_error(
      "SCHEDULER_FLUSH_ON_START: not flushing the fleet at " + client_->where().address() + ": " +
      leased + " holds " + std::to_string(answer.elements[0].integer) +
      " leases that have not expired (the last in " + std::to_string(answer.elements[1].integer) +
      " s), though no worker has a fresh heartbeat in " + workers_key_ +
      ": a worker holding them may be paused or starting. Flushing would throw away "
      "requests it holds. Start again once they expire, or stop every worker and delete "
      "the keys yourself"));
}

// With shards: this worker claims the flush in the fleet's own slot (claim_flush_script), then
// flushes each shard in its slot (flush_shard_script). A worker that joins between the two steps
// joined shards that are then flushed under it: it stops with redis_state_lost (their epochs are
// gone), and started again, crawls on.
void fleet_scheduler::flush_shards(
    std::function<void()> then,
    std::shared_ptr<asio::any_completion_handler<done_signature>> fail) {
  redis::command claim{"EVAL",
                       claim_flush_script,
                       "6",
                       workers_key_,
                       stats_key_,
                       queue_key_ + ":bad",
                       queue_key_ + ":dead",
                       queue_key_ + ":shards",
                       queue_key_ + ":epoch",  // of a fleet of one shard on these keys
                       queue_.worker(),
                       worker_record()};
  client_->async_command(std::move(claim), [this, alive = alive_, then = std::move(then), fail](
                                               std::exception_ptr error, redis::reply answer) {
    if (!*alive) return;
    error = flush_problem(error, answer, workers_key_);
    if (error) return std::move(*fail)(error);
    if (answer.integer != 1) {
      logger_->info(
          "SCHEDULER_FLUSH_ON_START: workers of this crawl are running; joined them "
          "without flushing");
      return then();
    }
    std::vector<redis::command> flushes;
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      const auto& shard = queue_.shard(i);
      auto keys = shard_keys(i);
      keys.insert(keys.begin(), shard.key() + ":deadlines");
      keys.insert(keys.end(), {shard.key() + ":bad", shard.key() + ":dead", shard.epoch_key()});
      redis::command flush{"EVAL", flush_shard_script, std::to_string(keys.size())};
      flush.insert(flush.end(), keys.begin(), keys.end());
      if (const auto& frontier = shard.host_frontier_keys(); !frontier.empty()) {
        flush.insert(flush.end(), {shard.key() + ":host:", frontier[0], frontier[1]});
      }
      flushes.push_back(std::move(flush));
    }
    // A flush starts the fleet over: on the layout of the worker that flushed it.
    flushes.push_back({"DEL", queue_key_ + ":layout"});
    client_->async_pipeline(
        std::move(flushes), [this, alive = alive_, then, fail](std::exception_ptr error,
                                                               std::vector<redis::reply> answers) {
          if (!*alive) return;
          for (std::size_t i = 0; !error && i < queue_.size(); ++i) {
            error = flush_problem(nullptr, answers[i], queue_.shard(i).key() + ":leased");
          }
          if (!error && answers.back().is_error()) {
            error = std::make_exception_ptr(
                redis::reply_error("delete " + queue_key_ + ":layout", answers.back().str));
          }
          if (error) return std::move(*fail)(error);
          logger_->info("Flushed the fleet's {} shards and its stats (SCHEDULER_FLUSH_ON_START)",
                        queue_.size());
          then();
        });
  });
}

// The scripts use LPOP with a count (Redis 6.2) and ZPOPMIN (5.0): an older server would fail
// every take with an error retrying cannot fix. A server whose INFO says nothing (a proxy that
// hides it) is taken at its word.
std::exception_ptr fleet_scheduler::version_problem(const redis::reply& info) const {
  if (info.is_error()) return nullptr;
  auto at = info.str.find("redis_version:");
  if (at == std::string::npos) return nullptr;
  int major = 0, minor = 0;
  if (std::sscanf(info.str.c_str() + at + 14, "%d.%d", &major, &minor) != 2) return nullptr;
  if (major > 6 || (major == 6 && minor >= 2)) return nullptr;
  auto end = info.str.find_first_of("\r\n", at);
  return std::make_exception_ptr(std::runtime_error(
      "Redis at " + client_->where().address() + " is version " +
      info.str.substr(at + 14, end == std::string::npos ? end : end - at - 14) +
      "; SCHEDULER=redis needs Redis 6.2 or later (its scripts use LPOP with a count)"));
}

// Workers of two releases that lay the fleet's keys out differently would run different scripts
// on the same keys, each misreading what the other wrote: refuse at start, naming both versions.
std::exception_ptr fleet_scheduler::layout_problem(const redis::reply& fleet,
                                                   const std::string& layout_key) const {
  if (fleet.is_error()) {
    return std::make_exception_ptr(redis::reply_error(
        "read the fleet's layout version in " + layout_key + " at " + client_->where().address(),
        fleet.str));
  }
  if (fleet.str == fleet_layout_version) return nullptr;
  return std::make_exception_ptr(std::runtime_error(
      "redis at " + client_->where().address() + ": " + layout_key +
      " says the fleet's keys are laid out as version " + quoted_for_log(fleet.str, 40) +
      ", and this worker lays them out as version " + std::string(fleet_layout_version) +
      ": workers of two releases would misread each other's keys. Run every worker of one "
      "release, or start this one with SCHEDULER_FLUSH_ON_START once the others have stopped, "
      "or give it another SCHEDULER_QUEUE_KEY"));
}

// A key of the wrong type would fail every script run on it, again and again: refuse at start,
// naming the key, what it holds and what the fleet keeps there.
void fleet_scheduler::check_key_types(
    std::function<void()> then,
    std::shared_ptr<asio::any_completion_handler<done_signature>> fail) {
  // The host frontier keeps nothing under the queue's own name, and the other orders nothing in
  // <queue>:count: finding them is finding a fleet of the other SCHEDULER_QUEUE_CLASS.
  bool hosts = queue_.order() == "host";
  auto queue_type = hosts ? "none" : queue_.order() == "priority" ? "zset" : "list";
  auto layout_key = queue_key_ + ":layout";
  std::vector<std::pair<std::string, std::string>> expected{
      {start_urls_key_, queue_.start_urls_type()},
      {stats_key_, "hash"},
      {workers_key_, "hash"},
      {queue_key_ + ":bad", "list"},
      {layout_key, "string"}};
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const auto& key = queue_.shard(i).key();
    expected.insert(expected.end(), {{key, queue_type},
                                     {key + ":count", hosts ? "string" : "none"},
                                     {key + ":leased", "hash"},
                                     {key + ":deadlines", "zset"},
                                     {key + ":seq", "string"},
                                     {key + ":settled", "hash"},
                                     {queue_.shard(i).epoch_key(), "string"},
                                     {key + ":bad", "list"},
                                     {key + ":deliveries", "hash"},
                                     {key + ":dead", "list"},
                                     {queue_.shard(i).items_key(), "list"}});
  }
  std::vector<redis::command> types;
  for (const auto& [key, type] : expected) types.push_back({"TYPE", key});
  types.push_back({"INFO", "server"});
  types.push_back(
      {"EVAL", detail::lua::claim_layout, "1", layout_key, std::string(fleet_layout_version)});
  // Every worker must share the fleet's requests out among the same shards: the first to start
  // writes their number beside the fleet's keys, one shard (today's keys) by leaving it unset.
  auto shards_key = queue_key_ + ":shards";
  if (queue_.size() > 1) {
    types.push_back({"EVAL", detail::lua::claim_shards, "2", shards_key, queue_key_ + ":epoch",
                     std::to_string(queue_.size())});
  } else {
    types.push_back(redis::bounded_get(shards_key, 256));
  }
  client_->async_pipeline(
      std::move(types),
      [this, alive = alive_, expected, shards_key, layout_key, then = std::move(then), fail](
          std::exception_ptr error, std::vector<redis::reply> replies) {
        if (!*alive) return;
        // An error reply (NOAUTH, a command renamed away) is Redis refusing the worker, never
        // the key's type or the server's version.
        for (std::size_t i = 0; !error && i < expected.size(); ++i) {
          if (replies[i].is_error()) {
            error = std::make_exception_ptr(redis::reply_error(
                "read the type of " + expected[i].first + " at " + client_->where().address(),
                replies[i].str));
          }
        }
        if (!error) error = version_problem(replies[expected.size()]);
        if (!error) error = layout_problem(replies[expected.size() + 1], layout_key);
        if (!error) {
          for (std::size_t i = 0; i < expected.size(); ++i) {
            const auto& held = replies[i].str;
            if (held == "none" || held == expected[i].second) continue;
            if (expected[i].second == "none") {
              error = std::make_exception_ptr(std::runtime_error(
                  "redis at " + client_->where().address() + ": key " + expected[i].first +
                  " holds a " + held + ": the queue " + queue_.shard(0).key() +
                  " was laid out for another SCHEDULER_QUEUE_CLASS than this worker's (" +
                  queue_.order() +
                  "). Give every worker the same one, or another SCHEDULER_QUEUE_KEY"));
              break;
            }
            error = std::make_exception_ptr(std::runtime_error(
                "redis at " + client_->where().address() + ": key " + expected[i].first +
                " holds a " + held + ", where the fleet keeps a " + expected[i].second +
                " (another program's key, or another SCHEDULER_QUEUE_CLASS?); delete it or "
                "choose other key names"));
            break;
          }
        }
        if (!error) {
          const auto& stored = replies.back();
          auto shards = std::to_string(queue_.size());
          bool unset = stored.type == redis::reply::kind::nil;
          if (stored.is_error() || (unset ? queue_.size() != 1 : stored.str != shards)) {
            auto found = stored.is_error()     ? quoted_for_log(stored.str, 200)
                         : stored.str == "one" ? std::string("1 (its queue's epoch, ") +
                                                     queue_key_ + ":epoch, is there)"
                         : unset ? std::string("1 (no ") + shards_key + ")"
                                 : quoted_for_log(stored.str, 40) + " (in " + shards_key + ")";
            error = std::make_exception_ptr(std::runtime_error(
                "redis at " + client_->where().address() +
                ": the fleet's requests are shared "
                "out among " +
                found + " shards, and this worker's SCHEDULER_SHARDS is " + shards +
                ": workers that disagree would queue and crawl one URL once per shard count. "
                "Give every worker the fleet's SCHEDULER_SHARDS, or another SCHEDULER_QUEUE_KEY"));
          }
        }
        if (error) return std::move(*fail)(error);
        then();
      });
}

// A Redis that evicts keys under maxmemory may drop the queue, a lease or the dupefilter; the
// epoch check stops the fleet when it does, but the operator should know before. CONFIG may be
// renamed away on managed servers: then nothing is said.
void fleet_scheduler::warn_if_evicting() {
  client_->async_command(
      {"CONFIG", "GET", "maxmemory*"},
      [this, alive = alive_](std::exception_ptr error, redis::reply answer) {
        if (!*alive || error || answer.is_error()) return;
        std::string policy, limit;
        for (std::size_t i = 0; i + 1 < answer.elements.size(); i += 2) {
          if (answer.elements[i].str == "maxmemory-policy") policy = answer.elements[i + 1].str;
          if (answer.elements[i].str == "maxmemory") limit = answer.elements[i + 1].str;
        }
        if (policy.empty() || policy == "noeviction" || limit == "0") return;
        logger_->warn(
            "Redis at {} has maxmemory {} with maxmemory-policy {}: it may evict the fleet's "
            "queue, leases or dupefilter under memory pressure (workers then stop with "
            "redis_state_lost); use maxmemory-policy noeviction for a fleet",
            client_->where().address(), limit, policy);
      });
}

// One shard's dupefilter after the other: each checks its own key and parameters.
void fleet_scheduler::open_dupefilters(
    std::size_t next, std::shared_ptr<asio::any_completion_handler<done_signature>> handler) {
  if (next < dupefilters_.size()) {
    return dupefilters_[next]->async_open(
        [this, alive = alive_, next, handler](std::exception_ptr error) {
          if (!*alive) return;
          if (error) return std::move(*handler)(error);
          open_dupefilters(next + 1, handler);
        });
  }
  open_ = true;
  warn_if_evicting();
  idle_since_ = crawl_clock::now();
  heartbeat();
  take_more();
  std::move (*handler)(nullptr);
}

void fleet_scheduler::join_epoch(
    std::shared_ptr<asio::any_completion_handler<done_signature>> opened) {
  queue_.async_join_epoch([this, alive = alive_, opened](std::exception_ptr error) {
    if (!*alive) return;
    if (error) return std::move(*opened)(error);
    open_dupefilters(0, opened);
  });
}

}  // namespace crawler
