// The fleet's queue in SCHEDULER_SHARDS shards, each a redis_queue (redis_queue.h) with its own
// keys and its own dupefilter key, so that one crawl's frontier and fingerprints spread over the
// masters of a Redis Cluster, and no key of it outgrows what one key can hold (a Bloom bitmap's
// 512 MB).
//
//   crawler::sharded_queue queue{client, shard_options, markings};  // one of each per shard
//   queue.async_take(8, handler);            // from every shard that has work, together
//   queue.async_settle(lease_id, children, items, scheme, handler);
//
// A request's shard follows from its host (pacing_host, hashed): a host's URLs, their
// fingerprints and, with the host frontier, its pace all live in one shard. So checking a URL in
// the dupefilter and queueing it stays one atomic script, and DOWNLOAD_DELAY still holds for the
// whole fleet. Shard i is keyed as the fleet of a spider named "<spider>:<i>" (shard_spider_names).
// One shard, the default, is today's single set of keys, and this class then only forwards.
//
// With more than one, what crosses shards is done in steps, each atomic and safe to repeat:
// - A settle first pushes the page's new requests bound for other shards, through those shards'
//   dupefilters; then it settles the lease in its own shard with the rest, the items and the
//   lease's removal. A worker killed between the two leaves the lease, which expires: the page is
//   crawled again, the requests it pushed are found seen, and nothing is lost (a dont_filter
//   request may be queued twice).
// - Start URLs are read, pushed into their shards, then removed from REDIS_START_URLS_KEY. A kill
//   between the two leaves them to be read again, and the dupefilter drops the copies.
// Takes ask the shards that held requests at their last take (and one more, in turn, which may
// have gained some) for a share each of what the worker has room for. A lease id names its shard:
// "<i>~<the shard's lease id>".
// Completions run on the client's executor. Not thread-safe: one owner, one loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "dedup/dupefilter.h"
#include "redis/client.h"
#include "scheduler/fleet/redis_queue.h"

namespace crawler {

/// SCHEDULER_SHARDS's largest value.
inline constexpr std::int64_t most_shards = 1024;

/// The spider names shard 0 ... SCHEDULER_SHARDS - 1 are keyed by: `spider` itself for one shard
/// (today's keys), else "<spider>:<i>"; on a Redis Cluster each in braces, its own hash tag
/// (key_spider_name). Throws settings_error for an out-of-range SCHEDULER_SHARDS.
std::vector<std::string> shard_spider_names(const settings& settings, std::string_view spider);

class sharded_queue {
 public:
  using take_handler = redis_queue::take_handler;
  using settle_handler = redis_queue::settle_handler;
  using count_handler = redis_queue::count_handler;
  using renew_handler = redis_queue::renew_handler;

  /// One redis_queue per element of `shards`; `markings[i]` is shard i's dupefilter step (it
  /// must outlive this queue). Every shard's start_urls_key is the fleet's one start key.
  sharded_queue(std::shared_ptr<redis::client> client, std::vector<redis_queue_options> shards,
                std::vector<const dedup::redis_marking*> markings);

  std::size_t size() const { return shards_.size(); }
  const redis_queue& shard(std::size_t i) const { return shards_[i]; }
  /// The shard that holds `request`'s host.
  std::size_t shard_of(const request& request) const;

  /// As redis_queue's, for every shard (each has its own epoch).
  void async_join_epoch(std::function<void(std::exception_ptr)> done);
  void async_push(const std::vector<request>& requests, dedup::fingerprint_scheme scheme,
                  settle_handler done);
  void async_take(std::size_t count, take_handler done);
  void async_renew(const std::vector<std::string>& lease_ids, renew_handler done);
  void async_settle(const std::string& lease_id, const std::vector<request>& children,
                    const std::vector<crawler::item>& items, dedup::fingerprint_scheme scheme,
                    settle_handler done, const host_pace& pace = {},
                    const page_counts& counts = {});
  void async_feed(std::size_t count, dedup::fingerprint_scheme scheme, settle_handler done);
  void async_release(const std::vector<std::string>& lease_ids, count_handler done);
  void forget_known();
  void set_check(const std::function<std::string(const request&)>& check);

  bool signs_entries() const { return shards_[0].signs_entries(); }
  const std::string& worker() const { return shards_[0].worker(); }
  const std::string& order() const { return shards_[0].order(); }
  const std::string& start_urls_type() const { return shards_[0].start_urls_type(); }
  const std::string& start_urls_key() const { return shards_[0].start_urls_key(); }

  /// Summed over the shards (redis_queue.h says what each counts).
  std::size_t reclaimed() const;
  std::size_t bad() const;
  std::size_t dead() const;
  std::size_t queued() const;
  std::vector<std::string> set_aside_reasons_taken();
  /// The soonest a host of any shard is due.
  std::optional<std::chrono::milliseconds> next_host_due() const;

 private:
  // The feed's second step, once `read_before` says which signed start URLs were read before.
  void feed_start_urls(std::vector<std::string> raw, const std::string& read_before,
                       dedup::fingerprint_scheme scheme, settle_handler done);
  // The shard a lease id names, and the shard's own id; nullopt for an id no take gave.
  std::optional<std::pair<std::size_t, std::string>> split_lease(const std::string& id) const;
  std::string lease_of(std::size_t shard, const std::string& id) const;
  // How many of `count` each shard is asked for.
  std::vector<std::size_t> shares(std::size_t count);
  // Pushes `requests` (positions `positions` of a call's list) into their shards, together.
  void push_by_shard(const std::vector<request>& requests,
                     const std::vector<std::vector<std::size_t>>& positions,
                     dedup::fingerprint_scheme scheme, settle_handler done);

  std::shared_ptr<redis::client> client_;
  std::vector<redis_queue> shards_;
  std::vector<const dedup::redis_marking*> markings_;
  std::size_t turn_ = 0;       // the shard a take asks first
  std::size_t start_bad_ = 0;  // start URLs set aside by this worker's feeds (more than one shard)
};

}  // namespace crawler
