// fleet_scheduler's crawl: taking batches, storing outcomes, heartbeats and lease renewal, stats,
// outages and idleness. Its opening is in fleet_open.cpp, its close in fleet_close.cpp.
#include "scheduler/fleet/fleet_scheduler.h"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "config/log.h"
#include "redis/cluster_slots.h"
#include "redis/endpoint.h"
#include "redis/reply_error.h"
#include "redis/set_aside.h"
#include "scheduler/fleet/detail/fleet_lua.h"
#include "scheduler/shared_request.h"

namespace crawler {
namespace {

std::chrono::milliseconds milliseconds_of(const settings& settings, std::string_view key) {
  return std::chrono::milliseconds(std::int64_t(settings.get_double(key) * 1000));
}

// host:pid:random, unique in the fleet even when a pid is reused after a restart.
std::string new_worker_id() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string name(host);
  std::erase(name, '|');
  std::random_device random;
  return name + ":" + std::to_string(getpid()) + ":" + std::to_string(random() % 1000000);
}

bool is_out_of_memory(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const redis::reply_error& refused) {
    return refused.kind() == redis::reply_error_kind::out_of_memory;
  } catch (...) {
    return false;
  }
}

// The key a setting's template names for `context`'s spider (key_spider_name: tagged on a cluster).
std::string fleet_key(const scheduler_context& context, const char* setting) {
  return spider_key(context.settings.get_string(setting),
                    key_spider_name(context.settings, context.spider_name));
}

// Throws settings_error naming the first of `keys` (setting, key) that does not lie in the hash
// slot of `home`, a tagged name.
void check_slot_of(const std::vector<std::pair<std::string, std::string>>& keys,
                   const std::string& home) {
  auto slot = redis::key_slot(home);
  for (const auto& [setting, key] : keys) {
    if (redis::hash_tag(key) && redis::key_slot(key) == slot) continue;
    throw settings_error("settings." + setting + ": \"" + key +
                         "\" does not lie in the crawl's hash slot (" + std::to_string(slot) +
                         ", the slot of " + home +
                         "): on a Redis Cluster the fleet's scripts touch its keys together, so "
                         "each must carry %(spider)s (written " +
                         home + " there) or the tag " + home);
  }
}

// On a Redis Cluster a script runs only when its keys share a hash slot, and the fleet's scripts
// take from the queue, mark the dupefilter, move start URLs and store items together: every key
// a shard's scripts touch must lie in the slot of its tagged name (with one shard, the spider's).
void check_cluster_slot(const scheduler_context& context, const std::vector<std::string>& shards,
                        const std::vector<std::unique_ptr<dedup::rfp_dupefilter>>& dupefilters) {
  if (context.settings.get("REDIS_CLUSTER_NODES").empty()) return;
  for (std::size_t shard = 0; shard < shards.size(); ++shard) {
    const auto& home = shards[shard];
    auto key_of = [&](const char* setting) {
      return spider_key(context.settings.get_string(setting), home);
    };
    std::vector<std::pair<std::string, std::string>> keys{
        {"SCHEDULER_QUEUE_KEY", key_of("SCHEDULER_QUEUE_KEY")},
        {"REDIS_ITEMS_KEY", key_of("REDIS_ITEMS_KEY")},
        {"the dupefilter's key", dupefilters[shard]->marking()->key}};
    // With shards, start URLs are pushed into their shards, and then removed (with what cannot
    // be read moved to their :bad) by a script in the fleet's own slot.
    if (shards.size() == 1) {
      keys.emplace_back("REDIS_START_URLS_KEY", key_of("REDIS_START_URLS_KEY"));
    }
    check_slot_of(keys, home);
  }
  if (shards.size() > 1) {
    auto fleet = key_spider_name(context.settings, context.spider_name);
    check_slot_of({{"REDIS_START_URLS_KEY", fleet_key(context, "REDIS_START_URLS_KEY")}}, fleet);
  }
}

// The settings a shard's dupefilter is built from: BLOOMFILTER_CAPACITY is the crawl's, and each
// of n shards holds its share of the URLs.
std::unique_ptr<settings> shard_settings(const settings& crawl, std::size_t shards) {
  auto copy = std::make_unique<settings>(crawl);
  auto capacity = crawl.get_int("BLOOMFILTER_CAPACITY");
  if (capacity > 0) {
    copy->set("BLOOMFILTER_CAPACITY", (capacity + std::int64_t(shards) - 1) / std::int64_t(shards),
              "BLOOMFILTER_CAPACITY / SCHEDULER_SHARDS");
  }
  return copy;
}

}  // namespace

std::unique_ptr<scheduler> fleet_scheduler::create(const scheduler_context& context) {
  const auto& settings = context.settings;
  if (settings.get_double("SCHEDULER_HEARTBEAT_INTERVAL") * 3 >
      settings.get_double("SCHEDULER_LEASE_TIME")) {
    throw settings_error(
        "SCHEDULER_HEARTBEAT_INTERVAL: must be at most a third of SCHEDULER_LEASE_TIME, so a "
        "live worker's lease never expires between two renewals");
  }
  auto client = context.redis
                    ? context.redis
                    : redis::client::create(context.executor, redis::endpoint_from(settings));
  auto shards = shard_spider_names(settings, context.spider_name);
  if (shards.size() > 1 && redis_queue_form_from(settings) == queue_entry_form::pickle) {
    throw settings_error(
        "SCHEDULER_SHARDS: scrapy-redis's workers (SCHEDULER_SERIALIZER "
        "scrapy_redis.picklecompat) know one queue key, not " +
        std::to_string(shards.size()) +
        " shards; a fleet shared with them keeps SCHEDULER_SHARDS = 1");
  }
  std::unique_ptr<crawler::settings> shared_out;
  if (shards.size() > 1) shared_out = shard_settings(settings, shards.size());
  std::vector<std::unique_ptr<dedup::rfp_dupefilter>> dupefilters;
  for (std::size_t shard = 0; shard < shards.size(); ++shard) {
    // Named as its shard's fleet: its keys are the shard's (<spider>:<i>:dupefilter ...).
    auto name = shards.size() == 1 ? context.spider_name
                                   : context.spider_name + ":" + std::to_string(shard);
    dupefilters.push_back(dedup::make_dupefilter(
        {shared_out ? *shared_out : settings, context.stats, name, context.executor, client}));
    if (!dupefilters.back()->marking()) {
      throw settings_error(
          "SCHEDULER=redis needs a dupefilter the fleet shares: DUPEFILTER_CLASS=" +
          std::string(dupefilters.back()->backend()) +
          " is local to one worker (use redis_set, redis_bitmap or redisbloom)");
    }
  }
  check_cluster_slot(context, shards, dupefilters);
  std::optional<entry_signer> signer;
  try {
    signer = entry_signer::from_environment();
  } catch (const std::invalid_argument& error) {
    throw settings_error(error.what());
  }
  return std::unique_ptr<scheduler>(new fleet_scheduler(context, std::move(dupefilters),
                                                        std::move(shared_out), std::move(client),
                                                        std::move(signer)));
}

namespace {

// Shard i's options: its keys are those of a fleet of the spider shards[i] (items too on a
// cluster, where a shard's settle may touch only its own slot; one Redis keeps one items list,
// so its readers need not know of shards).
std::vector<redis_queue_options> shard_options(const scheduler_context& context,
                                               const std::vector<std::string>& shards,
                                               std::optional<entry_signer> signer) {
  const auto& settings = context.settings;
  redis_queue_options fleet{
      .order = redis_queue_order_from(settings),
      .form = redis_queue_form_from(settings),
      .worker = new_worker_id(),
      .lease = milliseconds_of(settings, "SCHEDULER_LEASE_TIME"),
      .items_key = fleet_key(context, "REDIS_ITEMS_KEY"),
      .start_urls_key = fleet_key(context, "REDIS_START_URLS_KEY"),
      .start_urls_type = start_urls_type_from(settings),
      .max_entry_size = std::size_t(settings.get_int("SCHEDULER_MAX_ENTRY_SIZE")),
      .max_deliveries = std::size_t(settings.get_int("SCHEDULER_MAX_DELIVERIES")),
      .signer = std::move(signer),
      .secrets = request_secrets(settings),
      .allowed_fields = entry_fields::from(settings),
      // As the downloader's slots: per server address with CONCURRENT_REQUESTS_PER_IP.
      .host_limit = std::size_t(
          std::max<std::int64_t>(0, settings.get_int("CONCURRENT_REQUESTS_PER_IP") > 0
                                        ? settings.get_int("CONCURRENT_REQUESTS_PER_IP")
                                        : settings.get_int("CONCURRENT_REQUESTS_PER_DOMAIN"))),
      .host_delay = milliseconds_of(settings, "DOWNLOAD_DELAY"),
      .randomize_delay = settings.get_bool("RANDOMIZE_DOWNLOAD_DELAY"),
      .limit_by_address = settings.get_int("CONCURRENT_REQUESTS_PER_IP") > 0};
  bool cluster = !settings.get("REDIS_CLUSTER_NODES").empty();
  std::vector<redis_queue_options> options;
  for (const auto& shard : shards) {
    options.push_back(fleet);
    options.back().key = spider_key(settings.get_string("SCHEDULER_QUEUE_KEY"), shard);
    // A settle adds its page's counts to the fleet's stats, or on a cluster to its shard's
    // (<shard>:stats, in the shard's slot), which the fleet's readers add up (fleet_view.h).
    options.back().stats_key =
        (cluster ? shard : key_spider_name(settings, context.spider_name)) + ":stats";
    if (cluster)
      options.back().items_key = spider_key(settings.get_string("REDIS_ITEMS_KEY"), shard);
  }
  return options;
}

std::vector<const dedup::redis_marking*> markings_of(
    const std::vector<std::unique_ptr<dedup::rfp_dupefilter>>& dupefilters) {
  std::vector<const dedup::redis_marking*> markings;
  for (const auto& dupefilter : dupefilters) markings.push_back(dupefilter->marking());
  return markings;
}

}  // namespace

fleet_scheduler::fleet_scheduler(const scheduler_context& context,
                                 std::vector<std::unique_ptr<dedup::rfp_dupefilter>> dupefilters,
                                 std::unique_ptr<settings> shard_settings,
                                 std::shared_ptr<redis::client> client,
                                 std::optional<entry_signer> signer)
    : scheduler(context),
      shard_settings_(std::move(shard_settings)),
      dupefilters_(std::move(dupefilters)),
      client_(client),
      spider_(context.spider_name),
      queue_key_(fleet_key(context, "SCHEDULER_QUEUE_KEY")),
      start_urls_key_(fleet_key(context, "REDIS_START_URLS_KEY")),
      stats_key_(key_spider_name(context.settings, context.spider_name) + ":stats"),
      workers_key_(key_spider_name(context.settings, context.spider_name) + ":workers"),
      queue_(client,
             shard_options(context, shard_spider_names(context.settings, context.spider_name),
                           std::move(signer)),
             markings_of(dupefilters_)),
      batch_size_(std::size_t(context.settings.get_int("CONCURRENT_REQUESTS"))),
      start_urls_batch_(context.settings.get_int("REDIS_START_URLS_BATCH_SIZE") > 0
                            ? std::size_t(context.settings.get_int("REDIS_START_URLS_BATCH_SIZE"))
                            : batch_size_),
      heartbeat_interval_(milliseconds_of(context.settings, "SCHEDULER_HEARTBEAT_INTERVAL")),
      max_idle_(context.settings.get_int("MAX_IDLE_TIME_BEFORE_CLOSE")),
      failure_timeout_(milliseconds_of(context.settings, "REDIS_FAILURE_TIMEOUT")),
      persist_(context.settings.get_bool("SCHEDULER_PERSIST")),
      flush_on_start_(context.settings.get_bool("SCHEDULER_FLUSH_ON_START")),
      store_items_(stores_items_in_redis(context.settings)),
      lease_time_(milliseconds_of(context.settings, "SCHEDULER_LEASE_TIME")),
      poll_timer_(context.executor),
      heartbeat_timer_(context.executor) {
  if (!context.settings.get_string("JOBDIR").empty()) {
    logger_->warn("JOBDIR is ignored with SCHEDULER=redis: the fleet's state is in Redis");
  }
  if (context.settings.get_double("SCHEDULER_IDLE_BEFORE_CLOSE") > 0) {
    logger_->warn(
        "SCHEDULER_IDLE_BEFORE_CLOSE (scrapy-redis's blocking-pop timeout) has no effect here: "
        "workers poll an empty queue every 50 ms to 2 s, and MAX_IDLE_TIME_BEFORE_CLOSE decides "
        "when an idle one closes");
  }
}

fleet_scheduler::~fleet_scheduler() {
  *alive_ = false;
}

// fleet/lua/heartbeat.lua (its keys and arguments at its top), after what it calls.
const std::string heartbeat_script = std::string(detail::lua::wrong_type) +
                                     redis::lua_set_aside_record + detail::lua::live_worker +
                                     detail::lua::heartbeat;

// fleet/lua/add_stats.lua (its keys and arguments at its top), after what it calls.
const std::string add_stats_script =
    std::string(detail::lua::wrong_type) + redis::lua_set_aside_record + detail::lua::add_stats;

// Start URLs first, as many as this worker has room for beyond what the queue already holds (as
// its last take saw it): the rest stay in the start key for other workers, scrapy-redis's among
// them, who take theirs when they are idle. Then the queue.
void fleet_scheduler::take_more() {
  if (!open_ || taking_ || buffer_.size() >= batch_size_) return;
  if (paces_hosts() && holding() >= batch_size_) return;
  // Held: taken and not yet settled, whether waiting in the buffer or downloading.
  auto room = holding() < batch_size_ ? batch_size_ - holding() : 0;
  if (queue_.queued() >= room) {
    taking_ = true;
    return take_leased();
  }
  taking_ = true;
  queue_.async_feed(std::min(start_urls_batch_, room - queue_.queued()), scheme_,
                    [this, alive = alive_](std::exception_ptr error, settle_result fed) {
                      if (!*alive) return;
                      if (stopped(error)) return;
                      if (error) {
                        redis_failed("read the fleet's start URLs", error);
                      } else if (fed.queued) {
                        stats_.inc_value("scheduler/enqueued/redis", std::int64_t(fed.queued));
                        stats_.inc_value("scheduler/enqueued", std::int64_t(fed.queued));
                      }
                      take_leased();
                    });
}

void fleet_scheduler::take_leased() {
  // The leases are Redis's from the moment the script runs, which is after this: until then
  // plus the lease time, they are surely this worker's.
  auto sent = std::chrono::steady_clock::now();
  // The host frontier gives a host's turn for now: what is taken must be downloadable at once.
  auto count =
      paces_hosts() ? batch_size_ - std::min(batch_size_, holding()) : batch_size_ - buffer_.size();
  if (count == 0 || close_waiting_) {
    taking_ = false;
    if (close_waiting_) {  // the start URLs' feed it waited for is done: no take now
      auto handler = std::move(*close_waiting_);
      close_waiting_.reset();
      do_close(std::move(handler));
    }
    return;
  }
  queue_.async_take(count, [this, alive = alive_, sent, asked = count](
                               std::exception_ptr error, std::vector<leased_request> taken) {
    if (!*alive) return;
    taking_ = false;
    if (close_waiting_) {
      // The close waited for this take: what it leased goes back with the rest, now rather
      // than when its leases expire.
      if (!error) {
        for (const auto& leased : taken) to_release_.push_back(leased.lease_id);
      }
      auto handler = std::move(*close_waiting_);
      close_waiting_.reset();
      return do_close(std::move(handler));
    }
    count_set_asides();
    if (stopped(error)) return;
    if (error) {
      redis_failed("take requests from the fleet's queue", error);
      if (open_ && failure_timeout_.count() > 0 &&
          crawl_clock::now() - *redis_down_since_ >= failure_timeout_) {
        logger_->error("Could not take requests for {} s (REDIS_FAILURE_TIMEOUT): closing",
                       std::chrono::duration<double>(failure_timeout_).count());
        return fatal("redis_unavailable");
      }
      return after_empty_take();
    }
    redis_answered();
    if (taken.empty()) return after_empty_take();
    idle_backoff_.reset();
    idle_since_ = crawl_clock::now();
    fleet_done_ = false;
    for (auto& leased : taken) {
      held_[leased.lease_id] = sent + lease_time_;
      leased.request.lease = leased.lease_id;
      buffer_.push_back(std::move(leased));
    }
    // Room left (pages settled while this take was away): take again now, or when the next
    // host is due, not at the next settle.
    if (paces_hosts() && holding() < batch_size_ && taken.size() == asked) {
      take_more();
    } else if (auto due = queue_.next_host_due(); due && holding() < batch_size_) {
      poll_timer_.expires_after(*due + std::chrono::milliseconds(1));
      poll_timer_.async_wait([this, alive = alive_](boost::system::error_code cancelled) {
        if (*alive && !cancelled) take_more();
      });
    }
    ready();
  });
}

// Leases taken and not settled, less the pages whose outcome waits for its store: up to
// CONCURRENT_REQUESTS of those hold no download slot (engine.h), so they leave room for the next
// take. A page still being parsed holds its slot, and counts.
std::size_t fleet_scheduler::holding() const {
  if (!paces_hosts()) return held_.size();
  return held_.size() - std::min({held_.size(), storing_.size(), batch_size_});
}

void fleet_scheduler::record_pace(const request& fetched, const host_pace& pace) {
  if (paces_hosts() && !fetched.lease.empty()) paces_[fetched.lease] = pace;
}

void fleet_scheduler::count_set_asides() {
  auto gained = [](std::size_t now, std::size_t& counted) {
    auto gain = std::int64_t(now - counted);
    counted = now;
    return gain;
  };
  if (auto reclaimed = gained(queue_.reclaimed(), reclaimed_)) {
    stats_.inc_value("scheduler/leases_reclaimed", reclaimed);
  }
  if (auto set_aside = gained(queue_.bad(), set_aside_)) {
    stats_.inc_value("scheduler/set_aside", set_aside);
    logger_->warn(
        "Set aside {} records of the fleet's Redis that cannot be used; each is in {} "
        "(or {}:bad) with the reason",
        set_aside, bad_keys(":bad"), start_urls_key_);
  }
  for (const auto& reason : queue_.set_aside_reasons_taken()) {
    logger_->warn("Set aside: {}", reason);
  }
  if (auto dead = gained(queue_.dead(), dead_)) {
    stats_.inc_value("scheduler/dead_letters", dead);
    logger_->error(
        "Moved {} requests to {}: each was taken SCHEDULER_MAX_DELIVERIES times by workers that "
        "stopped before settling it (a page that kills its worker?). `crawler requeue {}` puts "
        "them back",
        dead, bad_keys(":dead"), spider_);
  }
}

// The fleet's state is gone from Redis (its epoch, redis_queue.h): what this worker holds cannot
// be settled, and an empty queue would pass for a finished crawl. It says what was lost and what
// it held, forgets what it knew of the dupefilter, and stops (finish_reason redis_state_lost).
// A refusal that would come again (redis/reply_error.h) stops it too (finish_reason
// redis_error): retried, it would keep a worker busy doing nothing for days. What it holds goes
// back to the queue at close, or when its leases expire.
bool fleet_scheduler::stopped(std::exception_ptr error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const redis::reply_error& refused) {
    if (refused.retrying_helps()) return false;
    return stop_for_good("scheduler/redis_refused",
                         std::string(refused.what()) + ". Retrying cannot fix this: stopping",
                         "redis_error");
  } catch (const queue_form_mismatch& mismatch) {
    return stop_for_good("scheduler/other_form", std::string(mismatch.what()) + ". Stopping",
                         "queue_form_mismatch");
  } catch (const fleet_state_lost& lost) {
    if (state_lost_) return true;
    state_lost_ = true;
    open_ = false;
    poll_timer_.cancel();
    heartbeat_timer_.cancel();
    queue_.forget_known();
    stats_.inc_value("scheduler/state_lost");
    logger_->error(
        "{}. This worker held {} leased requests, {} of them not yet crawled: their outcomes "
        "cannot be stored. Stopping: start the crawl again (or resume it from a Redis that kept "
        "its data)",
        lost.what(), held_.size(), buffer_.size());
    buffer_.clear();
    held_.clear();
    storing_.clear();
    to_release_.clear();
    fatal("redis_state_lost");
    return true;
  } catch (...) {
    return false;
  }
}

// Once: a second error of the same take or settle must not count or log again.
bool fleet_scheduler::stop_for_good(const char* stat, const std::string& message,
                                    const char* finish_reason) {
  if (refused_ || state_lost_) return true;
  refused_ = true;
  open_ = false;
  poll_timer_.cancel();
  stats_.inc_value(stat);
  logger_->error("{}", message);
  fatal(finish_reason);
  return true;
}

// Each failure of an outage would otherwise log a line per poll and per heartbeat: one line when
// Redis goes away, one when it answers again. Meanwhile the outcomes of the downloads that finish
// (at most the taken batch and the downloads under way) wait (scheduler.h) and are stored when
// Redis is back; leases live on Redis's clock, so an outage shorter than SCHEDULER_LEASE_TIME
// loses no lease.
void fleet_scheduler::redis_failed(const std::string& doing, std::exception_ptr error) {
  if (redis_down_since_) return;
  redis_down_since_ = crawl_clock::now();
  stats_.inc_value("scheduler/redis_outages");
  if (out_of_memory(doing, error)) return;
  logger_->error("Could not {}; retrying with backoff until Redis answers: {}", doing,
                 describe_error(error));
}

// Past maxmemory under noeviction, Redis refuses a script whose first write would grow it (one
// that has written goes on to its end: nothing is half done). Memory can be freed, so it is
// retried like an outage, but said for what it is, once until Redis takes writes again.
bool fleet_scheduler::out_of_memory(const std::string& doing, std::exception_ptr error) {
  if (!is_out_of_memory(error)) return false;
  if (out_of_memory_) return true;
  out_of_memory_ = true;
  stats_.inc_value("scheduler/redis_out_of_memory");
  logger_->error(
      "Could not {}: Redis at {} is out of memory (maxmemory reached; it refuses writes). "
      "Retrying until it has room: free memory or raise maxmemory: {}",
      doing, client_->where().address(), describe_error(error));
  return true;
}

void fleet_scheduler::memory_recovered() {
  if (!out_of_memory_) return;
  out_of_memory_ = false;
  logger_->info("Redis at {} takes writes again", client_->where().address());
}

void fleet_scheduler::redis_answered() {
  if (!redis_down_since_) return;
  auto down = std::chrono::duration<double>(crawl_clock::now() - *redis_down_since_);
  redis_down_since_.reset();
  logger_->info("Redis at {} answers again after {:.1f} s; resuming", client_->where().address(),
                down.count());
}

// Nothing to take: poll again after a backoff (50 ms doubling to 2 s: an idle worker, waiting for
// pushed URLs for hours, costs Redis 3 commands a second, those its scripts run included;
// scrapy-redis's workers look every 5 s), and with
// MAX_IDLE_TIME_BEFORE_CLOSE, find out whether the whole fleet is out of work.
void fleet_scheduler::after_empty_take() {
  if (!open_) return;
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(idle_backoff_.next());
  if (auto due = queue_.next_host_due()) {
    wait = std::min(wait, *due + std::chrono::milliseconds(1));
  }
  poll_timer_.expires_after(wait);
  poll_timer_.async_wait([this, alive = alive_](boost::system::error_code cancelled) {
    if (!*alive || cancelled) return;
    take_more();
  });
  // An outage is never idleness: while Redis is away or refuses writes (a Redis past maxmemory
  // answers "nothing to take" while the start requests wait to be stored), the clock of
  // MAX_IDLE_TIME_BEFORE_CLOSE does not run.
  if (max_idle_.count() == 0 || !held_.empty() || !buffer_.empty() || out_of_memory_ ||
      redis_down_since_) {
    idle_since_ = crawl_clock::now();
    return;
  }
  // Per shard, its queue, its leases and its epoch (on a cluster, each in its own slot); then
  // the start URLs.
  std::vector<redis::command> looks;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const auto& shard = queue_.shard(i);
    looks.push_back({"EXISTS", shard.queued_key()});
    looks.push_back({"HLEN", shard.key() + ":leased"});
    looks.push_back({"GETRANGE", shard.epoch_key(), "0", "255"});  // an epoch is 16 characters
  }
  looks.push_back({"EXISTS", start_urls_key_});
  client_->async_pipeline(
      std::move(looks),
      [this, alive = alive_](std::exception_ptr error, std::vector<redis::reply> replies) {
        if (!*alive || error || replies.size() != 3 * queue_.size() + 1) return;
        bool fleet_idle = replies.back().integer == 0;
        for (std::size_t i = 0; i < queue_.size(); ++i) {
          const auto& epoch = replies[3 * i + 2].str;
          // An empty queue in a Redis that forgot the fleet is not a finished crawl.
          if (epoch != queue_.shard(i).epoch()) {
            stopped(std::make_exception_ptr(
                queue_.shard(i).epoch_lost(epoch.empty() ? "is gone" : "is now " + epoch)));
            return;
          }
          fleet_idle = fleet_idle && replies[3 * i].integer == 0 && replies[3 * i + 1].integer == 0;
        }
        auto now = crawl_clock::now();
        if (!fleet_idle) {
          idle_since_ = now;
          return;
        }
        if (now - idle_since_ >= max_idle_ && !fleet_done_) {
          fleet_done_ = true;
          ready();
        }
      });
}

void fleet_scheduler::flush_stats(std::function<void(std::exception_ptr)> then) {
  redis::command add{"EVAL", add_stats_script, "2", stats_key_, queue_key_ + ":bad"};
  std::vector<std::pair<std::string, std::int64_t>> gains;
  for (const auto& [key, value] : stats_.counters()) {
    auto& flushed = flushed_[key];
    if (value == flushed) continue;
    gains.emplace_back(key, value - flushed);
    add.push_back(key);
    add.push_back(std::to_string(value - flushed));
    flushed = value;  // now, not on the answer: a second flush meanwhile must not add it again
  }
  if (gains.empty()) {
    if (then) then(nullptr);
    return;
  }
  client_->async_command(std::move(add),
                         [this, alive = alive_, gains = std::move(gains), then = std::move(then)](
                             std::exception_ptr error, redis::reply answer) {
                           if (!*alive) return;
                           auto doing = "add to " + stats_key_;
                           if (!error && answer.is_error()) error = refusal(doing, answer.str);
                           if (error) {
                             // Not added: the next flush sends these again, with what was
                             // gained since.
                             for (const auto& [key, gained] : gains) flushed_[key] -= gained;
                             if (!out_of_memory(doing, error)) stopped(error);
                           } else {
                             memory_recovered();
                             set_aside_here(answer.integer, stats_key_);
                           }
                           if (then) then(error);
                         });
}

// The last flush has no next one to carry what it could not add: at close a worker waits for a
// Redis that is away or full, as its outcomes wait (until REDIS_FAILURE_TIMEOUT), and says what
// is lost when it gives up.
void fleet_scheduler::flush_stats_at_close(std::chrono::steady_clock::time_point since,
                                           std::function<void()> then) {
  flush_stats([this, alive = alive_, since, then = std::move(then)](std::exception_ptr error) {
    if (!*alive) return;
    if (!error) return then();
    bool in_time = failure_timeout_.count() == 0 ||
                   std::chrono::steady_clock::now() - since < failure_timeout_;
    if (worth_waiting_for(error) && in_time) {
      poll_timer_.expires_after(std::chrono::seconds(1));
      return poll_timer_.async_wait([this, alive, since, then](boost::system::error_code) {
        if (*alive) flush_stats_at_close(since, then);
      });
    }
    logger_->error("This worker's counts since its last heartbeat were not added to {}: {}",
                   stats_key_, describe_error(error));
    then();
  });
}

std::exception_ptr fleet_scheduler::refusal(const std::string& doing,
                                            const std::string& text) const {
  return std::make_exception_ptr(
      redis::reply_error("redis at " + client_->where().address() + ": could not " + doing, text));
}

void fleet_scheduler::set_aside_here(long long count, const std::string& key) {
  if (count <= 0) return;
  stats_.inc_value("scheduler/set_aside", count);
  logger_->warn(
      "Set aside {} records of {} that are not the fleet's; each is in {} with the "
      "reason",
      count, key, queue_key_ + ":bad");
}

// This worker's line in <spider>:workers, which `crawler status` reads and the fleet's close
// checks: a worker whose heartbeat is older than three intervals is dead. The scripts that write
// it add "started" and "heartbeat" on Redis's clock (write_worker).
std::string fleet_scheduler::worker_record() const {
  return nlohmann::json{{"worker", queue_.worker()},
                        {"pid", getpid()},
                        {"interval", std::chrono::duration<double>(heartbeat_interval_).count()},
                        {"pages", stats_.get_int("response_received_count")},
                        {"items", stats_.get_int("item_scraped_count")},
                        {"in_flight", held_.size()}}
      .dump();
}

void fleet_scheduler::heartbeat() {
  if (!open_) return;
  flush_stats();
  client_->async_command({"EVAL", heartbeat_script, "2", workers_key_, queue_key_ + ":bad",
                          queue_.worker(), worker_record()},
                         [this, alive = alive_](std::exception_ptr error, redis::reply answer) {
                           if (!*alive || error) return;  // an outage: the take reports it
                           const std::string doing = "write this worker's heartbeat";
                           if (answer.is_error()) {
                             auto refused = refusal(doing, answer.str);
                             if (!out_of_memory(doing, refused)) stopped(refused);
                             return;
                           }
                           memory_recovered();
                           set_aside_here(answer.integer, workers_key_);
                         });
  renew_leases();
  heartbeat_timer_.expires_after(heartbeat_interval_);
  heartbeat_timer_.async_wait([this, alive = alive_](boost::system::error_code cancelled) {
    if (!*alive || cancelled) return;
    heartbeat();
  });
}

// Renewal says which leases this worker still holds. One it lost (it stalled, SIGSTOP or a
// swapped-out VM, past SCHEDULER_LEASE_TIME, and another worker took the request back) is not
// fetched if it is still waiting here: the request is another worker's now.
void fleet_scheduler::renew_leases() {
  if (held_.empty() || renewing_) return;
  renewing_ = true;
  std::vector<std::string> leases;
  for (const auto& [lease, until] : held_) leases.push_back(lease);
  auto sent = std::chrono::steady_clock::now();
  queue_.async_renew(leases, [this, alive = alive_, leases, sent](std::exception_ptr error,
                                                                  std::vector<std::string> gone) {
    if (!*alive) return;
    renewing_ = false;
    if (stopped(error)) return;
    if (error) {
      auto doing = "renew " + std::to_string(leases.size()) +
                   " leases (they expire unless a renewal gets through)";
      return redis_failed(doing, error);
    }
    std::set<std::string> lost_leases(gone.begin(), gone.end());
    for (const auto& lease : leases) {
      auto held = held_.find(lease);
      if (held != held_.end() && !lost_leases.contains(lease)) held->second = sent + lease_time_;
    }
    if (gone.empty()) return ready();
    // Settled meanwhile, or expired and taken back: what was fetched has its outcome refused
    // at settle (scheduler/lease_lost); what waits here is dropped unfetched.
    stats_.inc_value("scheduler/lease_renewals_missed", std::int64_t(gone.size()));
    auto waiting = buffer_.size();
    std::erase_if(buffer_, [&](const leased_request& leased) {
      if (!lost_leases.contains(leased.lease_id)) return false;
      held_.erase(leased.lease_id);
      return true;
    });
    if (auto dropped = waiting - buffer_.size()) {
      stats_.inc_value("scheduler/lease_lost_unfetched", std::int64_t(dropped));
      logger_->warn(
          "This worker stalled past SCHEDULER_LEASE_TIME and lost the leases of {} requests it "
          "had taken: the fleet gave them to other workers, and they are dropped here unfetched",
          dropped);
    }
    ready();
  });
}

std::optional<request> fleet_scheduler::next_request() {
  if (buffer_.empty()) {
    take_more();
    return std::nullopt;
  }
  // Past the time its lease was surely held (this worker was stopped or starved meanwhile): ask
  // Redis first, and fetch it only if it is still this worker's.
  if (auto held = held_.find(buffer_.front().lease_id);
      held == held_.end() || held->second <= std::chrono::steady_clock::now()) {
    renew_leases();
    return std::nullopt;
  }
  auto next = std::move(buffer_.front().request);
  buffer_.pop_front();
  // The next batch is on its way before this one runs out, so downloads never wait a round trip.
  if (buffer_.size() < batch_size_ / 4) take_more();
  stats_.inc_value("scheduler/dequeued/redis");
  stats_.inc_value("scheduler/dequeued");
  return next;
}

void fleet_scheduler::restore(request request) {
  if (request.lease.empty()) return;
  paces_.erase(request.lease);
  storing_.erase(request.lease);
  to_release_.push_back(std::move(request.lease));
}

// A page whose outcome could not be stored is crawled again, with its outcome, by whoever takes
// it next, once its lease expires: nothing of the outcome needs keeping here.
void fleet_scheduler::keep_unchecked(page_outcome outcome) {
  paces_.erase(outcome.lease);
  storing_.erase(outcome.lease);
}

std::string fleet_scheduler::start_request_problem(const request& request) const {
  // As the workers will read it back: the operator's own when signed, shared otherwise.
  auto as_read = request;
  if (!queue_.signs_entries()) as_read.origin = request_origin::shared;
  auto problem = shared_request_problem(as_read);
  if (problem.empty()) return {};
  return "SCHEDULER=redis: " + problem + " (every worker reads the fleet's queue back as a " +
         "shared request)";
}

bool fleet_scheduler::has_pending_requests() const {
  return !buffer_.empty() || !fleet_done_;
}

void fleet_scheduler::do_store(page_outcome outcome,
                               asio::any_completion_handler<attempt_signature> handler) {
  if (outcome.lease.empty()) {
    // Start requests: every worker yields the same ones, and the fleet crawls each once.
    for (auto& request : outcome.requests) request.dont_filter = false;
  }
  // Kept for the answer, which names duplicates by position, and given back untouched if Redis
  // cannot answer; settle only reads it, so no page's links are copied.
  auto kept = std::make_shared<page_outcome>(std::move(outcome));
  // std::function wants a copyable target; the handler is move-only.
  auto shared =
      std::make_shared<asio::any_completion_handler<attempt_signature>>(std::move(handler));
  static const std::vector<crawler::item> no_items;
  const auto& items = store_items_ ? kept->items : no_items;
  host_pace pace;
  if (auto found = paces_.find(kept->lease); found != paces_.end()) pace = found->second;
  if (paces_hosts() && !kept->lease.empty()) storing_.insert(kept->lease);
  // A crawled page's counts go to <spider>:stats with its settle, in the same step: only
  // whoever settles a page counts it, kill -9 or not.
  page_counts counts{.responses = kept->responses,
                     .items = kept->lease.empty() ? 0 : kept->items.size()};
  queue_.async_settle(
      kept->lease, kept->requests, items, scheme_,
      [this, alive = alive_, kept, shared, counts](std::exception_ptr error, settle_result result) {
        if (!*alive) return;
        auto& handler = *shared;
        const auto& lease = kept->lease;
        stopped(error);
        if (error) return std::move(handler)(error, stored_outcome{}, std::move(*kept));
        // This worker's stats count what it received and exported, as any crawl's; flushed_
        // says the fleet's have what the settle added (or, when another worker held the page,
        // must not: its holder counts it).
        count_with_page("response_received_count", counts.responses);
        if (result.settled) count_with_page("item_scraped_count", counts.items);
        if (!lease.empty()) {
          held_.erase(lease);
          paces_.erase(lease);
          storing_.erase(lease);
          if (!result.settled) stats_.inc_value("scheduler/lease_lost");
          if (!first_page_told_) {
            first_page_told_ = true;
            heartbeat();  // and the next one an interval from now
          }
        }
        for (const auto& [position, why] : result.refused_children) {
          logger_->error("Dropped {}: {}", kept->requests[position].describe(), why);
        }
        std::vector<request> dropped;
        for (auto position : result.duplicate_positions) {
          auto& duplicate = kept->requests[position];
          auto referer = find_header(duplicate.headers, "Referer");
          dupefilters_[0]->log(duplicate.describe(), referer.empty() ? "None" : referer);
          if (report_dropped_) dropped.push_back(std::move(duplicate));
        }
        if (result.queued) {
          stats_.inc_value("scheduler/enqueued/redis", std::int64_t(result.queued));
          stats_.inc_value("scheduler/enqueued", std::int64_t(result.queued));
        }
        std::move(handler)(nullptr,
                           stored_outcome{.queued = result.queued,
                                          .settled = lease.empty() || result.settled,
                                          .items = std::move(kept->items),
                                          .dropped = std::move(dropped)},
                           page_outcome{});
        // A worker that just queued work need not wait out its idle backoff; with the host
        // frontier, a settled page is room for the next host's turn.
        if ((result.queued && buffer_.empty()) || paces_hosts()) take_more();
      },
      pace, counts);
}

void fleet_scheduler::count_with_page(const std::string& key, std::size_t count) {
  if (count == 0) return;
  stats_.inc_value(key, std::int64_t(count));
  flushed_[key] += std::int64_t(count);
}

std::vector<std::string> fleet_scheduler::shard_keys(std::size_t i) const {
  const auto& shard = queue_.shard(i);
  // :seq and :settled go together: numbers counted again over an old :settled would
  // read as copies.
  std::vector<std::string> keys{shard.queued_key(),         shard.key() + ":leased",
                                shard.key() + ":deadlines", shard.key() + ":seq",
                                shard.key() + ":settled",   shard.key() + ":deliveries"};
  for (const auto& key : shard.host_frontier_keys()) {
    if (key != shard.queued_key()) keys.push_back(key);
  }
  for (auto& key : dupefilters_[i]->stored_keys()) keys.push_back(std::move(key));
  return keys;
}

// The keys of the fleet's crawl state, for one shard: <spider>:workers first, the queue second
// and its leases third (fleet_done_script reads them), then the rest of the queue and the
// dupefilter's keys.
std::vector<std::string> fleet_scheduler::fleet_keys() const {
  auto keys = shard_keys(0);
  keys.insert(keys.begin(), workers_key_);
  return keys;
}

std::string fleet_scheduler::bad_keys(const char* suffix) const {
  if (queue_.size() == 1) return queue_key_ + suffix;
  return queue_.shard(0).key() + suffix + " ... " + queue_.shard(queue_.size() - 1).key() + suffix;
}

}  // namespace crawler
