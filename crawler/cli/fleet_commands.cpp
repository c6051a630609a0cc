// The commands that talk to a fleet's Redis: `crawler push NAME URL... | -` (start URLs, which
// the workers move into the shared queue through the shared dupefilter), `crawler stats NAME`
// (the fleet's summed counters), `crawler status NAME` (one screen on the fleet) and `crawler
// requeue NAME [--bad]` (dead letters, or what workers set aside, back where they were).
#include <algorithm>
#include <charconv>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/prometheus_text.h"
#include "config/redact.h"
#include "config/settings.h"
#include "crawler/cli/detail/commands.h"
#include "redis/client.h"
#include "redis/set_aside.h"
#include "scheduler/fleet/redis_queue.h"
#include "scheduler/fleet/start_request.h"

namespace crawler::cli {
namespace {

namespace asio = boost::asio;

struct push_options {
  std::string spider;
  std::vector<std::string> urls;
  std::vector<std::string> overrides;
};

constexpr std::size_t entries_per_round_trip = 1000;

// The settings of a fleet command: the defaults and each -s, with their secrets kept out of
// whatever the command prints.
crawler::settings fleet_settings(const std::vector<std::string>& overrides) {
  crawler::settings settings;
  for (const auto& override : overrides) settings.set_from_string(override);
  remember_secrets(settings);
  return settings;
}

// A loop on its own thread for the Redis client, while the command waits on futures.
class redis_session {
 public:
  explicit redis_session(const settings& settings)
      : work_(io_.get_executor()),
        thread_([this] { io_.run(); }),
        client_(redis::client::create(io_.get_executor(), redis::endpoint_from(settings))) {}
  ~redis_session() {
    client_->close();
    work_.reset();
    io_.stop();
    thread_.join();
  }
  redis::client& client() { return *client_; }
  const std::shared_ptr<redis::client>& shared_client() const { return client_; }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::shared_ptr<redis::client> client_;
};

int run(const push_options& options) {
  auto settings = fleet_settings(options.overrides);
  auto key = spider_key(settings.get_string("REDIS_START_URLS_KEY"),
                        key_spider_name(settings, options.spider));
  auto type = start_urls_type_from(settings);

  // With the fleet's key, every entry is signed (as JSON, a plain URL as {"url": ...}), so the
  // workers take it as the operator's own rather than as anyone's.
  auto signer = entry_signer::from_environment();
  if (signer) signer = signer->bound_to(key);
  // Every entry is checked before anything is sent: a typo stops the push, naming its line.
  std::vector<std::string> entries;
  auto largest = std::size_t(settings.get_int("SCHEDULER_MAX_ENTRY_SIZE"));
  auto add = [&](std::string entry, const std::string& where) {
    try {
      // Every worker would set it aside: better refused here, where a person reads why.
      if (entry.size() > largest) {
        throw std::invalid_argument("an entry of " + std::to_string(entry.size()) +
                                    " bytes, over SCHEDULER_MAX_ENTRY_SIZE (" +
                                    std::to_string(largest) + ")");
      }
      if (signer && entry.find_first_not_of(" \t") != std::string::npos) {
        auto text = std::string_view(entry).substr(entry.find_first_not_of(" \t"));
        entry = signer->sign(text.starts_with('{') ? std::string(text)
                                                   : nlohmann::json{{"url", text}}.dump());
      }
      start_request_from(entry, signer ? &*signer : nullptr);
    } catch (const std::exception& error) {
      throw std::invalid_argument(where + ": " + error.what());
    }
    entries.push_back(std::move(entry));
  };
  for (std::size_t i = 0; i < options.urls.size(); ++i) {
    if (options.urls[i] != "-") {
      add(options.urls[i], "argument " + std::to_string(i + 1));
      continue;
    }
    std::string line;
    for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (line.back() == '\r') line.pop_back();
      add(line, "stdin:" + std::to_string(number));
    }
  }

  redis_session session(settings);
  auto* client = &session.client();
  for (std::size_t start = 0; start < entries.size(); start += entries_per_round_trip) {
    redis::command command{type == "set" ? "SADD" : type == "zset" ? "ZADD" : "RPUSH", key};
    auto end = std::min(entries.size(), start + entries_per_round_trip);
    for (auto entry = start; entry < end; ++entry) {
      if (type == "zset") command.push_back("0");  // equal scores: taken in byte order
      command.push_back(entries[entry]);
    }
    auto reply = client->async_command(std::move(command), asio::use_future).get();
    if (reply.is_error()) {
      throw std::runtime_error("pushing to " + key + " at " + client->where().address() +
                               " failed: " + reply.str);
    }
  }
  std::cout << "Pushed " << entries.size() << " start URLs to " << key << '\n';
  return 0;
}

// A worker's line in <spider>:workers, as `crawler status` shows it; `now` is Redis's clock.
struct worker_line {
  std::string id;
  nlohmann::json record;
  double heartbeat_age = 0;
  bool live = false;
  bool readable = true;  // false: not a worker's record (the next heartbeat sets it aside)
};

std::vector<worker_line> worker_lines(const redis::reply& workers, double now) {
  std::vector<worker_line> lines;
  for (std::size_t i = 0; i + 1 < workers.elements.size(); i += 2) {
    auto record = nlohmann::json::parse(workers.elements[i + 1].str, nullptr, false);
    if (!record.is_object()) {
      lines.push_back({workers.elements[i].str, nullptr, 0, false, false});
      continue;
    }
    double heartbeat = 0, interval = 10;
    if (record.contains("heartbeat") && record["heartbeat"].is_number()) {
      heartbeat = record["heartbeat"].get<double>();
    }
    if (record.contains("interval") && record["interval"].is_number()) {
      interval = record["interval"].get<double>();
    }
    lines.push_back({workers.elements[i].str, std::move(record), now - heartbeat,
                     now - heartbeat < 3 * interval});
  }
  return lines;
}

// Why the fleet's summed figures may be short of what its workers did: a worker that died adds
// nothing it counted after its last heartbeat, and a Redis that lost the fleet's epoch may have
// lost the stats with it.
std::vector<std::string> partial_reasons(const std::vector<worker_line>& lines,
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
                      "heartbeat are not in the sums)");
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

// The queue keys of the fleet's shards, as the fleet wrote their number beside its keys
// (SCHEDULER_SHARDS; none written: one queue), so an operator's command needs no setting to
// find them. A number that is not one is refused, naming the key.
std::vector<std::string> fleet_queue_keys(const settings& settings, const std::string& spider,
                                          redis::client& client) {
  auto queue_of = [&](const std::string& name) {
    return spider_key(settings.get_string("SCHEDULER_QUEUE_KEY"), key_spider_name(settings, name));
  };
  auto marker = queue_of(spider) + ":shards";
  auto stored = client.async_command({"GET", marker}, asio::use_future).get();
  if (stored.type == redis::reply::kind::nil) return {queue_of(spider)};
  int shards = 0;
  auto [end, problem] = std::from_chars(stored.str.data(), stored.str.data() + stored.str.size(),
                                        shards);
  if (stored.type != redis::reply::kind::string || problem != std::errc() ||
      end != stored.str.data() + stored.str.size() || shards < 1 || shards > 1024) {
    throw std::runtime_error(marker + " at " + client.where().address() + " holds " +
                             quoted_for_log(stored.str, 40) +
                             ", not the fleet's number of shards (1 to 1024)");
  }
  if (shards == 1) return {queue_of(spider)};
  std::vector<std::string> keys;
  for (int i = 0; i < shards; ++i) keys.push_back(queue_of(spider + ":" + std::to_string(i)));
  return keys;
}

int print_stats(const std::string& name, const std::vector<std::string>& overrides) {
  auto settings = fleet_settings(overrides);
  auto spider = key_spider_name(settings, name);
  redis_session session(settings);
  auto key = spider + ":stats";
  // A fleet in shards has an epoch per shard: shard 0's stands for them.
  auto epoch_key = fleet_queue_keys(settings, name, session.client())[0] + ":epoch";
  auto replies =
      session.client()
          .async_pipeline(
              {{"HGETALL", key}, {"HGETALL", spider + ":workers"}, {"GET", epoch_key}, {"TIME"}},
              asio::use_future)
          .get();
  for (const auto& answer : replies) {
    if (answer.is_error()) {
      throw std::runtime_error("reading " + key + " at " + session.client().where().address() +
                               " failed: " + answer.str);
    }
  }
  const auto& reply = replies[0];
  std::cout << stats_of(reply).dump(2) << '\n';
  if (!reply.elements.empty()) {
    auto lines = worker_lines(replies[1], seconds_of(replies[3]));
    for (const auto& reason : partial_reasons(lines, replies[2], epoch_key)) {
      std::cerr << "crawler stats: these figures may be partial: " << reason << '\n';
    }
  }
  return 0;
}

// The number of entries of `key` whatever its type (a priority queue is a sorted set, fifo and
// lifo are lists, start URLs a list or a set); for a queue that is not there, the count a host
// frontier keeps beside it (KEYS[2], <queue>:count), if any.
constexpr const char* size_script = R"lua(
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' and KEYS[2] and redis.call('TYPE', KEYS[2]).ok == 'string' then
  return tonumber(redis.call('GET', KEYS[2])) or 0
end
if kind == 'zset' then return redis.call('ZCARD', KEYS[1]) end
if kind == 'list' then return redis.call('LLEN', KEYS[1]) end
if kind == 'set' then return redis.call('SCARD', KEYS[1]) end
if kind == 'hash' then return redis.call('HLEN', KEYS[1]) end
return 0
)lua";

// Per worker, the leases it holds in a shard and when the last of them expires (ms on Redis's
// clock): {worker, count, deadline, ...}. Counted in Redis: the leases' entries stay there.
constexpr const char* leases_by_worker_script = R"lua(
local by_worker, order = {}, {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local owner = string.match(all[i + 1], '^([^|]*)|')
  if owner then
    local due = tonumber(redis.call('ZSCORE', KEYS[2], all[i])) or 0
    local held = by_worker[owner]
    if not held then
      held = {0, 0}
      by_worker[owner] = held
      order[#order + 1] = owner
    end
    held[1] = held[1] + 1
    held[2] = math.max(held[2], due)
  end
end
local out = {}
for _, owner in ipairs(order) do
  out[#out + 1] = owner
  out[#out + 1] = by_worker[owner][1]
  out[#out + 1] = by_worker[owner][2]
end
return out
)lua";

// The leases each worker holds over the fleet's shards: how many, and when the last one expires
// (ms on Redis's clock), for a dead worker's line.
struct held_leases {
  long long count = 0;
  double last_deadline_ms = 0;
};

std::map<std::string, held_leases> leases_by_worker(redis::client& client,
                                                    const std::vector<std::string>& shards) {
  std::vector<redis::command> looks;
  for (const auto& key : shards) {
    looks.push_back({"EVAL", leases_by_worker_script, "2", key + ":leased", key + ":deadlines"});
  }
  std::map<std::string, held_leases> held;
  for (const auto& reply : client.async_pipeline(std::move(looks), asio::use_future).get()) {
    if (reply.is_error()) {
      throw std::runtime_error("counting the fleet's leases at " + client.where().address() +
                               ": " + reply.str);
    }
    for (std::size_t i = 0; i + 2 < reply.elements.size(); i += 3) {
      auto& worker = held[reply.elements[i].str];
      worker.count += reply.elements[i + 1].integer;
      worker.last_deadline_ms =
          std::max(worker.last_deadline_ms, double(reply.elements[i + 2].integer));
    }
  }
  return held;
}

// `metrics`: the fleet's summed stats and its gauges in Prometheus' text format, instead of the
// screen.
int print_status(const std::string& spider, const std::vector<std::string>& overrides,
                 bool metrics) {
  auto settings = fleet_settings(overrides);
  redis_session session(settings);
  auto& client = session.client();
  auto named = key_spider_name(settings, spider);
  auto key_of = [&](const char* setting) {
    return spider_key(settings.get_string(setting), named);
  };
  auto queue = key_of("SCHEDULER_QUEUE_KEY");
  auto replies =
      client
          .async_pipeline(
              {{"HGETALL", named + ":workers"},
               {"EVAL", size_script, "2", queue, queue + ":count"},
               {"HLEN", queue + ":leased"},
               {"EVAL", size_script, "1", key_of("REDIS_START_URLS_KEY")},
               {"HMGET", named + ":stats", "response_received_count", "item_scraped_count"},
               {"TIME"},
               {"LLEN", queue + ":dead"},
               {"LLEN", queue + ":bad"},
               {"LLEN", key_of("REDIS_START_URLS_KEY") + ":bad"},
               {"GET", queue + ":epoch"},
               {"LRANGE", queue + ":bad", "0", "2"},
               {"HGETALL", named + ":stats"}},
              asio::use_future)
          .get();
  for (const auto& reply : replies) {
    if (reply.is_error()) {
      throw std::runtime_error("reading the fleet at " + client.where().address() + ": " +
                               reply.str);
    }
  }
  auto shards = fleet_queue_keys(settings, spider, client);
  if (shards.size() > 1) {
    // The figures of a fleet in shards are their sums; its epoch, shard 0's.
    std::vector<redis::command> looks;
    for (const auto& key : shards) {
      looks.push_back({"EVAL", size_script, "2", key, key + ":count"});
      looks.push_back({"HLEN", key + ":leased"});
      looks.push_back({"LLEN", key + ":dead"});
      looks.push_back({"LLEN", key + ":bad"});
    }
    looks.push_back({"GET", shards[0] + ":epoch"});
    auto sums = client.async_pipeline(std::move(looks), asio::use_future).get();
    for (const auto& reply : sums) {
      if (reply.is_error()) {
        throw std::runtime_error("reading the fleet's shards at " + client.where().address() +
                                 ": " + reply.str);
      }
    }
    replies[1].integer = replies[2].integer = replies[6].integer = 0;
    for (std::size_t i = 0; i < shards.size(); ++i) {
      replies[1].integer += sums[4 * i].integer;
      replies[2].integer += sums[4 * i + 1].integer;
      replies[6].integer += sums[4 * i + 2].integer;
      replies[7].integer += sums[4 * i + 3].integer;
    }
    replies[9] = sums.back();
    queue = shards[0] + " ... " + shards.back();
  }
  auto workers = worker_lines(replies[0], seconds_of(replies[5]));
  // A count another program overwrote is shown as it is, not read as a number.
  auto number = [](const redis::reply& reply) {
    if (reply.type != redis::reply::kind::string) return std::string("0");
    if (!reply.str.empty() && reply.str.find_first_not_of("-0123456789") == std::string::npos) {
      return reply.str;
    }
    return quoted_for_log(reply.str, 40) + " (not a count)";
  };
  if (metrics) {
    auto live = std::count_if(workers.begin(), workers.end(),
                              [](const auto& line) { return line.readable && line.live; });
    std::cout << prometheus_text(
        stats_of(replies[11]), spider,
        {{"fleet_workers_alive", "Workers whose heartbeat is recent", double(live)},
         {"fleet_queued_requests", "Requests in the fleet's queue", double(replies[1].integer)},
         {"fleet_leased_requests", "Requests leased to workers (in flight)",
          double(replies[2].integer)},
         {"fleet_start_urls_waiting", "Start URLs not yet taken", double(replies[3].integer)},
         {"fleet_dead_letters", "Requests in <queue>:dead", double(replies[6].integer)},
         {"fleet_set_aside", "Records in <queue>:bad and the start URLs' :bad",
          double(replies[7].integer + replies[8].integer)}});
    return 0;
  }
  std::cout << "Fleet \"" << spider << "\" at " << client.where().address() << "\n";
  std::size_t alive = 0;
  double rate = 0;
  std::string lines;
  auto held = leases_by_worker(client, shards);
  double now = seconds_of(replies[5]);
  for (const auto& line_of : workers) {
    if (!line_of.readable) continue;
    const auto& [id, worker, heartbeat_age, live, readable] = line_of;
    // A line is input: a field of another type reads as 0 rather than stopping the command.
    auto field = [&record = line_of.record](const char* name) {
      auto found = record.find(name);
      return found != record.end() && found->is_number() ? found->get<double>() : 0.0;
    };
    auto pages = std::int64_t(field("pages"));
    double up = field("heartbeat") - field("started");
    if (live) {
      ++alive;
      if (up > 0) rate += double(pages) / up;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "  %-36s %s  up %6.0f s  pages %8lld  items %8lld  in flight %4lld  "
                  "heartbeat %.0f s ago",
                  quoted_for_log(id, 36).c_str(), live ? "alive" : "DEAD ", up,
                  static_cast<long long>(pages), static_cast<long long>(field("items")),
                  static_cast<long long>(field("in_flight")), heartbeat_age);
    lines += line;
    if (live) {
      std::snprintf(line, sizeof line, "  %.1f pages/s", up > 0 ? double(pages) / up : 0.0);
      lines += line;
    } else if (auto leases = held.find(id); leases != held.end()) {
      // What a dead worker held waits for its leases: the live ones take it when they expire.
      double back_in = leases->second.last_deadline_ms / 1000 - now;
      std::snprintf(line, sizeof line, "  holds %lld leases: ", leases->second.count);
      lines += line;
      if (back_in > 0) {
        std::snprintf(line, sizeof line, "back in the queue in %.0f s", std::ceil(back_in));
        lines += line;
      } else {
        lines += "expired, back in the queue at the next take";
      }
    }
    lines += '\n';
  }
  std::cout << "workers: " << alive << " alive\n" << lines;
  std::cout << "queued: " << replies[1].integer << "  in flight (leased): " << replies[2].integer
            << "  start URLs waiting: " << replies[3].integer << "\n";
  std::cout << "pages: " << number(replies[4].elements[0])
            << "  items: " << number(replies[4].elements[1]) << "  (as of the last heartbeats)\n";
  char line[128];
  std::snprintf(line, sizeof line, "pages/s: %.1f (live workers, each since it started)\n", rate);
  std::cout << line;
  std::cout << "dead letters: " << replies[6].integer << " in " << queue << ":dead"
            << (replies[6].integer ? " (`crawler requeue " + spider + "` puts them back)" : "")
            << "  set aside: " << replies[7].integer << " in " << queue << ":bad, "
            << replies[8].integer << " in " << key_of("REDIS_START_URLS_KEY") << ":bad\n";
  // The first few, so an operator sees why without redis-cli.
  for (const auto& stored : replies[10].elements) {
    auto record = redis::decode_set_aside(stored.str);
    auto reason = record ? record->header.value("reason", std::string()) : std::string();
    std::cout << "  set aside: "
              << (record
                      ? quoted_for_log(reason, 200) + " (" + quoted_for_log(record->value, 60) + ")"
                      : "a record no worker wrote: " + quoted_for_log(stored.str, 60))
              << '\n';
  }
  if (replies[7].integer > 0) {
    std::cout << "  (`crawler requeue " << spider << " --bad` puts them back once fixed)\n";
  }
  for (const auto& reason : partial_reasons(workers, replies[9], queue + ":epoch")) {
    std::cout << "figures may be partial: " << reason << '\n';
  }
  return 0;
}

// `crawler requeue NAME [--bad]`: the dead letters (or the set-aside entries) back where they
// were, byte for byte, once what stopped them is dealt with: the page that killed its workers, a
// missing callback, the serializer setting.
int requeue(const std::string& spider, const std::vector<std::string>& overrides, bool bad) {
  auto settings = fleet_settings(overrides);
  redis_session session(settings);
  auto named = key_spider_name(settings, spider);
  auto queue_key = spider_key(settings.get_string("SCHEDULER_QUEUE_KEY"), named);
  auto shard_keys = fleet_queue_keys(settings, spider, session.client());
  // The fleet's layout is what Redis holds: a host frontier's keys make it one, whatever
  // SCHEDULER_QUEUE_CLASS this command was given.
  auto order = redis_queue_order_from(settings);
  for (const auto& key : shard_keys) {
    auto frontier = session.client()
                        .async_command({"EXISTS", key + ":hosts", key + ":busy", key + ":count",
                                        key + ":inflight"},
                                       asio::use_future)
                        .get();
    if (frontier.integer > 0) order = "host";
  }
  auto queue_at = [&](const std::string& key) {
    return redis_queue(
        session.shared_client(),
        {.key = key,
         .order = order,
         .form = redis_queue_form_from(settings),
         .worker = "crawler-requeue",
         .start_urls_key = spider_key(settings.get_string("REDIS_START_URLS_KEY"), named),
         .start_urls_type = start_urls_type_from(settings)});
  };
  // Each shard's lists; the start URLs' :bad through the fleet's own queue key, which shares
  // the start key's hash slot on a cluster.
  std::vector<std::pair<std::string, set_aside_list>> lists;
  for (const auto& key : shard_keys) {
    lists.emplace_back(key, bad ? set_aside_list::bad : set_aside_list::dead);
  }
  if (bad) {
    if (shard_keys.size() > 1) lists.emplace_back(queue_key, set_aside_list::bad);
    lists.emplace_back(queue_key, set_aside_list::start_bad);
  }
  std::size_t requeued = 0;
  std::vector<std::string> unreadable;
  for (const auto& [key, from] : lists) {
    auto queue = queue_at(key);
    std::size_t left = 0;  // at the head of this list: records that are not entries
    for (;;) {
      std::promise<requeue_result> answer;
      queue.async_requeue(from, left, entries_per_round_trip,
                          [&](std::exception_ptr error, requeue_result result) {
                            if (error) return answer.set_exception(error);
                            answer.set_value(std::move(result));
                          });
      auto result = answer.get_future().get();
      requeued += result.requeued;
      left += result.unreadable.size();
      unreadable.insert(unreadable.end(), result.unreadable.begin(), result.unreadable.end());
      if (result.requeued == 0 && result.unreadable.empty()) break;
    }
  }
  std::cout << "Put " << requeued << (bad ? " set-aside entries" : " dead letters")
            << " back where they were\n";
  if (unreadable.empty()) return 0;
  std::cout << "Left " << unreadable.size() << " records of " << queue_key
            << (shard_keys.size() > 1 ? " (and its shards')" : "")
            << (bad ? ":bad and its start URLs' :bad" : ":dead")
            << " that are not entries of the queue or its start URLs:\n";
  for (const auto& record : unreadable) std::cout << "  " << record << '\n';
  return 1;
}

// `crawler NAME SPIDER [-s KEY=VALUE]...`: a command that reads a fleet and prints it.
void add_fleet_view(CLI::App& app, int& exit_status, const std::string& name,
                    const std::string& description,
                    int (*print)(const std::string&, const std::vector<std::string>&)) {
  auto spider = std::make_shared<std::string>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  CLI::App* command = app.add_subcommand(name, description);
  command->add_option("spider", *spider, "the spider's name, as in its Redis keys")->required();
  command->add_option("-s,--set", *overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([spider, overrides, &exit_status, name, print] {
    exit_status = run_command(name, [&] { return print(*spider, *overrides); });
  });
}

}  // namespace

void add_status_command(CLI::App& app, int& exit_status) {
  struct options {
    std::string spider;
    std::vector<std::string> overrides;
    bool metrics = false;
  };
  auto given = std::make_shared<options>();
  CLI::App* command = app.add_subcommand(
      "status", "One screen on a fleet: workers alive, queued, in flight, pages, items, pages/s");
  command->add_option("spider", given->spider, "the spider's name, as in its Redis keys")
      ->required();
  command->add_flag("--metrics", given->metrics,
                    "print the fleet's summed stats and gauges in Prometheus' text format");
  command->add_option("-s,--set", given->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([given, &exit_status] {
    exit_status = run_command(
        "status", [&] { return print_status(given->spider, given->overrides, given->metrics); });
  });
}

void add_requeue_command(CLI::App& app, int& exit_status) {
  struct options {
    std::string spider;
    std::vector<std::string> overrides;
    bool bad = false;
  };
  auto given = std::make_shared<options>();
  CLI::App* command = app.add_subcommand(
      "requeue",
      "Put a fleet's dead letters (<queue>:dead: requests whose workers kept dying) back in its "
      "queue; with --bad, what workers set aside (<queue>:bad) instead");
  command->add_option("spider", given->spider, "the spider's name, as in its Redis keys")
      ->required();
  command->add_flag("--bad", given->bad,
                    "put back <queue>:bad's entries and start URLs, byte for byte");
  command->add_option("-s,--set", given->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([given, &exit_status] {
    exit_status = run_command("requeue",
                              [&] { return requeue(given->spider, given->overrides, given->bad); });
  });
}

void add_stats_command(CLI::App& app, int& exit_status) {
  add_fleet_view(app, exit_status, "stats", "Print a fleet's summed stats (<spider>:stats) as JSON",
                 print_stats);
}

void add_push_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<push_options>();
  CLI::App* command = app.add_subcommand(
      "push", "Push start URLs (or JSON requests) for a fleet's workers to REDIS_START_URLS_KEY");
  command->add_option("spider", options->spider, "the spider's name, as in its Redis keys")
      ->required();
  command->add_option("urls", options->urls, "URLs or JSON requests; - reads them, one per line")
      ->required();
  // One value per -s: `-s K=V URL` leaves URL to the positional arguments.
  command->add_option("-s,--set", options->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([options, &exit_status] {
    exit_status = run_command("push", [&] { return run(*options); });
  });
}

}  // namespace crawler::cli
