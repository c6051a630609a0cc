#include "scheduler/fleet/sharded_queue.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

#include "redis/reply_error.h"
#include "redis/set_aside.h"
#include "scheduler/fleet/detail/fleet_lua.h"
#include "scheduler/fleet/start_request.h"
#include "scheduler/host_pace.h"

namespace crawler {
namespace {

// fleet/lua/shards_remove_fed.lua (its keys and arguments at its top), after what it calls.
const std::string remove_fed_script = std::string(redis::lua_set_aside_record) +
                                      detail::lua::remove_start_url + detail::lua::settled +
                                      detail::lua::shards_remove_fed;

// fleet/lua/shards_read_before.lua (its keys and arguments at its top), after what it calls.
const std::string read_before_script =
    std::string(detail::lua::settled) + detail::lua::shards_read_before;

// FNV-1a: stable across workers, builds and machines, as a shard's choice must be.
std::uint64_t host_hash(std::string_view host) {
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : host) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// Adds a shard's answer for the requests at `positions` of a call's list to `into`.
void add_part(settle_result& into, const settle_result& part,
              const std::vector<std::size_t>& positions) {
  into.queued += part.queued;
  into.duplicates += part.duplicates;
  for (auto at : part.duplicate_positions) into.duplicate_positions.push_back(positions[at]);
  for (const auto& [at, why] : part.refused_children) {
    into.refused_children.emplace_back(positions[at], why);
  }
}

// The answers of calls made to several shards at once: `done` runs when the last one is in,
// with the first error if any.
template <typename Result, typename Handler>
struct gathering {
  std::size_t waiting = 0;
  std::exception_ptr error;
  Result result{};
  Handler done;

  // True for the last answer.
  bool answered(std::exception_ptr part_error) {
    if (part_error && !error) error = part_error;
    return --waiting == 0;
  }
};

}  // namespace

std::vector<std::string> shard_spider_names(const settings& settings, std::string_view spider) {
  auto count = settings.get_int("SCHEDULER_SHARDS");
  if (count < 1 || count > most_shards) {
    throw settings_error("SCHEDULER_SHARDS: must be from 1 to 1024, got " + std::to_string(count));
  }
  if (count == 1) return {key_spider_name(settings, spider)};
  std::vector<std::string> names;
  for (std::int64_t i = 0; i < count; ++i) {
    names.push_back(key_spider_name(settings, std::string(spider) + ":" + std::to_string(i)));
  }
  return names;
}

sharded_queue::sharded_queue(std::shared_ptr<redis::client> client,
                             std::vector<redis_queue_options> shards,
                             std::vector<const dedup::redis_marking*> markings)
    : client_(client), markings_(std::move(markings)) {
  if (shards.empty() || shards.size() != markings_.size()) {
    throw std::invalid_argument("sharded_queue: one dupefilter step per shard, at least one");
  }
  for (auto& options : shards) shards_.emplace_back(client, std::move(options));
}

std::size_t sharded_queue::shard_of(const request& request) const {
  if (shards_.size() == 1) return 0;
  return std::size_t(host_hash(pacing_host(request)) % shards_.size());
}

std::string sharded_queue::lease_of(std::size_t shard, const std::string& id) const {
  return std::to_string(shard) + "~" + id;
}

std::optional<std::pair<std::size_t, std::string>> sharded_queue::split_lease(
    const std::string& id) const {
  auto tilde = id.find('~');
  if (tilde == std::string::npos) return std::nullopt;
  std::size_t shard = 0;
  auto [end, problem] = std::from_chars(id.data(), id.data() + tilde, shard);
  if (problem != std::errc() || end != id.data() + tilde || shard >= shards_.size()) {
    return std::nullopt;
  }
  return std::pair{shard, id.substr(tilde + 1)};
}

void sharded_queue::async_join_epoch(std::function<void(std::exception_ptr)> done) {
  auto joining = std::make_shared<gathering<int, decltype(done)>>();
  joining->waiting = shards_.size();
  joining->done = std::move(done);
  for (auto& shard : shards_) {
    shard.async_join_epoch([joining](std::exception_ptr error) {
      if (joining->answered(error)) joining->done(joining->error);
    });
  }
}

std::vector<std::size_t> sharded_queue::shares(std::size_t count) {
  // The shards known to hold requests, and the one whose turn it is (it may have gained some
  // from other workers); all of them while none is known to.
  auto first = turn_++ % shards_.size();
  std::vector<std::size_t> asked;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    auto shard = (first + i) % shards_.size();
    if (shards_[shard].queued() > 0 || shard == first) asked.push_back(shard);
  }
  if (asked.size() == 1 && shards_[first].queued() == 0) {
    asked.clear();
    for (std::size_t i = 0; i < shards_.size(); ++i) asked.push_back((first + i) % shards_.size());
  }
  std::vector<std::size_t> shares(shards_.size());
  for (std::size_t k = 0; k < count; ++k) ++shares[asked[k % asked.size()]];
  return shares;
}

void sharded_queue::async_take(std::size_t count, take_handler done) {
  if (shards_.size() == 1 || count == 0) return shards_[0].async_take(count, std::move(done));
  auto shares = this->shares(count);
  using taking = gathering<std::vector<leased_request>, take_handler>;
  auto took = std::make_shared<taking>();
  took->done = std::move(done);
  took->waiting = std::size_t(
      std::count_if(shares.begin(), shares.end(), [](std::size_t share) { return share > 0; }));
  // Whether every shard that failed was told by Redis to try again (reply_error.h).
  auto only_not_now = std::make_shared<bool>(true);
  for (std::size_t shard = 0; shard < shards_.size(); ++shard) {
    if (shares[shard] == 0) continue;
    shards_[shard].async_take(
        shares[shard], [this, took, shard, only_not_now](std::exception_ptr error,
                                                         std::vector<leased_request> taken) {
          for (auto& leased : taken) {
            leased.lease_id = lease_of(shard, leased.lease_id);
            took->result.push_back(std::move(leased));
          }
          if (error && !redis::tells_to_try_again(error)) *only_not_now = false;
          if (!took->answered(error)) return;
          if (took->error && !took->result.empty() && *only_not_now) {
            // A shard whose slot is moving between masters answers TRYAGAIN until the move is done
            // (Redis runs no script while one of its keys is on the other master): the others'
            // requests run meanwhile, and it is asked again at the next take. A take of nothing
            // reports the error, as an outage.
            return took->done(nullptr, std::move(took->result));
          }
          if (took->error && !took->result.empty()) {
            // The take failed as a whole: what the other shards leased goes back now rather than
            // when its leases expire.
            std::vector<std::string> leases;
            for (const auto& leased : took->result) leases.push_back(leased.lease_id);
            took->result.clear();
            async_release(leases, [](std::exception_ptr, std::size_t) {});
          }
          took->done(took->error, std::move(took->result));
        });
  }
}

void sharded_queue::async_renew(const std::vector<std::string>& lease_ids, renew_handler done) {
  if (shards_.size() == 1) return shards_[0].async_renew(lease_ids, std::move(done));
  std::vector<std::vector<std::string>> by_shard(shards_.size());
  using renewing = gathering<std::vector<std::string>, renew_handler>;
  auto renewed = std::make_shared<renewing>();
  renewed->done = std::move(done);
  for (const auto& id : lease_ids) {
    if (auto split = split_lease(id)) {
      by_shard[split->first].push_back(std::move(split->second));
    } else {
      renewed->result.push_back(id);  // no take gave it: not this worker's
    }
  }
  // Every shard is asked, even for no lease: the answer must come on the client's executor.
  renewed->waiting = shards_.size();
  for (std::size_t shard = 0; shard < shards_.size(); ++shard) {
    shards_[shard].async_renew(
        by_shard[shard],
        [this, renewed, shard](std::exception_ptr error, std::vector<std::string> gone) {
          for (const auto& id : gone) renewed->result.push_back(lease_of(shard, id));
          if (renewed->answered(error)) renewed->done(renewed->error, std::move(renewed->result));
        });
  }
}

void sharded_queue::async_release(const std::vector<std::string>& lease_ids, count_handler done) {
  if (shards_.size() == 1) return shards_[0].async_release(lease_ids, std::move(done));
  std::vector<std::vector<std::string>> by_shard(shards_.size());
  for (const auto& id : lease_ids) {
    if (auto split = split_lease(id)) by_shard[split->first].push_back(std::move(split->second));
  }
  using releasing = gathering<std::size_t, count_handler>;
  auto released = std::make_shared<releasing>();
  released->done = std::move(done);
  released->waiting = shards_.size();
  for (std::size_t shard = 0; shard < shards_.size(); ++shard) {
    shards_[shard].async_release(by_shard[shard],
                                 [released](std::exception_ptr error, std::size_t count) {
                                   released->result += count;
                                   if (released->answered(error)) {
                                     released->done(released->error, released->result);
                                   }
                                 });
  }
}

void sharded_queue::push_by_shard(const std::vector<request>& requests,
                                  const std::vector<std::vector<std::size_t>>& positions,
                                  dedup::fingerprint_scheme scheme, settle_handler done) {
  using pushing = gathering<settle_result, settle_handler>;
  auto pushed = std::make_shared<pushing>();
  pushed->done = std::move(done);
  for (const auto& part : positions) pushed->waiting += part.empty() ? 0 : 1;
  if (pushed->waiting == 0) {
    // Nothing to push; the answer still comes on the client's executor, as every other does.
    pushed->waiting = 1;
    return client_->async_command({"PING"}, [pushed](std::exception_ptr error, redis::reply) {
      if (pushed->answered(error)) pushed->done(pushed->error, std::move(pushed->result));
    });
  }
  for (std::size_t shard = 0; shard < shards_.size(); ++shard) {
    if (positions[shard].empty()) continue;
    std::vector<request> part;
    part.reserve(positions[shard].size());
    for (auto at : positions[shard]) part.push_back(requests[at]);
    shards_[shard].async_push(
        part, markings_[shard], scheme,
        [pushed, positions = positions[shard]](std::exception_ptr error, settle_result result) {
          if (!error) add_part(pushed->result, result, positions);
          if (pushed->answered(error)) {
            pushed->result.settled = !pushed->error;
            pushed->done(pushed->error, std::move(pushed->result));
          }
        });
  }
}

void sharded_queue::async_push(const std::vector<request>& requests,
                               dedup::fingerprint_scheme scheme, settle_handler done) {
  if (shards_.size() == 1) {
    return shards_[0].async_push(requests, markings_[0], scheme, std::move(done));
  }
  std::vector<std::vector<std::size_t>> positions(shards_.size());
  for (std::size_t at = 0; at < requests.size(); ++at) {
    positions[shard_of(requests[at])].push_back(at);
  }
  push_by_shard(requests, positions, scheme, std::move(done));
}

void sharded_queue::async_settle(const std::string& lease_id, const std::vector<request>& children,
                                 const std::vector<crawler::item>& items,
                                 dedup::fingerprint_scheme scheme, settle_handler done,
                                 const host_pace& pace, const page_counts& counts) {
  if (shards_.size() == 1) {
    return shards_[0].async_settle(lease_id, children, items, markings_[0], scheme, std::move(done),
                                   pace, counts);
  }
  if (lease_id.empty()) return async_push(children, scheme, std::move(done));
  auto split = split_lease(lease_id);
  if (!split) {
    // Not a lease any take gave: as a lease that is no longer held, nothing is stored.
    return push_by_shard({}, std::vector<std::vector<std::size_t>>(shards_.size()), scheme,
                         [done = std::move(done)](std::exception_ptr error, settle_result) {
                           done(error, settle_result{});
                         });
  }
  auto home = split->first;
  auto lease = std::move(split->second);
  std::vector<std::vector<std::size_t>> positions(shards_.size());
  for (std::size_t at = 0; at < children.size(); ++at) {
    positions[shard_of(children[at])].push_back(at);
  }
  if (positions[home].size() == children.size()) {
    return shards_[home].async_settle(lease, children, items, markings_[home], scheme,
                                      std::move(done), pace, counts);
  }
  // The other shards' requests first: once the lease is settled, nothing would bring them back.
  auto own = std::move(positions[home]);
  positions[home].clear();
  auto own_children = std::make_shared<std::vector<request>>();
  for (auto at : own) own_children->push_back(children[at]);
  auto own_items = std::make_shared<std::vector<crawler::item>>(items);
  push_by_shard(children, positions, scheme,
                [this, home, lease, own = std::move(own), own_children, own_items, scheme,
                 done = std::move(done), pace,
                 counts](std::exception_ptr error, settle_result pushed) mutable {
                  if (error) return done(error, {});
                  shards_[home].async_settle(
                      lease, *own_children, *own_items, markings_[home], scheme,
                      [own = std::move(own), pushed = std::move(pushed), done = std::move(done)](
                          std::exception_ptr error, settle_result settled) mutable {
                        if (error) return done(error, {});
                        pushed.settled = settled.settled;
                        add_part(pushed, settled, own);
                        done(nullptr, std::move(pushed));
                      },
                      pace, counts);
                });
}

void sharded_queue::async_feed(std::size_t count, dedup::fingerprint_scheme scheme,
                               settle_handler done) {
  if (shards_.size() == 1)
    return shards_[0].async_feed(count, markings_[0], scheme, std::move(done));
  shards_[0].async_read_start_urls(
      count, [this, scheme, done = std::move(done)](std::exception_ptr error,
                                                    std::vector<std::string> raw) mutable {
        if (error) return done(error, {});
        if (raw.empty()) return done(nullptr, {});
        if (!signs_entries()) return feed_start_urls(std::move(raw), {}, scheme, std::move(done));
        // A signed start URL is read once: the numbers read before are asked first.
        redis::command ask{"EVAL", read_before_script, "1", start_urls_key() + ":settled"};
        for (const auto& entry : raw) {
          auto number = start_url_number(entry);
          if (!number.empty()) ask.emplace_back(number);
        }
        if (ask.size() == 4) return feed_start_urls(std::move(raw), {}, scheme, std::move(done));
        client_->async_command(
            std::move(ask), [this, raw = std::move(raw), scheme, done = std::move(done)](
                                std::exception_ptr error, redis::reply answer) mutable {
              if (!error && answer.is_error()) {
                error = std::make_exception_ptr(
                    redis::reply_error("redis queue at " + client_->where().address() +
                                           ": reading " + start_urls_key() + ":settled failed",
                                       answer.str));
              }
              if (error) return done(error, {});
              feed_start_urls(std::move(raw), answer.str, scheme, std::move(done));
            });
      });
}

// The feed's second step on shards: `read_before` has a '1' for each numbered start URL (in
// order) whose number was read before.
void sharded_queue::feed_start_urls(std::vector<std::string> raw, const std::string& read_before,
                                    dedup::fingerprint_scheme scheme, settle_handler done) {
  const auto& start_key = start_urls_key();
  std::vector<request> starts;
  std::vector<std::vector<std::size_t>> positions(shards_.size());
  redis::command remove{"EVAL",           remove_fed_script,  "3",
                        start_key,        start_key + ":bad", start_key + ":settled",
                        start_urls_type()};
  std::size_t numbered = 0;
  std::set<std::string, std::less<>> numbers_here;  // a copy in the same read
  for (auto& entry : raw) {
    std::string reason, number(signs_entries() ? start_url_number(entry) : "");
    try {
      auto start = shards_[0].read_start_url(entry);
      if (!number.empty() && ((read_before.size() > numbered && read_before[numbered] == '1') ||
                              !numbers_here.insert(number).second)) {
        throw std::invalid_argument("a copy of start URL " + number +
                                    ", which was read already: a signed start URL is read once");
      }
      positions[shard_of(start)].push_back(starts.size());
      starts.push_back(std::move(start));
    } catch (const std::exception& bad) {
      reason = quoted_for_log(bad.what(), 500);
    }
    if (!number.empty()) ++numbered;
    remove.push_back(std::move(entry));
    remove.push_back(std::move(reason));
    remove.push_back(std::move(number));
  }
  push_by_shard(starts, positions, scheme,
                [this, remove = std::move(remove), done = std::move(done)](
                    std::exception_ptr error, settle_result pushed) mutable {
                  if (error) return done(error, {});
                  client_->async_command(std::move(remove), [this, pushed, done = std::move(done)](
                                                                std::exception_ptr error,
                                                                redis::reply answer) {
                    if (!error && answer.is_error()) {
                      error = std::make_exception_ptr(redis::reply_error(
                          "redis queue at " + client_->where().address() +
                              ": removing the start URLs fed from " + start_urls_key() + " failed",
                          answer.str));
                    }
                    if (error) return done(error, {});
                    start_bad_ += std::size_t(std::max<long long>(0, answer.integer));
                    done(nullptr, pushed);
                  });
                });
}

void sharded_queue::forget_known() {
  for (auto& shard : shards_) shard.forget_known();
}

void sharded_queue::set_check(const std::function<std::string(const request&)>& check) {
  for (auto& shard : shards_) shard.set_check(check);
}

std::size_t sharded_queue::reclaimed() const {
  std::size_t sum = 0;
  for (const auto& shard : shards_) sum += shard.reclaimed();
  return sum;
}

std::size_t sharded_queue::bad() const {
  std::size_t sum = start_bad_;
  for (const auto& shard : shards_) sum += shard.bad();
  return sum;
}

std::size_t sharded_queue::dead() const {
  std::size_t sum = 0;
  for (const auto& shard : shards_) sum += shard.dead();
  return sum;
}

std::size_t sharded_queue::queued() const {
  std::size_t sum = 0;
  for (const auto& shard : shards_) sum += shard.queued();
  return sum;
}

std::vector<std::string> sharded_queue::set_aside_reasons_taken() {
  std::vector<std::string> reasons;
  for (auto& shard : shards_) {
    for (auto& reason : shard.set_aside_reasons_taken()) reasons.push_back(std::move(reason));
  }
  return reasons;
}

std::optional<std::chrono::milliseconds> sharded_queue::next_host_due() const {
  std::optional<std::chrono::milliseconds> soonest;
  for (const auto& shard : shards_) {
    if (auto due = shard.next_host_due(); due && (!soonest || *due < *soonest)) soonest = due;
  }
  return soonest;
}

}  // namespace crawler
