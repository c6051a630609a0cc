// The fleet's shared request queue in Redis, with leases instead of deletions.
//
//   crawler::redis_queue queue{client, {.key = "books:requests", .worker = "host:4242"}};
//   queue.async_push(start_requests, dupefilter.marking(), scheme, handler);    // deduplicated
//   queue.async_take(8, [](std::exception_ptr, std::vector<crawler::leased_request> taken) {...});
//   queue.async_renew(lease_ids, handler);                 // the heartbeat, every lease_ms / 3
//   queue.async_settle(lease_id, children, items, ...);    // a crawled page's outcome
//   queue.async_release(lease_ids, handler);               // not crawled: back to the queue
//
// Taking a request moves it, in one script, to <key>:leased with the worker's id and a deadline
// on Redis's clock; it leaves Redis only when its outcome is stored. Settling is one script too:
// the page's new requests are marked in the dupefilter and queued, its items appended, and its
// lease removed, together. So a worker killed at any instant loses nothing: what it held goes
// back to the queue when its leases expire (the next take of any worker reclaims them), and no
// URL is ever marked seen without being queued, leased or crawled. A child whose fingerprint an
// earlier settle of this worker put in the dupefilter is a duplicate without asking Redis again
// (detail/known_fingerprints.h). The pages settled in one turn of the loop go to Redis in one
// call of that script, each page still its own step.
//
// Order (SCHEDULER_QUEUE_CLASS): "priority" (a sorted set scored -priority; equal priorities
// first in, first out; two equal dont_filter requests stay two entries), "fifo" or "lifo"
// (lists), laid out as scrapy-redis's PriorityQueue, FifoQueue and LifoQueue lay them out; or
// "host", this crawler's own host frontier: a priority queue per host (host_pace.h), and takes
// that lease only from hosts that are due, so DOWNLOAD_DELAY and CONCURRENT_REQUESTS_PER_DOMAIN
// hold for the whole fleet, on Redis's clock (lua/queue_prelude.lua has the layout).
// Entries (SCHEDULER_SERIALIZER) are our JSON (request::to_json, numbered), or scrapy-redis's
// pickled request dicts (scrapy_request.h), so our workers and scrapy-redis's can share one
// queue: they pop, we lease. Anyone who reaches Redis can write them, so what is taken is
// request_origin::shared and must pass shared_request_problem (http or https, no meta "proxy"),
// unless signed with the fleet's key (entry_signature.h, JSON only; with a key, an unsigned entry
// is refused, and a signed one runs once: the worker numbers it, and a copy of a number that ran
// or is running is set aside): an entry that does not decode or does not pass goes to
// <key>:bad, byte for byte with the reason (redis/set_aside.h), and is never run. So does an
// entry in the other form among the worker's own (one stray record never stops a fleet); when
// the other form is most of what a worker takes (3 entries or more), the settings disagree with
// the queue's writers: what the take leased is put back untouched, and the take fails with
// queue_form_mismatch, which says what to set.
// Completions run on the client's executor. Not thread-safe: one owner, one loop.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/settings.h"
#include "dedup/dupefilter.h"
#include "redis/client.h"
#include "request/item.h"
#include "request/request.h"
#include "scheduler/fleet/entry_signature.h"
#include "scheduler/shared_request.h"
#include "scheduler/host_pace.h"
#include "scheduler/request_secrets.h"

namespace crawler {

namespace detail {
class known_fingerprints;
}

/// SCHEDULER_SERIALIZER: the form of the queue's entries.
enum class queue_entry_form {
  json,    // "json": "<16-digit id>|" and request::to_json, signed or not
  pickle,  // "scrapy_redis.picklecompat": scrapy-redis's, pickle.dumps(request_to_dict(request))
};

/// SCHEDULER_QUEUE_CLASS as a queue order: "priority", "fifo", "lifo" or "host", or scrapy-redis's
/// class paths for the first three (scrapy_redis.queue.PriorityQueue, FifoQueue, LifoQueue and
/// their old names SpiderPriorityQueue, SpiderQueue, SpiderStack). Throws settings_error naming
/// the value.
std::string redis_queue_order_from(const settings& settings);

/// SCHEDULER_SERIALIZER as an entry form; unset: scrapy-redis's when SCHEDULER is its class path
/// (a copied settings.py shares the Python workers' queue), else ours. Throws settings_error for
/// a serializer module this crawler cannot be (a custom one), never substituting another.
queue_entry_form redis_queue_form_from(const settings& settings);

/// The Redis type of REDIS_START_URLS_KEY: "list", "set" or "zset". Throws settings_error when
/// both REDIS_START_URLS_AS_SET and REDIS_START_URLS_AS_ZSET are set.
std::string start_urls_type_from(const settings& settings);

struct redis_queue_options {
  std::string key;                 // SCHEDULER_QUEUE_KEY, e.g. "books:requests"
  std::string order = "priority";  // SCHEDULER_QUEUE_CLASS: priority, fifo, lifo or host
  queue_entry_form form = queue_entry_form::json;  // SCHEDULER_SERIALIZER
  std::string worker;              // this worker's id, unique in the fleet
  std::chrono::milliseconds lease{600000};
  std::string items_key;                 // where settle appends items, e.g. "books:items"
  /// Where settle adds a page's counts (page_counts), e.g. "books:stats"; "": <key>:stats.
  std::string stats_key;
  std::string start_urls_key;            // REDIS_START_URLS_KEY, e.g. "books:start_urls"
  /// What holds them: "list", "set" (REDIS_START_URLS_AS_SET) or "zset" (REDIS_START_URLS_AS_ZSET,
  /// highest score first), the Redis type's name (start_urls_type_from).
  std::string start_urls_type = "list";
  std::size_t max_entry_size = 1048576;  // SCHEDULER_MAX_ENTRY_SIZE
  /// SCHEDULER_MAX_DELIVERIES: an entry taken this many times and never settled goes to
  /// <key>:dead instead of to a worker the next time; 0: no limit.
  std::size_t max_deliveries = 10;
  /// SCHEDULER_SIGNING_KEY: entries written are signed, and an entry taken without a valid
  /// signature goes to <key>:bad. None: nothing is signed, and every entry is a shared request.
  std::optional<entry_signer> signer;
  /// What of a request is never written to Redis (SENSITIVE_HEADERS, DEFAULT_REQUEST_HEADERS).
  request_secrets secrets;
  /// SCHEDULER_ENTRY_FIELDS: what an unsigned entry or start URL may set besides its URL.
  entry_fields allowed_fields;
  /// The host frontier's pace (order "host"): leased requests of one host at once, fleet-wide
  /// (CONCURRENT_REQUESTS_PER_DOMAIN; 0: no limit), the time between two takes of one host
  /// (DOWNLOAD_DELAY, unless a worker reported another for it), and whether that time is drawn
  /// from 0.5x to 1.5x of it (RANDOMIZE_DOWNLOAD_DELAY).
  std::size_t host_limit = 8;
  std::chrono::milliseconds host_delay{0};
  bool randomize_delay = true;
  /// CONCURRENT_REQUESTS_PER_IP above 0: host_limit is that, and it and the delay hold per server
  /// address, for the hosts whose address a worker reported with a settle (host_pace::address);
  /// a host's own name stands for it until then, as in Scrapy's downloader before its DNS cache
  /// has the host.
  bool limit_by_address = false;
};

/// What a crawled page adds to the fleet's stats, added by its settle in the same step (to
/// response_received_count and item_scraped_count of redis_queue_options::stats_key): a page is
/// counted when, and only when, its outcome is stored.
struct page_counts {
  std::size_t responses = 0;
  std::size_t items = 0;
};

/// A request taken from the queue: the lease that holds it, and the request.
struct leased_request {
  std::string lease_id;
  crawler::request request;
};

/// What a settle (or push) did.
struct settle_result {
  std::size_t queued = 0;
  std::size_t duplicates = 0;
  /// False when the worker no longer held the lease (it expired and went back to the queue, or
  /// an earlier try of this settle got through): then nothing was stored, since whoever holds
  /// the lease stores the outcome. Counted, not an error.
  bool settled = false;
  /// The children the dupefilter had seen, by their position in the call's list.
  std::vector<std::size_t> duplicate_positions;
  /// Children never queued, by position, with why: a URL that cannot be fingerprinted, a request
  /// the queue's form cannot hold (a callback name scrapy-redis's workers could not look up).
  std::vector<std::pair<std::size_t, std::string>> refused_children;
};

/// The lists of set-aside records (redis/set_aside.h) that `crawler requeue` empties.
enum class set_aside_list {
  dead,  // <key>:dead, entries taken SCHEDULER_MAX_DELIVERIES times and never settled
  bad,   // <key>:bad, what a worker could not use
  start_bad,  // <start URLs key>:bad, start URLs a worker could not use
};

/// What `crawler requeue` did: values put back where they were, and the records that are not
/// entries of the queue or its start URLs (quoted), left where they are.
struct requeue_result {
  std::size_t requeued = 0;
  std::vector<std::string> unreadable;
};

/// The field of a queue entry in <key>:deliveries: the digits before its '|', or the SHA-1 of an
/// entry written without them.
std::string delivery_id(std::string_view entry);

/// The fleet's state in Redis is not the one this worker joined: its epoch (redis_queue.h) is
/// gone or changed. Retrying cannot help, unlike an outage.
class fleet_state_lost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The queue holds entries in the other form than SCHEDULER_SERIALIZER's (a scrapy-redis pickle
/// in a JSON queue, or the reverse): they were put back as they were, and the message says which
/// settings make the two sides agree. Retrying cannot help.
class queue_form_mismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class redis_queue {
 public:
  using take_handler = std::function<void(std::exception_ptr, std::vector<leased_request>)>;
  using settle_handler = std::function<void(std::exception_ptr, settle_result)>;
  using count_handler = std::function<void(std::exception_ptr, std::size_t)>;
  using renew_handler = std::function<void(std::exception_ptr, std::vector<std::string> lost)>;
  using requeue_handler = std::function<void(std::exception_ptr, requeue_result)>;

  /// Throws settings_error for an unknown order.
  redis_queue(std::shared_ptr<redis::client> client, redis_queue_options options);
  ~redis_queue();
  redis_queue(redis_queue&&) noexcept;
  redis_queue& operator=(redis_queue&&) noexcept;

  /// Queues `requests` that `marking` (the shared dupefilter; null: no filtering) has not seen,
  /// with no parent lease: start URLs, `crawler push`.
  void async_push(const std::vector<request>& requests, const dedup::redis_marking* marking,
                  dedup::fingerprint_scheme scheme, settle_handler done);
  /// Takes up to `count` requests, after reclaiming expired leases.
  void async_take(std::size_t count, take_handler done);
  /// Extends the leases this worker still holds; completes with those of `lease_ids` it no
  /// longer holds (they expired while it stalled and went back to the queue, or were settled).
  void async_renew(const std::vector<std::string>& lease_ids, renew_handler done);
  /// Stores a crawled page's outcome and settles its lease, in one step (see the file comment);
  /// the host frontier also takes what the page's download said of its host's pace.
  /// `children` are read before this returns; they need not outlive the call. `counts` are
  /// added to the stats only when the outcome is stored.
  void async_settle(const std::string& lease_id, const std::vector<request>& children,
                    const std::vector<crawler::item>& items, const dedup::redis_marking* marking,
                    dedup::fingerprint_scheme scheme, settle_handler done,
                    const host_pace& pace = {}, const page_counts& counts = {});
  /// Moves up to `count` start URLs from the start key into the queue, through `marking`, each
  /// in the same atomic step that removes it; bad entries go to <start key>:bad. Completes with
  /// what was queued.
  void async_feed(std::size_t count, const dedup::redis_marking* marking,
                  dedup::fingerprint_scheme scheme, settle_handler done);
  /// Reads up to `count` start URLs without removing them, as async_feed does. One larger than
  /// max_entry_size is measured in Redis and moved to <start key>:bad there, never read: a
  /// worker's memory is bounded before the read. Completes with the others.
  using start_urls_handler = std::function<void(std::exception_ptr, std::vector<std::string>)>;
  void async_read_start_urls(std::size_t count, start_urls_handler done);
  /// The request a start URL's entry stands for; throws std::invalid_argument naming what is
  /// wrong (over max_entry_size, not a URL or JSON request, a bad signature).
  request read_start_url(std::string_view raw) const;
  /// Puts leased requests back in the queue, not crawled; completes with how many.
  void async_release(const std::vector<std::string>& lease_ids, count_handler done);
  /// Puts up to `count` records of `from`, after its first `skip` (those an earlier call left),
  /// back, byte for byte, where they were: entries in the
  /// queue (with their delivery counts started again), start URLs in the start key. For dead
  /// letters, after the page that killed its workers was dealt with; for bad ones, after what
  /// made them unusable (a missing callback, the serializer setting) was.
  void async_requeue(set_aside_list from, std::size_t skip, std::size_t count,
                     requeue_handler done);

  /// Joins the fleet's epoch, <key>:epoch: a random id the first worker writes beside the queue.
  /// From then on every script first checks that Redis still holds it, and fails with
  /// fleet_state_lost when it does not (see lua/queue_prelude.lua). Completes with the error of
  /// the call, if any.
  void async_join_epoch(std::function<void(std::exception_ptr)> done);
  /// The error for an epoch that Redis no longer holds; `found` says what is there instead
  /// ("is gone", "is now 1f2e...").
  fleet_state_lost epoch_lost(std::string_view found) const;
  /// Forgets what this worker knew of the fleet's dupefilter (a state that was lost).
  void forget_known();
  /// The key of the fleet's epoch, and the epoch joined ("" before async_join_epoch).
  const std::string& epoch_key() const { return epoch_key_; }
  const std::string& epoch() const { return epoch_; }

  /// A check every taken request must pass (e.g. that the spider has its callback): the reason
  /// it fails, or "". A request that fails goes to <key>:bad like one that does not decode.
  void set_check(std::function<std::string(const request&)> check) { check_ = std::move(check); }

  /// Whether entries are signed (SCHEDULER_SIGNING_KEY).
  bool signs_entries() const { return options_.signer.has_value(); }
  /// This worker's id in leases.
  const std::string& worker() const { return options_.worker; }
  /// SCHEDULER_QUEUE_CLASS: priority, fifo or lifo.
  const std::string& order() const { return options_.order; }
  /// SCHEDULER_QUEUE_KEY, as the options name it: the prefix of every key of the queue.
  const std::string& key() const { return options_.key; }
  /// REDIS_START_URLS_KEY, as the options name it.
  const std::string& start_urls_key() const { return options_.start_urls_key; }
  /// The Redis type of the start URLs' key: list, set or zset.
  const std::string& start_urls_type() const { return options_.start_urls_type; }
  /// The key that exists exactly while requests are queued: the queue's, or the host frontier's
  /// <key>:count.
  const std::string& queued_key() const {
    return host_keys_.empty() ? options_.key : host_keys_.back();
  }
  /// The host frontier's keys besides the per-host queues (which Redis deletes once empty), its
  /// count last; none for the other orders.
  const std::vector<std::string>& host_frontier_keys() const { return host_keys_; }
  /// Where settle appends items (the option, or <key>:items when it is empty).
  const std::string& items_key() const { return items_key_; }

  /// How many leases the last takes found expired and put back (a worker died or stalled).
  std::size_t reclaimed() const { return reclaimed_; }
  /// Records that went to <key>:bad (or the start key's :bad): entries that did not decode or may
  /// not run, entries over max_entry_size, lease records and counters that were not ones.
  std::size_t bad() const { return bad_; }
  /// The reasons of the entries this worker's takes set aside as not decoding or not allowed to
  /// run, the first few (cut short), for the log; set_aside_reasons_taken() empties it.
  std::vector<std::string> set_aside_reasons_taken() { return std::exchange(reasons_, {}); }
  /// Entries the last takes moved to <key>:dead (SCHEDULER_MAX_DELIVERIES).
  std::size_t dead() const { return dead_; }
  /// Entries in the queue as the last take found them, plus what this worker queued since
  /// (other workers' takes and settles show at the next take).
  std::size_t queued() const { return queued_; }
  /// The host frontier: how long after the last take the next host is due (nullopt: no host
  /// waits for its time, though some may wait for a lease to end).
  std::optional<std::chrono::milliseconds> next_host_due() const { return next_host_due_; }

 private:
  // A request's entry as written to Redis: its JSON; signed when there is a key, and then
  // numbered too ("<number>|<signed JSON>"), with `number` (16 digits) taken by claim_numbers.
  std::string entry_body(const request& request, std::uint64_t number = 0) const;
  // A signed fleet's entry numbers (entry_body): the first of `count` numbers now this worker's,
  // from the block it took from <queue>:seq; nullopt when the block has fewer left, and then
  // take_numbers(count, ...) takes a new block first.
  std::optional<std::uint64_t> claim_numbers(std::size_t count);
  void take_numbers(std::size_t count, std::function<void(std::exception_ptr)> done);
  // Gives back the numbers [from, to) of the last claim, unless another claim came after it.
  void unclaim_numbers(std::uint64_t from, std::uint64_t to);
  // The request an entry stands for; throws std::invalid_argument naming the entry when it does
  // not decode or may not run.
  request read_entry(std::string_view entry, const std::string& id) const;
  // Moves leased entries this worker will not run to <key>:bad: lease id, then its record, for
  // each (the host frontier also gives their hosts their room back).
  void set_aside_taken(std::vector<std::string> leases_and_records,
                       std::function<void(std::exception_ptr)> done);
  // The take script's arguments.
  std::vector<std::string> take_arguments(std::size_t count) const;
  // Whether `entry` is in the other form than options_.form.
  bool in_other_form(std::string_view entry) const;
  // What queue_form_mismatch says about `entry`.
  std::string mismatch_message(std::string_view entry, bool put_back) const;
  void queue_start_urls(std::vector<std::string> raw, const dedup::redis_marking* marking,
                        dedup::fingerprint_scheme scheme, settle_handler done);
  void set_aside(std::vector<std::string>& records, const std::string& id, std::string_view score,
                 std::string_view host, const std::string& reason, std::string_view entry);
  // Runs one of lua/queue_*.lua with the epoch and the type each key must have; `marking`
  // is the dupefilter whose key the script writes, if any.
  void run_script(const char* body, std::vector<std::string> keys, std::vector<std::string> args,
                  std::function<void(std::exception_ptr, redis::reply)> done,
                  const dedup::redis_marking* marking = nullptr);
  // Adds a page's part of the settle script's arguments to the settles of this turn of the
  // loop, sent together when the loop comes to them (or when a page with another dupefilter
  // comes first); `answer` gets the page's own four answers.
  void add_to_settles(std::vector<std::string> page, const dedup::redis_marking* marking,
                      std::function<void(std::exception_ptr, redis::reply)> answer);
  void send_settles();
  // What TYPE answers for `key` when it holds what the fleet keeps there; "-" for a key the
  // queue does not know.
  std::string expected_type(const std::string& key, const dedup::redis_marking* marking) const;

  std::shared_ptr<redis::client> client_;
  redis_queue_options options_;  // its signer bound to the queue's key
  std::optional<entry_signer> start_signer_;  // the signer bound to the start URLs' key
  std::string leased_key_, deadlines_key_, seq_key_, bad_key_, deliveries_key_, dead_key_;
  std::string settled_key_;  // a signed fleet's: which entries were settled, by number
  std::string epoch_key_, items_key_, stats_key_;
  std::string epoch_;  // "" until async_join_epoch: the scripts check nothing
  std::size_t reclaimed_ = 0, bad_ = 0, dead_ = 0, queued_ = 0;
  // The block of entry numbers this worker took: [next, last]. Settles may come from another
  // thread than the client's, where a new block arrives.
  struct numbers {
    std::mutex mutex;
    std::uint64_t next = 1, last = 0;
  };
  std::unique_ptr<numbers> numbers_ = std::make_unique<numbers>();
  std::optional<std::chrono::milliseconds> next_host_due_;
  // The host frontier's keys (hosts, busy, inflight, delays, count), after each script's own;
  // empty for the other orders.
  std::vector<std::string> host_keys_;
  std::string host_prefix_;
  std::vector<std::string> reasons_;  // see set_aside_reasons_taken
  std::size_t reasons_logged_ = 0;    // so a poisoned queue logs a few, not thousands
  // Entries taken in this worker's form and in the other: the settings disagree with the queue
  // when the other form is most of what was taken, and at least this many.
  std::size_t ours_seen_ = 0, other_form_seen_ = 0;
  static constexpr std::size_t settings_disagree_after = 3;
  // script -> the dupefilter's mark step -> their whole text, sent after a NOSCRIPT, and its
  // SHA-1, for EVALSHA. Two levels, so that finding a script copies no key.
  struct script_text {
    std::string sha;
    std::shared_ptr<const std::string> text;
  };
  std::map<const char*, std::map<std::string, script_text>> scripts_;
  // Children found in the dupefilter (key known_key_) need not be sent again.
  std::unique_ptr<detail::known_fingerprints> known_;
  std::string known_key_;
  std::function<std::string(const request&)> check_;
  struct settle_batch;
  std::shared_ptr<settle_batch> settles_;  // this turn's settles, not sent yet
};

}  // namespace crawler
