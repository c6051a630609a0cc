// A fleet as its Redis holds it, read by those who watch or tend it rather than crawl: `crawler
// status`, `crawler stats`, `crawler requeue` and `crawler serve`. The keys the workers write
// (their heartbeat lines, the queue's shards, leases, dead letters and set-aside records, the
// summed stats) are named here and in the workers' own code only.
//
//   auto fleet = crawler::read_fleet(client, settings, "books");
//   fleet.queued;                    // requests waiting, over all shards
//   fleet.workers[0].live;           // by its heartbeat's age, on Redis's clock
//   crawler::requeue_fleet(client_ptr, settings, "books", set_aside_list::dead);
//
// Everything read is input: a line that is not a worker's record, a count another program
// overwrote or a marker that is not a number is reported as what it is, never trusted.
// The calls block on the client (whose loop runs on another thread) and throw
// std::runtime_error naming the Redis and what could not be read.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/settings.h"
#include "redis/client.h"
#include "scheduler/fleet/redis_queue.h"

namespace crawler {

/// A worker's line in <spider>:workers.
struct fleet_worker {
  std::string id;
  nlohmann::json record;  // as the worker wrote it: pages, items, in_flight, started, heartbeat...
  double heartbeat_age = 0;  // seconds, on Redis's clock
  bool live = false;         // its heartbeat is younger than three of its intervals
  bool readable = true;      // false: not a worker's record (the next heartbeat sets it aside)
  long long leases = 0;      // leases it holds over the fleet's shards
  double leases_back_in = 0;  // seconds until the last of them expires (<= 0: expired)

  /// A number field of its record; 0 when missing or of another type.
  double field(const char* name) const;
};

/// One reading of a fleet.
struct fleet_state {
  std::string spider;
  std::string redis_address;
  double now = 0;  // Redis's clock, in seconds
  std::vector<fleet_worker> workers;
  long long queued = 0, leased = 0, start_urls_waiting = 0;
  long long dead_letters = 0, set_aside = 0, start_urls_set_aside = 0;
  /// <spider>:stats's pages and items as stored ("" when missing; text when not a count).
  std::string pages, items;
  nlohmann::json stats = nlohmann::json::object();  // <spider>:stats, numbers as numbers
  std::vector<std::string> first_set_aside;  // up to three records of the queue's :bad, raw
  std::string queue;       // the queue key, or "first ... last" of its shards
  std::string start_urls;  // REDIS_START_URLS_KEY
  /// Where the dead letters and the set-aside records are, for a person: "<queue>:dead",
  /// "<queue>:bad" and "<start URLs>:bad".
  std::string dead_letters_at, set_aside_at, start_urls_set_aside_at;
  /// Why the summed figures may be short of what the workers did (dead workers, a lost epoch).
  std::vector<std::string> partial;
};

/// The queue keys of the fleet's shards, as the fleet wrote their number beside its keys
/// (SCHEDULER_SHARDS; none written: one queue). A number that is not one throws, naming the key.
std::vector<std::string> fleet_queue_keys(redis::client& client, const settings& settings,
                                          const std::string& spider);

/// Everything `crawler status` shows.
fleet_state read_fleet(redis::client& client, const settings& settings,
                       const std::string& spider);

/// <spider>:stats, and why it may be partial (empty when the fleet counted nothing yet).
struct fleet_stats {
  nlohmann::json stats = nlohmann::json::object();
  std::vector<std::string> partial;
};
fleet_stats read_fleet_stats(redis::client& client, const settings& settings,
                             const std::string& spider);

/// The fleet's dead letters and set-aside records counted by reason, over the first `most`
/// records of each of its lists (every shard's): {"dead letters" | "set aside" | "start URLs set
/// aside" -> {reason -> count}}. Digits in a reason read as "N", so that "entry 12 ..." and
/// "entry 13 ..." are one reason; a record no worker wrote counts as such.
std::map<std::string, std::map<std::string, long long>> read_fleet_reasons(
    redis::client& client, const settings& settings, const std::string& spider,
    std::size_t most = 1000);

/// What requeue_fleet did.
struct fleet_requeue_result {
  std::size_t requeued = 0;
  std::vector<std::string> unreadable;  // records left: not entries of the queue or start URLs
  std::string where;                    // the lists it read, for a person
};

/// The dead letters (`from` dead) or the set-aside entries and start URLs (`from` bad) of every
/// shard back where they were, byte for byte.
fleet_requeue_result requeue_fleet(const std::shared_ptr<redis::client>& client,
                                   const settings& settings, const std::string& spider,
                                   set_aside_list from);

}  // namespace crawler
