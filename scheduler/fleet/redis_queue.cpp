#include "scheduler/fleet/redis_queue.h"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <boost/asio/post.hpp>
#include <cmath>
#include <random>

#include "config/settings.h"
#include "redis/reply_error.h"
#include "redis/set_aside.h"
#include "request/python_json.h"
#include "scheduler/fleet/detail/fleet_lua.h"
#include "scheduler/fleet/detail/known_fingerprints.h"
#include "scheduler/fleet/pickle.h"
#include "scheduler/fleet/scrapy_request.h"
#include "scheduler/fleet/start_request.h"
#include "scheduler/shared_request.h"

namespace crawler {
namespace {

// A reply that must not be an error; the message names the script and server, and says whether
// trying again can help (redis/reply_error.h).
const redis::reply& expect(const redis::reply& answer, std::string_view what,
                           const redis::client& client) {
  if (answer.is_error()) {
    throw redis::reply_error(
        "redis queue at " + client.where().address() + ": " + std::string(what) + " failed",
        answer.str);
  }
  return answer;
}

std::string sha1_hex(std::string_view text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : digest) {
    out += hex[byte >> 4];
    out += hex[byte & 15];
  }
  return out;
}

}  // namespace

std::string redis_queue_order_from(const settings& settings) {
  auto name = settings.get_string("SCHEDULER_QUEUE_CLASS");
  static constexpr std::pair<std::string_view, std::string_view> orders[] = {
      {"priority", "priority"},
      {"fifo", "fifo"},
      {"lifo", "lifo"},
      {"host", "host"},
      {"scrapy_redis.queue.PriorityQueue", "priority"},
      {"scrapy_redis.queue.FifoQueue", "fifo"},
      {"scrapy_redis.queue.LifoQueue", "lifo"},
      {"scrapy_redis.queue.SpiderPriorityQueue", "priority"},
      {"scrapy_redis.queue.SpiderQueue", "fifo"},
      {"scrapy_redis.queue.SpiderStack", "lifo"},
  };
  for (const auto& [given, order] : orders) {
    if (name == given) return std::string(order);
  }
  throw settings_error("SCHEDULER_QUEUE_CLASS: unknown queue \"" + name +
                       "\"; valid values are priority, fifo, lifo, host (or scrapy-redis's "
                       "scrapy_redis.queue.PriorityQueue, FifoQueue, LifoQueue)");
}

queue_entry_form redis_queue_form_from(const settings& settings) {
  auto name = settings.get_string("SCHEDULER_SERIALIZER");
  if (!settings.has("SCHEDULER_SERIALIZER")) {
    return settings.get_string("SCHEDULER") == "scrapy_redis.scheduler.Scheduler"
               ? queue_entry_form::pickle
               : queue_entry_form::json;
  }
  if (name == "json") return queue_entry_form::json;
  if (name == "scrapy_redis.picklecompat") return queue_entry_form::pickle;
  throw settings_error(
      "SCHEDULER_SERIALIZER: \"" + name +
      "\" is a Python module this crawler cannot run; it reads and writes \"json\" (its own "
      "form) and \"scrapy_redis.picklecompat\" (scrapy-redis's default, to share its queue)");
}

std::string start_urls_type_from(const settings& settings) {
  bool as_set = settings.get_bool("REDIS_START_URLS_AS_SET");
  bool as_zset = settings.get_bool("REDIS_START_URLS_AS_ZSET");
  if (as_set && as_zset) {
    throw settings_error(
        "REDIS_START_URLS_AS_SET and REDIS_START_URLS_AS_ZSET: the start URLs are a set or a "
        "sorted set, not both");
  }
  return as_zset ? "zset" : as_set ? "set" : "list";
}

std::string delivery_id(std::string_view entry) {
  auto bar = entry.find('|');
  if (bar != std::string_view::npos && bar > 0 &&
      entry.substr(0, bar).find_first_not_of("0123456789") == std::string_view::npos) {
    return std::string(entry.substr(0, bar));
  }
  return sha1_hex(entry);
}

redis_queue::redis_queue(std::shared_ptr<redis::client> client, redis_queue_options options)
    : client_(std::move(client)),
      options_(std::move(options)),
      leased_key_(options_.key + ":leased"),
      deadlines_key_(options_.key + ":deadlines"),
      seq_key_(options_.key + ":seq"),
      bad_key_(options_.key + ":bad"),
      deliveries_key_(options_.key + ":deliveries"),
      dead_key_(options_.key + ":dead"),
      settled_key_(options_.key + ":settled"),
      epoch_key_(options_.key + ":epoch"),
      items_key_(options_.items_key.empty() ? options_.key + ":items" : options_.items_key),
      stats_key_(options_.stats_key.empty() ? options_.key + ":stats" : options_.stats_key),
      known_(std::make_unique<detail::known_fingerprints>()) {
  if (options_.order != "priority" && options_.order != "fifo" && options_.order != "lifo" &&
      options_.order != "host") {
    throw settings_error("SCHEDULER_QUEUE_CLASS: unknown queue \"" + options_.order +
                         "\"; valid values are priority, fifo, lifo, host");
  }
  if (options_.order == "host") {
    if (options_.form == queue_entry_form::pickle) {
      throw settings_error(
          "SCHEDULER_QUEUE_CLASS: \"host\" is this crawler's own layout, which scrapy-redis's "
          "workers cannot read: a queue shared with them (SCHEDULER_SERIALIZER = "
          "\"scrapy_redis.picklecompat\") is priority, fifo or lifo");
    }
    host_prefix_ = options_.key + ":host:";
    host_keys_ = {options_.key + ":hosts",     options_.key + ":busy",
                  options_.key + ":inflight",  options_.key + ":delays",
                  options_.key + ":addresses", options_.key + ":address_due",
                  options_.key + ":parked",    options_.key + ":count"};
  }
  if (options_.worker.empty() || options_.worker.find('|') != std::string::npos) {
    throw std::invalid_argument("redis_queue: a worker id is required and holds no '|'");
  }
  if (options_.signer && options_.form == queue_entry_form::pickle) {
    throw settings_error(
        "SCHEDULER_SIGNING_KEY: scrapy-redis's workers neither sign nor check entries, so a "
        "queue in its form (SCHEDULER_SERIALIZER = \"scrapy_redis.picklecompat\") cannot be "
        "signed; a signed fleet is ours alone (SCHEDULER_SERIALIZER = \"json\")");
  }
  // An entry is signed for the key it sits in: copied into another queue, or from the start
  // URLs into a queue, it is forged there.
  if (options_.signer) {
    if (!options_.start_urls_key.empty()) {
      start_signer_ = options_.signer->bound_to(options_.start_urls_key);
    }
    options_.signer = options_.signer->bound_to(options_.key);
  }
}

redis_queue::~redis_queue() = default;
redis_queue::redis_queue(redis_queue&&) noexcept = default;
redis_queue& redis_queue::operator=(redis_queue&&) noexcept = default;

void redis_queue::forget_known() {
  known_ = std::make_unique<detail::known_fingerprints>();
}

std::string redis_queue::entry_body(const request& request, std::uint64_t number) const {
  if (options_.form == queue_entry_form::pickle) {
    return pickle::write(scrapy_dict_of(options_.secrets.writable(request)));
  }
  auto body = options_.secrets.to_json(request).dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace);
  if (!options_.signer) return body;
  if (number == 0) throw std::logic_error("redis_queue: a signed entry without its number");
  auto id = fmt::format("{:016d}", number);
  return id + '|' + options_.signer->sign(body, id);
}

std::optional<std::uint64_t> redis_queue::claim_numbers(std::size_t count) {
  std::lock_guard lock(numbers_->mutex);
  if (numbers_->last + 1 - numbers_->next < count) return std::nullopt;
  auto first = numbers_->next;
  numbers_->next += count;
  return first;
}

void redis_queue::unclaim_numbers(std::uint64_t from, std::uint64_t to) {
  std::lock_guard lock(numbers_->mutex);
  if (numbers_->next == to) numbers_->next = from;  // none claimed since
}

// Blocks of 1,024 at least: a round trip to Redis every thousand new entries, and a block's
// numbers are given in order, so <queue>:settled stays dense.
void redis_queue::take_numbers(std::size_t count, std::function<void(std::exception_ptr)> done) {
  auto block = std::max<std::size_t>(count, 1024);
  run_script(detail::lua::queue_reserve, {seq_key_, settled_key_, bad_key_},
             {std::to_string(block)},
             [this, block, done = std::move(done)](std::exception_ptr error, redis::reply answer) {
               if (!error && (answer.type != redis::reply::kind::integer ||
                              answer.integer < static_cast<long long>(block))) {
                 error = std::make_exception_ptr(
                     std::runtime_error("redis queue: taking entry numbers from " + seq_key_ +
                                        " answered " + answer.describe()));
               }
               if (!error) {
                 std::lock_guard lock(numbers_->mutex);
                 numbers_->last = std::uint64_t(answer.integer);
                 numbers_->next = numbers_->last + 1 - block;
               }
               done(error);
             });
}

// A pickle starts with its PROTO opcode (protocol 2 and later: scrapy-redis writes 5); our entries
// start with their 16-digit id and '|'.
bool redis_queue::in_other_form(std::string_view entry) const {
  if (options_.form == queue_entry_form::json) return entry.starts_with('\x80');
  return entry.size() > 16 && entry[16] == '|' &&
         entry.substr(0, 16).find_first_not_of("0123456789") == std::string_view::npos;
}

std::string redis_queue::mismatch_message(std::string_view entry, bool put_back) const {
  bool pickled = options_.form == queue_entry_form::json;
  return options_.key + " holds " +
         (pickled
              ? "a request pickled by scrapy-redis (an entry of " + std::to_string(entry.size()) +
                    " bytes that starts with pickle's opcode \\x80), and this worker reads "
                    "and writes its own JSON form "
                    "(SCHEDULER_SERIALIZER = \"json\")"
              : "a request in this crawler's JSON form (" + quoted_for_log(entry, 60) +
                    "), and this worker reads and writes scrapy-redis's pickled form "
                    "(SCHEDULER_SERIALIZER = \"scrapy_redis.picklecompat\")") +
         (put_back ? ". It was left where it was"
                   : ". It was set aside: most of what this worker took is in its own form") +
         ". To share the queue with scrapy-redis's workers, set "
         "SCHEDULER_SERIALIZER = \"scrapy_redis.picklecompat\" on every C++ worker (with "
         "SCHEDULER_QUEUE_CLASS as the Python side has it); to keep two fleets apart, give them "
         "different SCHEDULER_QUEUE_KEYs";
}

// With a key, only the fleet's own entries run, with the origin their writer gave them; without
// one, every entry is a shared request. Either way only over http(s).
request redis_queue::read_entry(std::string_view entry, const std::string& id) const {
  auto where = options_.key + " entry " + id;
  request taken;
  if (options_.form == queue_entry_form::pickle) {
    pickle::value dict;
    try {
      dict = pickle::read(entry);
    } catch (const pickle::error& refused) {
      throw std::invalid_argument(where + ": " + refused.what());
    }
    taken = request_from_scrapy_dict(dict, where);
    taken.origin = request_origin::shared;
  } else {
    auto bar = entry.find('|');
    if (bar == std::string_view::npos) {
      throw std::invalid_argument(where + ": no '|' after the id");
    }
    auto body = entry.substr(bar + 1);
    std::string signed_body;
    bool signed_entry = false;
    if (options_.signer) {
      // The number is signed with the entry: a copy renumbered is forged.
      switch (options_.signer->check(body, &signed_body, entry.substr(0, bar))) {
        case entry_signer::verdict::valid:
          signed_entry = true;
          body = signed_body;
          break;
        case entry_signer::verdict::missing:
          throw std::invalid_argument(
              where +
              ": not signed, and SCHEDULER_SIGNING_KEY is set: the fleet's own entries "
              "are signed");
        case entry_signer::verdict::forged:
          throw std::invalid_argument(
              where +
              ": forged signature: its \"hmac\" was not written with this fleet's "
              "SCHEDULER_SIGNING_KEY");
      }
    }
    auto json = nlohmann::json::parse(body);
    taken = request::from_json(json, where);
    bool shared = !signed_entry || json.value("origin", "") == "shared";
    taken.origin = shared ? request_origin::shared : request_origin::local;
  }
  if (auto problem = shared_request_problem(taken, options_.allowed_fields); !problem.empty()) {
    throw std::invalid_argument(problem);
  }
  return taken;
}

// Scripts go by their SHA-1 (EVALSHA): a few kilobytes less to send and hash per page. A server
// that does not have one yet (new, restarted, SCRIPT FLUSH) answers NOSCRIPT, and the same call
// goes again with the script's text, which also caches it.
void redis_queue::run_script(const char* body, std::vector<std::string> keys,
                             std::vector<std::string> args,
                             std::function<void(std::exception_ptr, redis::reply)> done,
                             const dedup::redis_marking* marking) {
  std::string types;
  for (const auto& key : keys) {
    if (!types.empty()) types += ' ';
    types += expected_type(key, marking);
  }
  for (const auto& key : host_keys_) {
    types += ' ';
    types += expected_type(key, marking);
    keys.push_back(key);
  }
  keys.push_back(epoch_key_);
  args.insert(args.begin(), {epoch_, std::move(types),
                             options_.form == queue_entry_form::pickle ? "pickle"
                             : options_.signer                         ? "signed"
                                                                       : "json",
                             host_prefix_, options_.limit_by_address ? "1" : ""});
  // The dupefilter's own step: a script per (transition, backend), cached by Redis as any other.
  // Its text and SHA-1 are made once, and finding them copies nothing: every page's settle runs
  // the same script.
  static const std::string no_mark = "return true";
  const auto& mark = marking ? marking->lua : no_mark;
  auto& script = scripts_[body][mark];
  if (!script.text) {
    auto text = std::string(detail::lua::wrong_type) + redis::lua_set_aside_record +
                detail::lua::remove_start_url + detail::lua::settled +
                "local function mark(key, argument)\n" + mark + "\nend\n" +
                detail::lua::queue_prelude + body;
    script.sha = sha1_hex(text);
    script.text = std::make_shared<const std::string>(std::move(text));
  }
  redis::command command{"EVALSHA", script.sha, std::to_string(keys.size())};
  command.insert(command.end(), std::make_move_iterator(keys.begin()),
                 std::make_move_iterator(keys.end()));
  command.insert(command.end(), std::make_move_iterator(args.begin()),
                 std::make_move_iterator(args.end()));
  // The retry after a NOSCRIPT: the same arguments, with the text in place of the SHA-1 (put in
  // only then: the text is kilobytes long).
  auto retry = command;
  retry[0] = "EVAL";
  // For the answer and for the retry's alike: a Redis restarted empty answers NOSCRIPT first,
  // and the retry's CRAWLER_EPOCH is what says it forgot the fleet.
  auto answered = [this, done = std::move(done)](std::exception_ptr error,
                                                 redis::reply answer) mutable {
    if (!error && answer.is_error() && answer.str.starts_with("CRAWLER_EPOCH ")) {
      error = std::make_exception_ptr(epoch_lost(answer.str.substr(14)));
    }
    done(error, std::move(answer));
  };
  // Weak: the client holds this handler until it answers, so a strong pointer would be a cycle
  // that outlives the crawl when a command is pending at close.
  client_->async_command(
      std::move(command),
      [client = std::weak_ptr(client_), retry = std::move(retry), text = script.text,
       answered = std::move(answered)](std::exception_ptr error, redis::reply answer) mutable {
        if (!error && answer.is_error() && answer.str.starts_with("NOSCRIPT")) {
          if (auto alive = client.lock()) {
            retry[1] = *text;
            return alive->async_command(std::move(retry), std::move(answered));
          }
        }
        answered(error, std::move(answer));
      });
}

std::string redis_queue::expected_type(const std::string& key,
                                       const dedup::redis_marking* marking) const {
  if (marking && key == marking->key) return marking->key_type.empty() ? "-" : marking->key_type;
  // The host frontier keeps nothing under the queue's own name, and each of its scripts declares
  // it. On a Redis Cluster whose slot is moving, Redis answers a script TRYAGAIN while one of its
  // declared keys is missing, and so never runs one there: a host's queue is a key the script
  // reaches by name, undeclared, and one already on the other master would fail the script
  // halfway, after its first writes. Something under that name must stop the script, not let it
  // run mid-move.
  if (key == options_.key) {
    if (options_.order == "host") return "none";
    return options_.order == "priority" ? "zset" : "list";
  }
  if (key == leased_key_ || key == deliveries_key_ || key == settled_key_ || key == stats_key_)
    return "hash";
  if (key == deadlines_key_) return "zset";
  if (key == seq_key_) return "string";
  if (key == bad_key_ || key == dead_key_ || key == items_key_) return "list";
  if (key == options_.start_urls_key) return options_.start_urls_type;
  if (key == options_.start_urls_key + ":bad") return "list";
  if (key == options_.start_urls_key + ":settled") return "hash";
  if (!host_keys_.empty()) {
    if (key == host_keys_[0] || key == host_keys_[1] || key == host_keys_[6]) return "zset";
    if (key == host_keys_[2] || key == host_keys_[3] || key == host_keys_[4] ||
        key == host_keys_[5]) {
      return "hash";
    }
    if (key == host_keys_[7]) return "string";
  }
  return "-";
}

fleet_state_lost redis_queue::epoch_lost(std::string_view found) const {
  return fleet_state_lost("the fleet's state in Redis at " + client_->where().address() +
                          " is not the one this worker joined (" + epoch_key_ + " " +
                          std::string(found) +
                          "): Redis restarted without persistence, was flushed, evicted keys or "
                          "failed over to a replica that lagged, and the queue, leases and "
                          "dupefilter with it");
}

void redis_queue::async_join_epoch(std::function<void(std::exception_ptr)> done) {
  unsigned char random[8];
  if (RAND_bytes(random, sizeof random) != 1) {
    return done(std::make_exception_ptr(std::runtime_error("no random bytes for the epoch")));
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string candidate;
  for (unsigned char byte : random) {
    candidate += digits[byte >> 4];
    candidate += digits[byte & 15];
  }
  client_->async_pipeline(
      // GETRANGE: an epoch is 16 characters, and a worker reads no more than 256 of whatever
      // another program left there.
      {{"SET", epoch_key_, candidate, "NX"}, {"GETRANGE", epoch_key_, "0", "255"}},
      [this, done = std::move(done)](std::exception_ptr error, std::vector<redis::reply> replies) {
        // A refused write (a Redis past maxmemory) is said as what it is, not as an empty read.
        if (!error && !replies.empty() && replies[0].is_error()) {
          error = std::make_exception_ptr(redis::reply_error(
              "redis queue at " + client_->where().address() + ": could not write " + epoch_key_,
              replies[0].str));
        }
        if (!error && (replies.size() != 2 || replies[1].is_error() || replies[1].str.empty())) {
          error = std::make_exception_ptr(std::runtime_error(
              "redis queue at " + client_->where().address() + ": could not read " + epoch_key_ +
              (replies.size() == 2 ? ": " + replies[1].str : std::string())));
        }
        if (!error) epoch_ = replies[1].str;
        done(error);
      });
}

std::vector<std::string> redis_queue::take_arguments(std::size_t count) const {
  std::vector<std::string> args{options_.order,
                                options_.worker,
                                std::to_string(count),
                                std::to_string(options_.lease.count()),
                                std::to_string(options_.max_entry_size),
                                std::to_string(options_.max_deliveries)};
  if (options_.order == "host") {
    // Redis seeds Lua's math.random the same for every script, so the draw comes from here.
    std::string seed;
    if (options_.randomize_delay) {
      static thread_local std::mt19937 random{std::random_device{}()};
      seed = std::to_string(std::uniform_int_distribution<int>(1, 1 << 30)(random));
    }
    args.insert(args.end(), {std::to_string(options_.host_limit),
                             std::to_string(options_.host_delay.count()), std::move(seed)});
  }
  return args;
}

// Adds to `records` the lease id and the <key>:bad record of an entry not to run.
void redis_queue::set_aside(std::vector<std::string>& records, const std::string& id,
                            std::string_view score, std::string_view host,
                            const std::string& reason, std::string_view entry) {
  if (reasons_logged_ < 5) {
    ++reasons_logged_;
    reasons_.push_back(quoted_for_log(reason, 200));
  }
  nlohmann::json header{{"key", options_.key},
                        {"score", score},
                        {"reason", quoted_for_log(reason, 500)},
                        {"worker", options_.worker}};
  if (options_.order == "host") header["host"] = host;
  records.push_back(id);
  records.push_back(redis::encode_set_aside(header, entry));
}

void redis_queue::async_take(std::size_t count, take_handler done) {
  run_script(
      detail::lua::queue_take,
      {options_.key, leased_key_, deadlines_key_, seq_key_, bad_key_, deliveries_key_, dead_key_,
       settled_key_},
      take_arguments(count),
      [this, done = std::move(done)](std::exception_ptr error, redis::reply answer) {
        std::vector<leased_request> taken;
        // Lease id, then the record that replaces it in <key>:bad, for each entry not to run.
        std::vector<std::string> poisoned;
        // Lease id and entry of each entry in the other form.
        std::vector<std::pair<std::string, std::string>> other_form;
        std::vector<std::string> scores, hosts;  // of those entries
        try {
          if (error) std::rethrow_exception(error);
          expect(answer, "take", *client_);
          if (answer.elements.size() < 6 || answer.elements.size() % 3 != 0 ||
              answer.elements[5].str.size() != (answer.elements.size() - 6) / 3) {
            throw std::runtime_error("redis queue: take answered " + answer.describe());
          }
          const auto& ran_already = answer.elements[5].str;
          reclaimed_ += std::size_t(answer.elements[0].integer);
          bad_ += std::size_t(answer.elements[1].integer);
          dead_ += std::size_t(answer.elements[2].integer);
          queued_ = std::size_t(std::max(0LL, answer.elements[3].integer));
          next_host_due_.reset();
          if (answer.elements[4].integer >= 0) {
            next_host_due_ = std::chrono::milliseconds(answer.elements[4].integer);
          }
          for (std::size_t i = 6; i + 2 < answer.elements.size(); i += 3) {
            const auto& id = answer.elements[i].str;
            // The host frontier's scores are "<score>@<host>".
            std::string_view score = answer.elements[i + 1].str, host;
            if (auto at = score.find('@'); at != std::string_view::npos) {
              host = score.substr(at + 1);
              score = score.substr(0, at);
            }
            const auto& entry = answer.elements[i + 2].str;
            if (in_other_form(entry)) {
              other_form.emplace_back(id, entry);
              scores.emplace_back(score);
              hosts.emplace_back(host);
              continue;
            }
            try {
              auto taken_request = read_entry(entry, id);
              // Only now: a forged entry is refused as forged, whatever its number.
              if (auto ran = ran_already[(i - 6) / 3]; ran != '0') {
                throw std::invalid_argument(
                    options_.key + " entry " + id + ": a copy of entry " +
                    std::string(entry.substr(0, entry.find('|'))) +
                    (ran == '1' ? ", which ran already (it was settled, or is numbered before "
                                  "this crawl began)"
                                : ", which is running now (another lease holds it)") +
                    ": a signed entry runs once");
              }
              if (check_) {
                if (auto reason = check_(taken_request); !reason.empty()) {
                  throw std::invalid_argument(reason);
                }
              }
              taken.push_back({id, std::move(taken_request)});
            } catch (const std::exception& bad) {
              // Never run what does not decode; keep it, with why, for a person to look at.
              ++bad_;
              set_aside(poisoned, id, score, host, bad.what(), entry);
            }
          }
          ours_seen_ += (answer.elements.size() - 6) / 3 - other_form.size();
          other_form_seen_ += other_form.size();
        } catch (...) {
          return done(std::current_exception(), {});
        }
        // Most of what this worker has taken in another form: the settings disagree with the
        // queue's writers, which no record is to blame for. Everything this take leased goes back
        // as it was, and the worker stops until the settings agree. A few such entries among
        // this worker's own are records like any unreadable one: set aside, and the crawl goes on.
        if (!other_form.empty() && other_form_seen_ >= settings_disagree_after &&
            other_form_seen_ > ours_seen_) {
          auto mismatch = mismatch_message(other_form.front().second, true);
          std::vector<std::string> leases;
          for (auto& [id, entry] : other_form) leases.push_back(std::move(id));
          for (auto& leased : taken) leases.push_back(std::move(leased.lease_id));
          taken.clear();
          auto put_back = [this, leases = std::move(leases), mismatch = std::move(mismatch), done](
                              std::exception_ptr error, auto&&...) {
            if (error) return done(error, {});
            async_release(leases, [mismatch, done](std::exception_ptr error, std::size_t) {
              done(error ? error : std::make_exception_ptr(queue_form_mismatch(mismatch)), {});
            });
          };
          if (poisoned.empty()) return put_back(nullptr);
          return set_aside_taken(std::move(poisoned), std::move(put_back));
        }
        for (std::size_t i = 0; i < other_form.size(); ++i) {
          const auto& [id, entry] = other_form[i];
          ++bad_;
          set_aside(poisoned, id, scores[i], hosts[i], mismatch_message(entry, false), entry);
        }
        if (poisoned.empty()) return done(nullptr, std::move(taken));
        // If this worker dies before the script runs, the lease expires, the entry comes back
        // and is found bad again: nothing runs and nothing is lost.
        set_aside_taken(std::move(poisoned),
                        [done, taken = std::move(taken)](std::exception_ptr error) mutable {
                          done(error, error ? std::vector<leased_request>{} : std::move(taken));
                        });
      });
}

void redis_queue::set_aside_taken(std::vector<std::string> leases_and_records,
                                  std::function<void(std::exception_ptr)> done) {
  std::vector<std::string> args{options_.order, options_.worker};
  args.insert(args.end(), std::make_move_iterator(leases_and_records.begin()),
              std::make_move_iterator(leases_and_records.end()));
  run_script(detail::lua::queue_set_aside,
             {leased_key_, deadlines_key_, deliveries_key_, bad_key_, settled_key_},
             std::move(args),
             [this, done = std::move(done)](std::exception_ptr error, redis::reply answer) {
               try {
                 if (error) std::rethrow_exception(error);
                 expect(answer, "set aside", *client_);
               } catch (...) {
                 return done(std::current_exception());
               }
               done(nullptr);
             });
}

request redis_queue::read_start_url(std::string_view raw) const {
  if (raw.size() > options_.max_entry_size) {
    throw std::invalid_argument("an entry of " + std::to_string(raw.size()) +
                                " bytes, over SCHEDULER_MAX_ENTRY_SIZE (" +
                                std::to_string(options_.max_entry_size) + ")");
  }
  return start_request_from(raw, start_signer_ ? &*start_signer_ : nullptr,
                            options_.allowed_fields);
}

void redis_queue::async_read_start_urls(std::size_t count, start_urls_handler done) {
  static const std::string script = std::string(redis::lua_set_aside_record) +
                                    detail::lua::remove_start_url +
                                    detail::lua::queue_read_start_urls;
  const auto& key = options_.start_urls_key;
  client_->async_command(
      {"EVAL", script, "2", key, key + ":bad", options_.start_urls_type, std::to_string(count),
       std::to_string(options_.max_entry_size)},
      [this, done = std::move(done)](std::exception_ptr error, redis::reply answer) {
        if (!error && (answer.is_error() || answer.elements.empty())) {
          error = std::make_exception_ptr(redis::reply_error(
              "redis queue at " + client_->where().address() + ": reading " +
                  options_.start_urls_key + " failed",
              answer.is_error() ? answer.str : "it answered " + answer.describe()));
        }
        if (error) return done(error, {});
        bad_ += std::size_t(std::max<long long>(0, answer.elements[0].integer));
        std::vector<std::string> urls;
        for (std::size_t i = 1; i < answer.elements.size(); ++i) {
          urls.push_back(std::move(answer.elements[i].str));
        }
        done(nullptr, std::move(urls));
      });
}

void redis_queue::async_feed(std::size_t count, const dedup::redis_marking* marking,
                             dedup::fingerprint_scheme scheme, settle_handler done) {
  async_read_start_urls(count, [this, marking, scheme, done = std::move(done)](
                                   std::exception_ptr error, std::vector<std::string> raw) {
    if (error) return done(error, {});
    queue_start_urls(std::move(raw), marking, scheme, std::move(done));
  });
}

// The feed's second step: the start URLs read, decoded here and queued by a script that
// removes each from the start key in the same step.
void redis_queue::queue_start_urls(std::vector<std::string> raw_urls,
                                   const dedup::redis_marking* marking,
                                   dedup::fingerprint_scheme scheme, settle_handler done) {
  if (raw_urls.empty()) return done(nullptr, {});
  std::uint64_t number = 0, claimed_end = 0;
  if (options_.signer) {
    auto first = claim_numbers(raw_urls.size());
    if (!first) {
      auto count = raw_urls.size();
      return take_numbers(count, [this, raw_urls = std::move(raw_urls), marking, scheme,
                                  done = std::move(done)](std::exception_ptr error) mutable {
        if (error) return done(error, {});
        queue_start_urls(std::move(raw_urls), marking, scheme, std::move(done));
      });
    }
    number = *first;
    claimed_end = number + raw_urls.size();
  }
  std::vector<std::string> args{options_.order, options_.start_urls_type, marking ? "1" : ""};
  for (const auto& raw : raw_urls) {
    std::string body, mark, reason, host, priority = "0", dont_filter = "0", read_number;
    try {
      auto start = read_start_url(raw);
      if (start_signer_) read_number = start_url_number(raw);
      if (marking && !start.dont_filter) mark = marking->argument(fingerprint_of(start, scheme));
      body = entry_body(start, number ? number++ : 0);
      host = pacing_host(start);
      priority = std::to_string(start.priority);
      dont_filter = start.dont_filter ? "1" : "0";
    } catch (const std::exception& bad) {
      body.clear();
      reason = quoted_for_log(bad.what(), 500);
    }
    args.insert(args.end(), {raw, body, priority, dont_filter, mark, reason, host, read_number});
  }
  if (number) unclaim_numbers(number, claimed_end);  // those of start URLs that did not read
  auto filter_key = marking ? marking->key : options_.key;
  run_script(
      detail::lua::queue_feed,
      {options_.start_urls_key, options_.key, seq_key_, filter_key,
       options_.start_urls_key + ":bad", bad_key_, options_.start_urls_key + ":settled"},
      std::move(args),
      [this, done](std::exception_ptr error, redis::reply answer) {
        settle_result result;
        try {
          if (error) std::rethrow_exception(error);
          expect(answer, "feed", *client_);
          if (answer.elements.size() != 3) {
            throw std::runtime_error("redis queue: feed answered " + answer.describe());
          }
          result.queued = std::size_t(answer.elements[0].integer);
          queued_ += result.queued;
          result.duplicates = std::size_t(answer.elements[1].integer);
          bad_ += std::size_t(answer.elements[2].integer);
        } catch (...) {
          return done(std::current_exception(), {});
        }
        done(nullptr, result);
      },
      marking);
}

void redis_queue::async_renew(const std::vector<std::string>& lease_ids, renew_handler done) {
  std::vector<std::string> args{options_.worker, std::to_string(options_.lease.count())};
  args.insert(args.end(), lease_ids.begin(), lease_ids.end());
  run_script(detail::lua::queue_renew, {leased_key_, deadlines_key_}, std::move(args),
             [this, done = std::move(done)](std::exception_ptr error, redis::reply answer) {
               std::vector<std::string> lost;
               try {
                 if (error) std::rethrow_exception(error);
                 for (auto& id : expect(answer, "renew", *client_).elements) {
                   lost.push_back(std::move(id.str));
                 }
               } catch (...) {
                 return done(std::current_exception(), {});
               }
               done(nullptr, std::move(lost));
             });
}

void redis_queue::async_requeue(set_aside_list from, std::size_t skip, std::size_t count,
                                requeue_handler done) {
  auto from_key = from == set_aside_list::dead  ? dead_key_
                  : from == set_aside_list::bad ? bad_key_
                                                : options_.start_urls_key + ":bad";
  client_->async_command(
      {"LRANGE", from_key, std::to_string(skip), std::to_string(skip + count - 1)},
      [this, from_key, done = std::move(done)](std::exception_ptr error, redis::reply answer) {
        if (!error && answer.is_error()) {
          error = std::make_exception_ptr(std::runtime_error(
              "reading " + from_key + " at " + client_->where().address() + ": " + answer.str));
        }
        if (error) return done(error, {});
        // A record is input like any other: one that is not what a worker writes, or whose value
        // was not an entry of the queue or its start URLs (a lease record, a stats field), stays
        // where it is, and is reported.
        requeue_result result;
        std::vector<std::string> args{options_.order, options_.start_urls_type};
        for (const auto& element : answer.elements) {
          auto record = redis::decode_set_aside(element.str);
          std::string key, host, score = "0";
          if (record) {
            if (auto found = record->header.find("host");
                found != record->header.end() && found->is_string()) {
              host = *found;
            }
            auto found = record->header.find("key");
            if (found != record->header.end() && found->is_string()) key = *found;
            found = record->header.find("score");
            if (found != record->header.end() && found->is_string())
              score = *found;
            else if (found != record->header.end())
              score.clear();
          }
          bool to_queue = record && key == options_.key && !record->header.contains("field");
          bool to_start =
              record && !options_.start_urls_key.empty() && key == options_.start_urls_key;
          if ((!to_queue && !to_start) || score.empty() ||
              score.find_first_not_of("0123456789.-e+") != std::string::npos) {
            result.unreadable.push_back(quoted_for_log(element.str, 200));
            continue;
          }
          args.insert(args.end(),
                      {element.str, to_start ? "start" : "queue", record->value, score, host});
        }
        if (args.size() == 2) return done(nullptr, std::move(result));
        run_script(
            detail::lua::queue_requeue,
            {options_.key, from_key, deliveries_key_,
             options_.start_urls_key.empty() ? options_.key + ":start" : options_.start_urls_key},
            std::move(args),
            [this, done, result](std::exception_ptr error, redis::reply answer) mutable {
              try {
                if (error) std::rethrow_exception(error);
                result.requeued = std::size_t(expect(answer, "requeue", *client_).integer);
              } catch (...) {
                return done(std::current_exception(), {});
              }
              done(nullptr, std::move(result));
            });
      });
}

void redis_queue::async_release(const std::vector<std::string>& lease_ids, count_handler done) {
  std::vector<std::string> args{options_.order, options_.worker};
  args.insert(args.end(), lease_ids.begin(), lease_ids.end());
  run_script(detail::lua::queue_release,
             {options_.key, leased_key_, deadlines_key_, deliveries_key_, settled_key_},
             std::move(args),
             [this, done = std::move(done)](std::exception_ptr error, redis::reply answer) {
               try {
                 if (error) std::rethrow_exception(error);
                 done(nullptr, std::size_t(expect(answer, "release", *client_).integer));
               } catch (...) {
                 done(std::current_exception(), 0);
               }
             });
}

void redis_queue::async_push(const std::vector<request>& requests,
                             const dedup::redis_marking* marking, dedup::fingerprint_scheme scheme,
                             settle_handler done) {
  async_settle("", requests, {}, marking, scheme, std::move(done));
}

void redis_queue::async_settle(const std::string& lease_id, const std::vector<request>& children,
                               const std::vector<crawler::item>& items,
                               const dedup::redis_marking* marking,
                               dedup::fingerprint_scheme scheme, settle_handler done,
                               const host_pace& pace, const page_counts& counts) {
  // A signed fleet numbers its entries: as many numbers as children are claimed, and those left
  // when the known duplicates are skipped are given back.
  std::uint64_t number = 0, claimed_end = 0;
  if (options_.signer && !children.empty()) {
    auto first = claim_numbers(children.size());
    if (!first) {
      return take_numbers(children.size(), [this, lease_id, children, items, marking, scheme,
                                            done = std::move(done), pace,
                                            counts](std::exception_ptr error) mutable {
        if (error) return done(error, {});
        async_settle(lease_id, children, items, marking, scheme, std::move(done), pace, counts);
      });
    }
    number = *first;
    claimed_end = number + children.size();
  }
  auto in_ms = [](double seconds) { return std::to_string(std::llround(seconds * 1000)); };
  // This page's part of the settle script's arguments (see lua/queue_settle.lua).
  std::vector<std::string> args{lease_id,
                                "0",
                                std::to_string(items.size()),
                                pace.delay ? in_ms(*pace.delay) : "",
                                pace.hold > 0 ? in_ms(pace.hold) : "",
                                pace.address,
                                std::to_string(counts.responses),
                                std::to_string(counts.items)};
  std::size_t count = 0;
  std::vector<std::size_t> sent, known;  // positions in `children`
  std::vector<std::pair<std::size_t, std::string>> refused;
  std::vector<dedup::fingerprint> marked;  // what the dupefilter holds once this settle is stored
  if (marking && marking->key != known_key_) {
    forget_known();
    known_key_ = marking->key;
  }
  // Every fingerprint first, each one's slot in known_ fetched meanwhile: a page's links are
  // looked up there at random, and the hashing hides the wait for memory.
  std::vector<std::optional<dedup::fingerprint>> fingerprints(marking ? children.size() : 0);
  for (std::size_t position = 0; position < fingerprints.size(); ++position) {
    if (children[position].dont_filter) continue;
    try {
      fingerprints[position] = fingerprint_of(children[position], scheme);
      known_->prefetch(*fingerprints[position]);
    } catch (const std::exception&) {
      // Left empty: told below.
    }
  }
  for (std::size_t position = 0; position < children.size(); ++position) {
    const auto& child = children[position];
    std::string mark;
    if (marking && !child.dont_filter) {
      if (!fingerprints[position]) {
        refused.emplace_back(position, "its URL cannot be fingerprinted");  // nor fetched
        continue;
      }
      if (known_->contains(*fingerprints[position])) {
        known.push_back(position);
        continue;
      }
    }
    std::string body;
    try {
      body = entry_body(child, number ? number++ : 0);
    } catch (const std::invalid_argument& unwritable) {
      refused.emplace_back(position, unwritable.what());
      continue;
    }
    if (marking && !child.dont_filter) {
      mark = marking->argument(*fingerprints[position]);
      marked.push_back(*fingerprints[position]);
    }
    sent.push_back(position);
    args.push_back(std::move(body));
    args.push_back(std::to_string(child.priority));
    args.push_back(child.dont_filter ? "1" : "0");
    args.push_back(std::move(mark));
    args.push_back(pacing_host(child));
    ++count;
  }
  args[1] = std::to_string(count);
  if (number) unclaim_numbers(number, claimed_end);
  for (const auto& item : items) {
    // As scrapy-redis's RedisPipeline writes it (ScrapyJSONEncoder, i.e. json.dumps), so
    // Python consumers of <spider>:items read what they always read.
    args.push_back(python_json_dumps(item));
  }
  add_to_settles(
      std::move(args), marking,
      [this, done = std::move(done), lease_id, sent = std::move(sent), refused = std::move(refused),
       known = std::move(known),
       marked = std::move(marked)](std::exception_ptr error, redis::reply answer) {
        settle_result result;
        try {
          if (error) std::rethrow_exception(error);
          expect(answer, "settle", *client_);
          if (answer.elements.size() != 4) {
            throw std::runtime_error("redis queue: settle answered " + answer.describe());
          }
          result.settled = answer.elements[2].integer == 1;
          bool stored = result.settled || lease_id.empty();
          if (stored && answer.elements[3].str.size() != sent.size()) {
            throw std::runtime_error("redis queue: settle answered " + answer.describe());
          }
          result.queued = std::size_t(answer.elements[0].integer);
          queued_ += result.queued;
          result.duplicates = std::size_t(answer.elements[1].integer);
          const auto& flags = answer.elements[3].str;
          for (std::size_t i = 0; i < flags.size(); ++i) {
            if (flags[i] == '1') result.duplicate_positions.push_back(sent[i]);
          }
          if (stored) {
            result.refused_children = refused;
            result.duplicates += known.size();
            result.duplicate_positions.insert(result.duplicate_positions.end(), known.begin(),
                                              known.end());
            for (const auto& fp : marked) known_->insert(fp);
          }
        } catch (...) {
          return done(std::current_exception(), {});
        }
        done(nullptr, result);
      });
}

// Pages that finish together, in the same turn of the loop, are settled in one script call:
// each call costs Redis about as much as a page's own work (EVALSHA with its arguments, and the
// prelude), and a busy worker finishes a dozen pages between two writes to Redis.
// A script holds every client of Redis while it runs: a call settles this many pages at most,
// a few milliseconds of Redis's time.
constexpr std::size_t most_pages_a_settle = 64;

struct redis_queue::settle_batch {
  const dedup::redis_marking* marking = nullptr;
  std::vector<std::string> args{4};  // order, worker, filtering, page count; then the pages'
  std::vector<std::function<void(std::exception_ptr, redis::reply)>> answers;  // one a page
};

// The batch lives on the client's executor, where the answers run: a caller on another thread
// (a test's) only posts its page there.
void redis_queue::add_to_settles(std::vector<std::string> page, const dedup::redis_marking* marking,
                                 std::function<void(std::exception_ptr, redis::reply)> answer) {
  boost::asio::post(client_->get_executor(), [this, page = std::move(page), marking,
                                              answer = std::move(answer)]() mutable {
    if (settles_ && settles_->marking != marking) send_settles();
    if (!settles_) {
      settles_ = std::make_shared<settle_batch>();
      settles_->marking = marking;
      // After the pages already waiting for the loop, which join this batch.
      boost::asio::post(client_->get_executor(), [this, batch = std::weak_ptr(settles_)] {
        if (auto pending = batch.lock(); pending && pending == settles_) send_settles();
      });
    }
    settles_->args.insert(settles_->args.end(), std::make_move_iterator(page.begin()),
                          std::make_move_iterator(page.end()));
    settles_->answers.push_back(std::move(answer));
    if (settles_->answers.size() == most_pages_a_settle) send_settles();
  });
}

void redis_queue::send_settles() {
  auto batch = std::exchange(settles_, nullptr);
  auto pages = batch->answers.size();
  batch->args[0] = options_.order;
  batch->args[1] = options_.worker;
  batch->args[2] = batch->marking ? "1" : "";
  batch->args[3] = std::to_string(pages);
  auto filter_key = batch->marking ? batch->marking->key : options_.key;
  run_script(
      detail::lua::queue_settle,
      {options_.key, leased_key_, deadlines_key_, seq_key_, filter_key, items_key_, bad_key_,
       deliveries_key_, settled_key_, stats_key_},
      std::move(batch->args),
      [batch, pages](std::exception_ptr error, redis::reply answer) {
        // Four answers a page; anything else (an error, a reply of another shape) goes to every
        // page as it is, for each to report.
        bool split = !error && answer.type == redis::reply::kind::array &&
                     answer.elements.size() == 4 * pages;
        for (std::size_t page = 0; page < pages; ++page) {
          if (!split) {
            batch->answers[page](error, answer);
            continue;
          }
          redis::reply own;
          own.type = redis::reply::kind::array;
          own.elements.assign(std::make_move_iterator(answer.elements.begin() + 4 * page),
                              std::make_move_iterator(answer.elements.begin() + 4 * page + 4));
          batch->answers[page](nullptr, std::move(own));
        }
      },
      batch->marking);
}

}  // namespace crawler
