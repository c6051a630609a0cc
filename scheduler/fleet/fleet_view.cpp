#include "scheduler/fleet/fleet_view.h"

#include <algorithm>
#include <boost/asio/use_future.hpp>
#include <charconv>
#include <cstdlib>
#include <future>
#include <stdexcept>

#include "redis/bounded_get.h"
#include "request/request.h"
#include "scheduler/fleet/detail/fleet_lua.h"
#include "scheduler/fleet/sharded_queue.h"

namespace crawler {
namespace {

namespace asio = boost::asio;

std::vector<redis::reply> read_all(redis::client& client, std::vector<redis::command> commands,
                                   const std::string& what) {
  auto replies = client.async_pipeline(std::move(commands), asio::use_future).get();
  for (const auto& reply : replies) {
    if (reply.is_error()) {
      throw std::runtime_error("reading " + what + " at " + client.where().address() + ": " +
                               reply.str);
    }
  }
  return replies;
}

std::vector<fleet_worker> workers_of(const redis::reply& workers, double now) {
  std::vector<fleet_worker> lines;
  for (std::size_t i = 0; i + 1 < workers.elements.size(); i += 2) {
    auto record = nlohmann::json::parse(workers.elements[i + 1].str, nullptr, false);
    if (!record.is_object()) {
      lines.push_back({.id = workers.elements[i].str, .record = nullptr, .readable = false});
      continue;
    }
    fleet_worker line{.id = workers.elements[i].str, .record = std::move(record)};
    double heartbeat = line.field("heartbeat");
    auto interval_field = line.record.find("interval");
    double interval = interval_field != line.record.end() && interval_field->is_number()
                          ? interval_field->get<double>()
                          : 10;
    line.heartbeat_age = now - heartbeat;
    line.live = now - heartbeat < 3 * interval;
    lines.push_back(std::move(line));
  }
  return lines;
}

// Why the fleet's summed figures may be short of what its workers did: a worker that died adds
// nothing it counted after its last heartbeat, and a Redis that lost the fleet's epoch may have
// lost the stats with it.
std::vector<std::string> partial_reasons(const std::vector<fleet_worker>& lines,
                                         const redis::reply& epoch, const std::string& epoch_key) {
  std::vector<std::string> reasons;
  std::size_t dead = 0, unreadable = 0;
  for (const auto& line : lines) {
    dead += line.readable && !line.live;
    unreadable += !line.readable;
  }
  if (unreadable) {
    reasons.push_back(std::to_string(unreadable) +
                      " lines of the workers' key are not workers' records (a live worker sets "
                      "them aside in the queue's :bad at its next heartbeat)");
  }
  if (dead) {
    reasons.push_back(std::to_string(dead) +
                      " workers stopped without closing (their counts since their last "
                      "heartbeat are not in the sums, but for the pages and items they "
                      "settled: response_received_count and item_scraped_count are exact)");
  }
  if (epoch.type != redis::reply::kind::string) {
    reasons.push_back(epoch_key +
                      " is missing: this Redis may have lost the fleet's state (restart without "
                      "persistence, flush, eviction), its stats with it");
  }
  return reasons;
}

// The Redis clock from a TIME reply, in seconds.
double seconds_of(const redis::reply& time) {
  if (time.elements.size() != 2) throw std::runtime_error("TIME answered " + time.describe());
  return std::stod(time.elements[0].str) + std::stod(time.elements[1].str) / 1e6;
}

// <spider>:stats as JSON: a field that holds a whole number is that number, any other is text.
nlohmann::json stats_of(const redis::reply& hash) {
  nlohmann::json stats = nlohmann::json::object();
  for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
    const auto& value = hash.elements[i + 1].str;
    char* end = nullptr;
    long long number = std::strtoll(value.c_str(), &end, 10);
    if (end && *end == '\0' && !value.empty()) {
      stats[hash.elements[i].str] = number;
    } else {
      stats[hash.elements[i].str] = value;
    }
  }
  return stats;
}

// On a cluster a sharded fleet's settles add their pages' counts to their shard's stats
// ({<spider>:<i>}:stats, in the shard's slot); the fleet's stats are <spider>:stats and those
// added up. They outlive the crawl's <queue>:shards, as <spider>:stats does, so every shard a
// fleet may have is looked for. On one Redis every settle adds to <spider>:stats itself.
void add_shard_stats(redis::client& client, const settings& settings, const std::string& spider,
                     nlohmann::json& stats) {
  if (settings.get("REDIS_CLUSTER_NODES").empty()) return;
  std::vector<std::string> keys;
  std::vector<redis::command> looks;
  for (std::int64_t i = 0; i < most_shards; ++i) {
    keys.push_back(key_spider_name(settings, spider + ":" + std::to_string(i)) + ":stats");
    looks.push_back({"EXISTS", keys.back()});
  }
  auto found = read_all(client, std::move(looks), "the shards' stats");
  looks.clear();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (found[i].integer == 1) looks.push_back({"HGETALL", keys[i]});
  }
  if (looks.empty()) return;
  for (const auto& reply : read_all(client, std::move(looks), "the shards' stats")) {
    auto shard = stats_of(reply);
    for (const auto& [field, value] : shard.items()) {
      // A count adds to a count; text (another program's) stands only where nothing else does.
      auto& sum = stats[field];
      if (sum.is_null()) {
        sum = value;
      } else if (value.is_number_integer() && sum.is_number_integer()) {
        sum = sum.get<long long>() + value.get<long long>();
      }
    }
  }
}

// The leases each worker holds over the fleet's shards: how many, and when the last expires.
void count_leases(redis::client& client, const std::vector<std::string>& shards, double now,
                  std::vector<fleet_worker>& workers) {
  std::vector<redis::command> looks;
  for (const auto& key : shards) {
    looks.push_back(
        {"EVAL", detail::lua::view_leases_by_worker, "2", key + ":leased", key + ":deadlines"});
  }
  std::map<std::string, std::pair<long long, double>> held;  // count, last deadline in ms
  for (const auto& reply : read_all(client, std::move(looks), "the fleet's leases")) {
    for (std::size_t i = 0; i + 2 < reply.elements.size(); i += 3) {
      auto& worker = held[reply.elements[i].str];
      worker.first += reply.elements[i + 1].integer;
      worker.second = std::max(worker.second, double(reply.elements[i + 2].integer));
    }
  }
  for (auto& worker : workers) {
    if (auto found = held.find(worker.id); found != held.end()) {
      worker.leases = found->second.first;
      worker.leases_back_in = found->second.second / 1000 - now;
    }
  }
}

}  // namespace

double fleet_worker::field(const char* name) const {
  if (!record.is_object()) return 0;
  auto found = record.find(name);
  return found != record.end() && found->is_number() ? found->get<double>() : 0.0;
}

std::vector<std::string> fleet_queue_keys(redis::client& client, const settings& settings,
                                          const std::string& spider) {
  auto queue_of = [&](const std::string& name) {
    return spider_key(settings.get_string("SCHEDULER_QUEUE_KEY"), key_spider_name(settings, name));
  };
  auto marker = queue_of(spider) + ":shards";
  auto stored = client.async_command(redis::bounded_get(marker, 256), asio::use_future).get();
  if (stored.type == redis::reply::kind::nil) return {queue_of(spider)};
  int shards = 0;
  auto [end, problem] =
      std::from_chars(stored.str.data(), stored.str.data() + stored.str.size(), shards);
  if (stored.type != redis::reply::kind::string || problem != std::errc() ||
      end != stored.str.data() + stored.str.size() || shards < 1 || shards > most_shards) {
    throw std::runtime_error(marker + " at " + client.where().address() + " holds " +
                             quoted_for_log(stored.str, 40) +
                             ", not the fleet's number of shards (1 to 1024)");
  }
  if (shards == 1) return {queue_of(spider)};
  std::vector<std::string> keys;
  for (int i = 0; i < shards; ++i) keys.push_back(queue_of(spider + ":" + std::to_string(i)));
  return keys;
}

fleet_stats read_fleet_stats(redis::client& client, const settings& settings,
                             const std::string& spider) {
  auto named = key_spider_name(settings, spider);
  auto key = named + ":stats";
  // A fleet in shards has an epoch per shard: shard 0's stands for them.
  auto epoch_key = fleet_queue_keys(client, settings, spider)[0] + ":epoch";
  auto replies = read_all(
      client, {{"HGETALL", key}, {"HGETALL", named + ":workers"}, {"GET", epoch_key}, {"TIME"}},
      key);
  fleet_stats out;
  out.stats = stats_of(replies[0]);
  add_shard_stats(client, settings, spider, out.stats);
  if (!out.stats.empty()) {
    out.partial =
        partial_reasons(workers_of(replies[1], seconds_of(replies[3])), replies[2], epoch_key);
  }
  return out;
}

fleet_state read_fleet(redis::client& client, const settings& settings, const std::string& spider) {
  auto named = key_spider_name(settings, spider);
  fleet_state fleet;
  fleet.spider = spider;
  fleet.redis_address = client.where().address();
  fleet.start_urls = spider_key(settings.get_string("REDIS_START_URLS_KEY"), named);
  auto queue_key = spider_key(settings.get_string("SCHEDULER_QUEUE_KEY"), named);
  auto shards = fleet_queue_keys(client, settings, spider);
  // The queue's own :bad: a sharded fleet's holds what its feeds set aside, beside the shards'.
  std::vector<redis::command> looks{{"HGETALL", named + ":workers"},
                                    {"TIME"},
                                    {"HGETALL", named + ":stats"},
                                    {"EVAL", detail::lua::view_size, "1", fleet.start_urls},
                                    {"LLEN", fleet.start_urls + ":bad"},
                                    {"GET", shards[0] + ":epoch"},  // shard 0's stands for them all
                                    {"LRANGE", queue_key + ":bad", "0", "2"},
                                    {"LLEN", queue_key + ":bad"}};
  constexpr std::size_t per_shard_from = 8;
  for (const auto& key : shards) {
    looks.push_back({"EVAL", detail::lua::view_size, "2", key, key + ":count"});
    looks.push_back({"HLEN", key + ":leased"});
    looks.push_back({"LLEN", key + ":dead"});
    looks.push_back({"LLEN", key + ":bad"});
  }
  auto replies = read_all(client, std::move(looks), "the fleet");
  fleet.now = seconds_of(replies[1]);
  fleet.workers = workers_of(replies[0], fleet.now);
  fleet.stats = stats_of(replies[2]);
  add_shard_stats(client, settings, spider, fleet.stats);
  auto as_stored = [&](const char* field) -> std::string {
    auto found = fleet.stats.find(field);
    if (found == fleet.stats.end()) return "";
    return found->is_string() ? found->get<std::string>() : found->dump();
  };
  fleet.pages = as_stored("response_received_count");
  fleet.items = as_stored("item_scraped_count");
  fleet.start_urls_waiting = replies[3].integer;
  fleet.start_urls_set_aside = replies[4].integer;
  for (const auto& record : replies[6].elements) fleet.first_set_aside.push_back(record.str);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    fleet.queued += replies[per_shard_from + 4 * i].integer;
    fleet.leased += replies[per_shard_from + 4 * i + 1].integer;
    fleet.dead_letters += replies[per_shard_from + 4 * i + 2].integer;
    fleet.set_aside += replies[per_shard_from + 4 * i + 3].integer;
  }
  if (shards.size() > 1) fleet.set_aside += replies[7].integer;
  fleet.queue = shards.size() > 1 ? shards[0] + " ... " + shards.back() : shards[0];
  fleet.dead_letters_at = fleet.queue + ":dead";
  fleet.set_aside_at = fleet.queue + ":bad";
  fleet.start_urls_set_aside_at = fleet.start_urls + ":bad";
  count_leases(client, shards, fleet.now, fleet.workers);
  fleet.partial = partial_reasons(fleet.workers, replies[5], fleet.queue + ":epoch");
  return fleet;
}

std::map<std::string, std::map<std::string, long long>> read_fleet_reasons(
    redis::client& client, const settings& settings, const std::string& spider, std::size_t most) {
  auto named = key_spider_name(settings, spider);
  auto queue_key = spider_key(settings.get_string("SCHEDULER_QUEUE_KEY"), named);
  auto shards = fleet_queue_keys(client, settings, spider);
  std::vector<std::pair<std::string, std::string>> lists;  // what, key
  for (const auto& key : shards) lists.emplace_back("dead letters", key + ":dead");
  for (const auto& key : shards) lists.emplace_back("set aside", key + ":bad");
  if (shards.size() > 1) lists.emplace_back("set aside", queue_key + ":bad");
  lists.emplace_back("start URLs set aside",
                     spider_key(settings.get_string("REDIS_START_URLS_KEY"), named) + ":bad");
  std::vector<redis::command> looks;
  for (const auto& [what, key] : lists) {
    looks.push_back({"EVAL", detail::lua::view_reasons, "1", key, std::to_string(most)});
  }
  std::map<std::string, std::map<std::string, long long>> out;
  auto replies = read_all(client, std::move(looks), "the fleet's set-aside records");
  for (std::size_t i = 0; i < lists.size(); ++i) {
    auto& counted = out[lists[i].first];
    for (std::size_t at = 0; at + 1 < replies[i].elements.size(); at += 2) {
      counted[replies[i].elements[at].str] += replies[i].elements[at + 1].integer;
    }
  }
  return out;
}

fleet_requeue_result requeue_fleet(const std::shared_ptr<redis::client>& client,
                                   const settings& settings, const std::string& spider,
                                   set_aside_list from) {
  constexpr std::size_t entries_per_round_trip = 1000;
  auto named = key_spider_name(settings, spider);
  auto queue_key = spider_key(settings.get_string("SCHEDULER_QUEUE_KEY"), named);
  auto shard_keys = fleet_queue_keys(*client, settings, spider);
  // The fleet's layout is what Redis holds: a host frontier's keys make it one, whatever
  // SCHEDULER_QUEUE_CLASS this command was given.
  auto order = redis_queue_order_from(settings);
  for (const auto& key : shard_keys) {
    auto frontier = client
                        ->async_command({"EXISTS", key + ":hosts", key + ":busy", key + ":count",
                                         key + ":inflight"},
                                        asio::use_future)
                        .get();
    if (frontier.integer > 0) order = "host";
  }
  auto queue_at = [&](const std::string& key) {
    return redis_queue(
        client, {.key = key,
                 .order = order,
                 .form = redis_queue_form_from(settings),
                 .worker = "crawler-requeue",
                 .start_urls_key = spider_key(settings.get_string("REDIS_START_URLS_KEY"), named),
                 .start_urls_type = start_urls_type_from(settings)});
  };
  // Each shard's lists; the start URLs' :bad through the fleet's own queue key, which shares
  // the start key's hash slot on a cluster.
  bool bad = from != set_aside_list::dead;
  std::vector<std::pair<std::string, set_aside_list>> lists;
  for (const auto& key : shard_keys) {
    lists.emplace_back(key, bad ? set_aside_list::bad : set_aside_list::dead);
  }
  if (bad) {
    if (shard_keys.size() > 1) lists.emplace_back(queue_key, set_aside_list::bad);
    lists.emplace_back(queue_key, set_aside_list::start_bad);
  }
  fleet_requeue_result out;
  out.where = queue_key + (shard_keys.size() > 1 ? " (and its shards')" : "") +
              (bad ? ":bad and its start URLs' :bad" : ":dead");
  for (const auto& [key, list] : lists) {
    auto queue = queue_at(key);
    std::size_t left = 0;  // at the head of this list: records that are not entries
    for (;;) {
      std::promise<requeue_result> answer;
      queue.async_requeue(list, left, entries_per_round_trip,
                          [&](std::exception_ptr error, requeue_result result) {
                            if (error) return answer.set_exception(error);
                            answer.set_value(std::move(result));
                          });
      auto result = answer.get_future().get();
      out.requeued += result.requeued;
      left += result.unreadable.size();
      out.unreadable.insert(out.unreadable.end(), result.unreadable.begin(),
                            result.unreadable.end());
      if (result.requeued == 0 && result.unreadable.empty()) break;
    }
  }
  return out;
}

}  // namespace crawler
