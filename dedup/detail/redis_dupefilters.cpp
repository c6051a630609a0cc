// The Redis backends: redis_set (scrapy-redis), redis_bitmap (ScrapyRedisBloomFilter, made atomic
// with BITFIELD) and redisbloom (scrapy-redis-bf). Each checks a whole batch in one round trip.
#include <boost/asio/bind_executor.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "dedup/bitmap_hash.h"
#include "dedup/bloom_math.h"
#include "dedup/detail/backends.h"
#include "redis/bounded_get.h"
#include "redis/set_aside.h"

namespace crawler::dedup::detail {
namespace {

// How much of a Bloom filter's parameters key is read: parameters are about a hundred bytes, and
// a key another program filled may be megabytes long.
constexpr std::size_t params_read_bound = 1024;

using redis::command;
using redis::reply;
using replies = std::vector<reply>;

// What every Redis backend shares: the client, key naming, flush/persist policy, and a way to run
// a pipeline and continue on the caller's executor with replies, or fail the caller's handler.
class redis_dupefilter : public rfp_dupefilter {
 protected:
  redis_dupefilter(const dupefilter_context& context, std::shared_ptr<redis::client> client,
                   std::string_view backend, std::string_view stats_prefix)
      : rfp_dupefilter(context, backend, stats_prefix),
        client_(std::move(client)),
        executor_(context.executor) {}

  // Runs `commands`; `then(replies)` runs on the handler's executor and may throw to fail it.
  template <typename Signature, typename Then>
  void run(std::vector<command> commands, asio::any_completion_handler<Signature> handler,
           Then then) {
    auto executor = asio::get_associated_executor(handler, executor_);
    client_->async_pipeline(
        std::move(commands),
        asio::bind_executor(executor, [handler = std::move(handler), then = std::move(then)](
                                          std::exception_ptr error, replies answers) mutable {
          if (!error) {
            try {
              return then(std::move(answers), handler);
            } catch (...) {
              error = std::current_exception();
            }
          }
          fail(std::move(handler), error);
        }));
  }

  static void fail(asio::any_completion_handler<done_signature> handler, std::exception_ptr error) {
    std::move(handler)(error);
  }
  static void fail(asio::any_completion_handler<seen_signature> handler, std::exception_ptr error) {
    std::move(handler)(error, seen_flags{});
  }

  // A reply that must not be an error; the message names the backend, the server and the command.
  // The message is built only on error: this runs once per fingerprint of every page.
  const reply& expect(const reply& answer, std::string_view command, std::string_view key) const {
    if (answer.is_error()) {
      throw dupefilter_error(describe(std::string(command) + " " + std::string(key)) +
                             " failed: " + answer.str);
    }
    return answer;
  }
  std::string describe(std::string_view what) const {
    return std::string(backend()) + " dupefilter at " + client_->where().address() + ": " +
           std::string(what);
  }

  void check_type(const reply& type, std::string_view key,
                  std::initializer_list<std::string_view> allowed) const {
    expect(type, "TYPE", key);
    if (type.str == "none") return;
    for (auto name : allowed) {
      if (type.str == name) return;
    }
    throw dupefilter_error(describe("key '" + std::string(key) + "' holds a " + type.str +
                                    ", not what the " + std::string(backend()) +
                                    " backend stores; set DUPEFILTER_KEY/BLOOMFILTER_KEY "
                                    "to another key or delete it"));
  }

  std::vector<std::string> stored_keys() const override { return keys_; }

  void do_close(asio::any_completion_handler<done_signature> handler) override {
    std::move(handler)(nullptr);
  }

  void do_flush(asio::any_completion_handler<done_signature> handler) override {
    command del{"DEL"};
    del.insert(del.end(), keys_.begin(), keys_.end());
    run({std::move(del)}, std::move(handler), [this](replies answers, auto& handler) {
      expect(answers.front(), "DEL", keys_.front());
      std::move(handler)(nullptr);
    });
  }

  std::shared_ptr<redis::client> client_;
  asio::any_io_executor executor_;
  std::vector<std::string> keys_;  // what flush() deletes
  redis_marking marking_;
};

// scrapy-redis's RFPDupeFilter: SADD <spider>:dupefilter <40-hex>; 1 means new.
class redis_set_dupefilter final : public redis_dupefilter {
 public:
  redis_set_dupefilter(const dupefilter_context& context, std::shared_ptr<redis::client> client)
      : redis_dupefilter(context, std::move(client), "redis_set", "dupefilter"),
        key_(redis_key("DUPEFILTER_KEY")) {
    keys_ = {key_};
    marking_ = {.lua = "return redis.call('SADD', key, argument) == 1",
                .key = key_,
                .key_type = "set",
                .argument = [](const fingerprint& fp) { return fp.hex(); }};
  }

  const redis_marking* marking() const override { return &marking_; }

 private:
  void do_open(asio::any_completion_handler<done_signature> handler) override {
    std::vector<command> commands;
    commands.push_back({"TYPE", key_});
    run(std::move(commands), std::move(handler), [this](replies answers, auto& handler) {
      check_type(answers.back(), key_, {"set"});
      std::move(handler)(nullptr);
    });
  }

  void do_seen(std::span<const fingerprint> batch,
               asio::any_completion_handler<seen_signature> handler) override {
    std::vector<command> commands;
    commands.reserve(batch.size());
    for (const auto& fp : batch) commands.push_back({"SADD", key_, fp.hex()});
    run(std::move(commands), std::move(handler), [this](replies answers, auto& handler) {
      seen_flags flags(answers.size());
      for (std::size_t i = 0; i < answers.size(); ++i)
        flags[i] = expect(answers[i], "SADD", key_).integer == 0;
      std::move(handler)(nullptr, std::move(flags));
    });
  }

  std::string key_;
};

// A Bloom filter in a Redis string. ScrapyRedisBloomFilter checks with k GETBITs and then sets with
// k SETBITs: 2k round trips per request and a race between workers. One BITFIELD per fingerprint
// sets all k bits and returns their old values in one atomic step (all old bits 1: seen), and a
// batch's BITFIELDs go out as one pipeline. m, k and the hash scheme live in <key>:params.
class redis_bitmap_dupefilter final : public redis_dupefilter {
 public:
  redis_bitmap_dupefilter(const dupefilter_context& context, std::shared_ptr<redis::client> client)
      : redis_dupefilter(context, std::move(client), "redis_bitmap", "bloomfilter"),
        key_(redis_key("BLOOMFILTER_KEY")),
        params_key_(key_ + ":params") {
    keys_ = {key_, params_key_};  // not <key>:bad: what was set aside is for a person to read
    std::int64_t bit = settings_.get_int("BLOOMFILTER_BIT");
    std::int64_t hashes = settings_.get_int("BLOOMFILTER_HASH_NUMBER");
    if (bit < 3 || bit > 32) {
      throw crawler::settings_error(
          "BLOOMFILTER_BIT: must be between 3 and 32 (a Redis string holds at most 2^32 bits), "
          "got " +
          std::to_string(bit));
    }
    if (hashes < 1 || hashes > 64) {
      throw crawler::settings_error("BLOOMFILTER_HASH_NUMBER: must be between 1 and 64, got " +
                                    std::to_string(hashes));
    }
    auto hash = parse_bitmap_hash(settings_.get_string("BLOOMFILTER_HASH"));
    if (!hash) {
      throw crawler::settings_error("BLOOMFILTER_HASH: unknown scheme '" +
                                    settings_.get_string("BLOOMFILTER_HASH") +
                                    "' (choose sha1_double or scrapy_redis_bloomfilter)");
    }
    bit_ = static_cast<int>(bit);
    hashes_ = static_cast<int>(hashes);
    hash_ = *hash;
    rate_ = settings_.get_double("BLOOMFILTER_ERRORRATE");
    // New when any of the fingerprint's bits was 0 (the offsets come comma separated).
    marking_ = {.lua = R"lua(
local new = false
for offset in string.gmatch(argument, '%d+') do
  if redis.call('SETBIT', key, offset, 1) == 0 then new = true end
end
return new
)lua",
                .key = key_,
                .key_type = "string",
                .argument = [this](const fingerprint& fp) {
                  std::vector<std::uint64_t> offsets;
                  bitmap_offsets(fp, bit_, hashes_, hash_, offsets);
                  std::string argument;
                  for (auto offset : offsets) {
                    if (!argument.empty()) argument += ',';
                    argument += std::to_string(offset);
                  }
                  return argument;
                }};
  }

  const redis_marking* marking() const override { return &marking_; }

 private:
  std::uint64_t bits() const { return std::uint64_t{1} << bit_; }

  std::string params_text() const {
    return nlohmann::json{
        {"format", 1}, {"bits", bits()}, {"hash_number", hashes_}, {"hash", name_of(hash_)}}
        .dump();
  }

  // Whether `text` is parameters this crawler wrote (for these settings or others). A value of
  // params_read_bound bytes or more was cut when read: parameters are a hundred bytes or so.
  static bool are_parameters(const std::string& text) {
    if (text.size() >= params_read_bound) return false;
    auto stored = nlohmann::json::parse(text, nullptr, false);
    return stored.is_object() && stored.contains("format") && stored["format"] == 1 &&
           stored.contains("bits") && stored["bits"].is_number_unsigned() &&
           stored.contains("hash_number") && stored["hash_number"].is_number_unsigned() &&
           stored.contains("hash") && stored["hash"].is_string();
  }

  // <key>:params holds something this crawler did not write (another program, redis-cli). Over
  // an empty filter it is set aside to <key>:bad with the reason and the settings' parameters
  // take its place, in one step (a racing worker finds them written). Over a filter with bits
  // set there is no telling how they were set: refused, as guessing could call new pages seen.
  // Throws, before `handler` is taken, when the filter holds bits.
  void replace_malformed_params(const reply& stored,
                                asio::any_completion_handler<done_signature>& handler) {
    if (set_bits_at_open_ > 0) {
      throw dupefilter_error(describe(
          "'" + params_key_ + "' holds " +
          (stored.str.size() > 100 ? "\"" + stored.str.substr(0, 100) + "\"... (" +
                                         std::to_string(stored.str.size()) + " bytes)"
                                   : "\"" + stored.str + "\"") +
          ", not the parameters of a Bloom filter, and '" + key_ + "' has " +
          std::to_string(set_bits_at_open_) + (set_bits_at_open_ == 1 ? " bit" : " bits") +
          " set: there is no telling how they were set. Delete both keys to start the "
          "filter over, or put its parameters back"));
    }
    // ARGV[1] is what the worker read of the value: all of it, or its first ARGV[4] bytes.
    // Only that value is set aside (whole, in Redis), not one a racing writer put there since.
    static const std::string set_aside = std::string(redis::lua_set_aside_record) + R"lua(
local held = redis.call('GET', KEYS[1])
local read = ARGV[1]
if held and (held == read or (#read == tonumber(ARGV[4]) and string.sub(held, 1, #read) == read))
then
  redis.call('RPUSH', KEYS[2], set_aside_record({key = KEYS[1], reason = ARGV[3]}, held))
  redis.call('SET', KEYS[1], ARGV[2])
end
return redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[4]) - 1)
)lua";
    run(std::vector<command>{{"EVAL", set_aside, "2", params_key_, key_ + ":bad", stored.str,
                              params_text(),
                              "not the parameters of a Bloom filter; the filter was empty, and "
                              "was given the settings' parameters",
                              std::to_string(params_read_bound)}},
        std::move(handler), [this](replies answers, auto& handler) {
          check_params(expect(answers[0], "EVAL (set aside)", params_key_));
          report(0);
          std::move(handler)(nullptr);
        });
  }

  void check_params(const reply& stored) const {
    if (stored.str == params_text()) return;
    throw dupefilter_error(
        describe("'" + key_ + "' was built with " + stored.str + " but the settings ask for " +
                 params_text() +
                 " (BLOOMFILTER_BIT, BLOOMFILTER_HASH_NUMBER, BLOOMFILTER_HASH); "
                 "keep the settings it was built with, or use another key"));
  }

  void do_open(asio::any_completion_handler<done_signature> handler) override {
    std::vector<command> commands;
    commands.push_back({"TYPE", key_});
    commands.push_back(redis::bounded_get(params_key_, params_read_bound));
    commands.push_back({"BITCOUNT", key_});
    run(std::move(commands), std::move(handler), [this](replies answers, auto& handler) {
      const reply& type = answers[answers.size() - 3];
      const reply& params = answers[answers.size() - 2];
      check_type(type, key_, {"string"});
      set_bits_at_open_ = expect(answers.back(), "BITCOUNT", key_).integer;
      if (params.type != reply::kind::nil) {
        expect(params, "GETRANGE", params_key_);
        if (!are_parameters(params.str)) return replace_malformed_params(params, handler);
        check_params(params);
        report(0);
        return std::move(handler)(nullptr);
      }
      if (type.str == "string" && hash_ != bitmap_hash::scrapy_redis_bloomfilter) {
        throw dupefilter_error(describe("'" + key_ + "' exists but has no parameters in '" +
                                        params_key_ +
                                        "'; if ScrapyRedisBloomFilter wrote it, set "
                                        "BLOOMFILTER_HASH=scrapy_redis_bloomfilter to share it"));
      }
      // First opener records the parameters; NX keeps a racing worker's, which GET then checks.
      run(std::vector<command>{{"SET", params_key_, params_text(), "NX"},
                               redis::bounded_get(params_key_, params_read_bound)},
          std::move(handler), [this](replies answers, auto& handler) {
            check_params(expect(answers[1], "GETRANGE", params_key_));
            report(0);
            std::move(handler)(nullptr);
          });
    });
  }

  void do_seen(std::span<const fingerprint> batch,
               asio::any_completion_handler<seen_signature> handler) override {
    std::vector<command> commands;
    commands.reserve(batch.size());
    std::vector<std::uint64_t> offsets;
    for (const auto& fp : batch) {
      offsets.clear();
      bitmap_offsets(fp, bit_, hashes_, hash_, offsets);
      command& args = commands.emplace_back();
      args.reserve(2 + 4 * offsets.size());
      args.push_back("BITFIELD");
      args.push_back(key_);
      for (auto offset : offsets) {
        args.push_back("SET");
        args.push_back("u1");
        args.push_back(std::to_string(offset));
        args.push_back("1");
      }
    }
    run(std::move(commands), std::move(handler), [this](replies answers, auto& handler) {
      seen_flags flags(answers.size());
      std::uint64_t added = 0;
      for (std::size_t i = 0; i < answers.size(); ++i) {
        const reply& old_bits = expect(answers[i], "BITFIELD", key_);
        bool all_set = !old_bits.elements.empty();
        for (const auto& bit : old_bits.elements) all_set = all_set && bit.integer == 1;
        flags[i] = all_set;
        added += !all_set;
      }
      report(added);
      std::move(handler)(nullptr, std::move(flags));
    });
  }

  // Items are estimated from the bits set at open (n = -(m/k) ln(1 - fill)) plus this worker's
  // adds.
  void report(std::uint64_t added) {
    inserted_ += added;
    double m = static_cast<double>(bits());
    double fill = std::min(0.999999, static_cast<double>(set_bits_at_open_) / m);
    double items = -(m / hashes_) * std::log1p(-fill) + static_cast<double>(inserted_);
    double capacity = -(m / hashes_) * std::log1p(-std::pow(rate_, 1.0 / hashes_));
    report_bloom(static_cast<std::uint64_t>(capacity), bits(), hashes_,
                 bloom_math::expected_fpr(bits(), hashes_, static_cast<std::uint64_t>(items)),
                 rate_);
  }

  std::string key_, params_key_;
  int bit_ = 30, hashes_ = 6;
  bitmap_hash hash_ = bitmap_hash::sha1_double;
  double rate_ = 0.001;
  long long set_bits_at_open_ = 0;
  std::uint64_t inserted_ = 0;
};

// scrapy-redis-bf's RFPDupeFilter on the RedisBloom module: BF.RESERVE at open, BF.MADD per batch.
class redisbloom_dupefilter final : public redis_dupefilter {
 public:
  redisbloom_dupefilter(const dupefilter_context& context, std::shared_ptr<redis::client> client)
      : redis_dupefilter(context, std::move(client), "redisbloom", "bloomfilter"),
        key_(redis_key("BLOOMFILTER_KEY")) {
    keys_ = {key_};
    auto capacity = bloom_capacity_from(settings_);
    capacity_ = static_cast<long long>(capacity.capacity);
    rate_ = capacity.error_rate;
    marking_ = {.lua = "return redis.call('BF.ADD', key, argument) == 1",
                .key = key_,
                .key_type = "MBbloom--",  // RedisBloom's module type
                .argument = [](const fingerprint& fp) { return fp.hex(); }};
  }

  const redis_marking* marking() const override { return &marking_; }

 private:
  void do_open(asio::any_completion_handler<done_signature> handler) override {
    std::vector<command> commands;
    commands.push_back({"TYPE", key_});
    run(std::move(commands), std::move(handler), [this](replies answers, auto& handler) {
      const reply& type = answers.back();
      check_type(type, key_, {"MBbloom--"});
      if (type.str == "none") return reserve(std::move(handler));
      verify(std::move(handler));
    });
  }

  void reserve(asio::any_completion_handler<done_signature> handler) {
    run(std::vector<command>{{"BF.RESERVE", key_, format_rate(), std::to_string(capacity_)}},
        std::move(handler), [this](replies answers, auto& handler) {
          const reply& answer = answers[0];
          if (answer.is_error() && answer.str.find("item exists") == std::string::npos) {
            throw dupefilter_error(
                describe("BF.RESERVE " + key_ + " failed: " + answer.str +
                         (answer.str.find("unknown command") != std::string::npos
                              ? " (the RedisBloom module is not loaded on this server)"
                              : "")));
          }
          verify(std::move(handler));  // also when another worker reserved it first
        });
  }

  // BF.INFO's capacity is the sum over sub-filters: C (1 + e + e^2 ...) for f filters.
  void verify(asio::any_completion_handler<done_signature> handler) {
    run(std::vector<command>{{"BF.INFO", key_}}, std::move(handler),
        [this](replies answers, auto& handler) {
          const reply& info = expect(answers[0], "BF.INFO", key_);
          long long total = 0, filters = 1, items = 0, expansion = 2;
          for (std::size_t i = 0; i + 1 < info.elements.size(); i += 2) {
            const std::string& label = info.elements[i].str;
            long long value = info.elements[i + 1].integer;
            if (label == "Capacity")
              total = value;
            else if (label == "Number of filters")
              filters = value;
            else if (label == "Number of items inserted")
              items = value;
            else if (label == "Expansion rate" && info.elements[i + 1].type == reply::kind::integer)
              expansion = value;
          }
          long long expected = 0;
          for (long long f = 0, level = capacity_; f < filters;
               ++f, level *= std::max(1LL, expansion))
            expected += level;
          if (total != expected) {
            throw dupefilter_error(
                describe("'" + key_ + "' holds capacity " + std::to_string(total) + " in " +
                         std::to_string(filters) +
                         " sub-filter(s), which BLOOMFILTER_CAPACITY=" + std::to_string(capacity_) +
                         " does not give; keep the capacity it was "
                         "built with, or use another key"));
          }
          items_at_open_ = static_cast<std::uint64_t>(items);
          report(0);
          std::move(handler)(nullptr);
        });
  }

  void do_seen(std::span<const fingerprint> batch,
               asio::any_completion_handler<seen_signature> handler) override {
    command args;
    args.reserve(2 + batch.size());
    args.push_back("BF.MADD");
    args.push_back(key_);
    for (const auto& fp : batch) args.push_back(fp.hex());
    run(std::vector<command>{std::move(args)}, std::move(handler),
        [this, size = batch.size()](replies answers, auto& handler) {
          const reply& answer = expect(answers[0], "BF.MADD", key_);
          for (const auto& element : answer.elements) expect(element, "BF.MADD", key_);
          if (answer.elements.size() != size) {
            throw dupefilter_error(describe("BF.MADD " + key_ + " answered " +
                                            std::to_string(answer.elements.size()) +
                                            " results for " + std::to_string(size) + " items"));
          }
          seen_flags flags(size);
          std::uint64_t added = 0;
          for (std::size_t i = 0; i < size; ++i) {
            flags[i] = answer.elements[i].integer == 0;
            added += !flags[i];
          }
          report(added);
          std::move(handler)(nullptr, std::move(flags));
        });
  }

  std::string format_rate() const {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", rate_);
    return text;
  }

  // RedisBloom's chain: sub-filter i holds C*2^i items at rate p/2^(i+1) (REDISBLOOM.md, sizing).
  void report(std::uint64_t added) {
    inserted_ += added;
    std::uint64_t remaining = items_at_open_ + inserted_, bits = 0;
    double log_pass = 0, rate = rate_ / 2;  // logarithms: 1 - prod(1 - tiny) rounds to 0
    int first_hashes = 0;
    for (std::uint64_t level = static_cast<std::uint64_t>(capacity_);; level *= 2, rate /= 2) {
      double per_item = bloom_math::bits_per_item(rate);
      auto sub_bits =
          static_cast<std::uint64_t>(std::ceil(static_cast<double>(level) * per_item / 64) * 64);
      int hashes = static_cast<int>(std::ceil(std::log(2.0) * per_item));
      if (!first_hashes) first_hashes = hashes;
      std::uint64_t items = std::min(remaining, level);
      bits += sub_bits;
      log_pass += std::log1p(-bloom_math::expected_fpr(sub_bits, hashes, items));
      remaining -= items;
      if (remaining == 0) break;
    }
    report_bloom(static_cast<std::uint64_t>(capacity_), bits, first_hashes, -std::expm1(log_pass),
                 rate_);
  }

  std::string key_;
  long long capacity_ = 0;
  double rate_ = 0;
  std::uint64_t items_at_open_ = 0, inserted_ = 0;
};

}  // namespace

std::unique_ptr<rfp_dupefilter> make_redis_set_dupefilter(const dupefilter_context& context,
                                                          std::shared_ptr<redis::client> redis) {
  return std::make_unique<redis_set_dupefilter>(context, std::move(redis));
}

std::unique_ptr<rfp_dupefilter> make_redis_bitmap_dupefilter(const dupefilter_context& context,
                                                             std::shared_ptr<redis::client> redis) {
  return std::make_unique<redis_bitmap_dupefilter>(context, std::move(redis));
}

std::unique_ptr<rfp_dupefilter> make_redisbloom_dupefilter(const dupefilter_context& context,
                                                           std::shared_ptr<redis::client> redis) {
  return std::make_unique<redisbloom_dupefilter>(context, std::move(redis));
}

}  // namespace crawler::dedup::detail
