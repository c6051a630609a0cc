// fleet_scheduler's close: a take on its way is waited for, what this worker took and did not
// crawl goes back to the fleet's queue, its stats are flushed, its line in <spider>:workers goes,
// and with SCHEDULER_PERSIST=false the fleet's keys are deleted once the crawl is over for every
// worker.
#include "config/log.h"
#include "redis/reply_error.h"
#include "scheduler/fleet/detail/fleet_lua.h"
#include "scheduler/fleet/fleet_scheduler.h"

namespace crawler {

void fleet_scheduler::do_close(asio::any_completion_handler<done_signature> handler) {
  open_ = false;
  if (taking_) {
    // A take is on its way: its leases would outlive this worker, held until they expire.
    close_waiting_.emplace(std::move(handler));
    return;
  }
  if (set_aside_ > 0) {
    logger_->warn(
        "This worker set aside {} records it could not use (scheduler/set_aside): `crawler status "
        "{}` shows why, and `crawler requeue {} --bad` puts them back once fixed",
        set_aside_, spider_, spider_);
  }
  poll_timer_.cancel();
  heartbeat_timer_.cancel();
  if (state_lost_) {
    // Nothing of this worker's is left in Redis to put back, and its stats would go to a fleet
    // that is not the one it counted for; its line in <spider>:workers goes.
    return client_->async_command({"HDEL", workers_key_, queue_.worker()},
                                  [this, alive = alive_, handler = std::move(handler)](
                                      std::exception_ptr, redis::reply) mutable {
                                    if (!*alive) return;
                                    close_dupefilters(std::move(handler));
                                  });
  }
  // What was taken and not crawled goes back to the queue now, not when its lease expires.
  for (auto& leased : buffer_) to_release_.push_back(leased.lease_id);
  buffer_.clear();
  auto leases = std::move(to_release_);
  to_release_.clear();
  auto shared = std::make_shared<asio::any_completion_handler<done_signature>>(std::move(handler));
  auto finish = [this, alive = alive_, shared](std::exception_ptr error, std::size_t released) {
    if (!*alive) return;
    if (error) return std::move(*shared)(error);
    if (released) logger_->info("Put {} requests back in the fleet's queue", released);
    flush_stats_at_close(std::chrono::steady_clock::now(),
                         [this, shared] { leave_fleet(std::move(*shared)); });
  };
  if (leases.empty()) return finish(nullptr, 0);
  for (const auto& lease : leases) held_.erase(lease);
  queue_.async_release(leases, std::move(finish));
}

// fleet/lua/fleet_done.lua (its keys and arguments at its top), after what it calls.
const std::string fleet_done_script =
    std::string(detail::lua::live_worker) + detail::lua::fleet_done;

// fleet/lua/fleet_alive.lua (its keys and arguments at its top), after what it calls.
const std::string fleet_alive_script =
    std::string(detail::lua::live_worker) + detail::lua::fleet_alive;

void fleet_scheduler::leave_fleet(asio::any_completion_handler<done_signature> handler) {
  // This worker's line goes in any case: `crawler status` must not count a stopped worker.
  std::vector<redis::command> commands{{"HDEL", workers_key_, queue_.worker()}};
  if (!persist_ && queue_.size() == 1) {
    auto keys = fleet_keys();
    keys.push_back(queue_key_ + ":layout");
    redis::command done{"EVAL", fleet_done_script, std::to_string(keys.size())};
    done.insert(done.end(), keys.begin(), keys.end());
    commands.push_back(std::move(done));
  } else if (!persist_) {
    commands.push_back({"EVAL", fleet_alive_script, "1", workers_key_});
  }
  auto shared = std::make_shared<asio::any_completion_handler<done_signature>>(std::move(handler));
  client_->async_pipeline(
      std::move(commands),
      [this, alive = alive_, shared](std::exception_ptr error, std::vector<redis::reply> replies) {
        if (!*alive) return;
        bool over = !error && replies.size() == 2 && !replies[1].is_error();
        if (over && queue_.size() > 1 && replies[1].integer == 0) {
          return delete_finished_shards([this, shared] { close_dupefilters(std::move(*shared)); });
        }
        if (over && queue_.size() == 1 && replies[1].integer >= 0) {
          logger_->info("The fleet's crawl is over: deleted its queue and dupefilter keys");
        }
        close_dupefilters(std::move(*shared));
      });
}

void fleet_scheduler::delete_finished_shards(std::function<void()> then) {
  std::vector<redis::command> deletions;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    auto keys = shard_keys(i);
    redis::command done{"EVAL", detail::lua::shard_done, std::to_string(keys.size())};
    done.insert(done.end(), keys.begin(), keys.end());
    deletions.push_back(std::move(done));
  }
  client_->async_pipeline(
      std::move(deletions), [this, alive = alive_, then = std::move(then)](
                                std::exception_ptr error, std::vector<redis::reply> replies) {
        if (!*alive) return;
        bool all = !error && std::all_of(replies.begin(), replies.end(), [](const auto& reply) {
          return !reply.is_error() && reply.integer >= 0;
        });
        if (!all) return then();
        logger_->info(
            "The fleet's crawl is over: deleted the queue and dupefilter keys of its {} shards",
            queue_.size());
        // The shard count and the layout version go with them: the next crawl on these keys may
        // choose another count, and be run by another release.
        client_->async_command({"DEL", queue_key_ + ":shards", queue_key_ + ":layout"},
                               [alive = alive_, then](std::exception_ptr, redis::reply) {
                                 if (*alive) then();
                               });
      });
}

void fleet_scheduler::close_dupefilters(asio::any_completion_handler<done_signature> handler) {
  // Redis backends keep their keys at close (the scheduler decides): closing is bookkeeping,
  // and each closes whatever the others said.
  auto shared = std::make_shared<asio::any_completion_handler<done_signature>>(std::move(handler));
  auto waiting = std::make_shared<std::size_t>(dupefilters_.size());
  auto first_error = std::make_shared<std::exception_ptr>();
  for (auto& dupefilter : dupefilters_) {
    dupefilter->async_close([shared, waiting, first_error](std::exception_ptr error) {
      if (error && !*first_error) *first_error = error;
      if (--*waiting == 0) std::move (*shared)(*first_error);
    });
  }
}

}  // namespace crawler
