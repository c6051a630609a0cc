// Dupefilter benchmark: every backend through make_dupefilter (the production path), page-sized
// batches of 20-byte fingerprints, against baselines measured in the same run:
//   local  vs std::unordered_set<std::string> of 40-hex fingerprints (what a naive port would use)
//   Redis  vs the seed-001 algorithm: k GETBIT round trips, then k SETBIT, one request at a time
// Prints ns per check-and-insert (local) or checks per second (Redis, loopback, one connection),
// bytes per key and the measured false-positive rate.
//
//   ./build/bench/dupefilter_bench [local_keys=10000000] [redis_keys=1000000]
#include <malloc.h>

#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "dedup/bitmap_hash.h"
#include "dedup/dupefilter.h"
#include "event_loop.h"
#include "redis/client.h"
#include "redis_server.h"

using namespace crawler;
using namespace crawler::dedup;
using boost::asio::use_future;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::size_t page = 100;  // links per page: one batch

std::vector<fingerprint> random_fingerprints(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<fingerprint> out(count);
  for (auto& fp : out) {
    for (std::size_t i = 0; i < fp.bytes.size(); i += 8) {
      std::uint64_t word = random();
      std::memcpy(fp.bytes.data() + i, &word, std::min<std::size_t>(8, fp.bytes.size() - i));
    }
  }
  return out;
}

// Bytes malloc has handed out and not taken back (small chunks plus mmapped large ones): unlike
// resident memory, it does not hide an allocation that reuses memory an earlier run freed.
long heap_in_use() {
  struct mallinfo2 info = mallinfo2();
  return static_cast<long>(info.uordblks + info.hblkhd);
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

void row(const char* name, const char* speed, double bytes_per_key, double fpr,
         const char* note = "") {
  std::printf("%-34s %22s %14.1f %12.5f%%  %s\n", name, speed, bytes_per_key, fpr * 100, note);
}

struct measured {
  double seconds;
  double bytes_per_key;
  double fpr;
};

// Inserts `keys` in page-sized batches, one after another as a crawl's scheduler sends the pages
// it parses, then checks `probes` fingerprints never inserted. Local backends complete before
// async_seen returns, so a plain callback measures them without a future's thread handoff; Redis
// backends complete on the loop thread, so each batch waits for its answer.
measured run_dupefilter(
    rfp_dupefilter& filter, bool completes_inline, const std::vector<fingerprint>& keys,
    const std::vector<fingerprint>& probes, const std::function<long()>& memory,
    const std::function<void()>& after_inserts = [] {}) {
  long before = memory();
  auto start = clock_type::now();
  for (std::size_t i = 0; i < keys.size(); i += page) {
    std::span<const fingerprint> batch(keys.data() + i, std::min(page, keys.size() - i));
    if (completes_inline) {
      filter.async_seen(batch, [](std::exception_ptr error, seen_flags) {
        if (error) std::rethrow_exception(error);
      });
    } else {
      filter.async_seen(batch, use_future).get();
    }
  }
  double seconds = seconds_since(start);
  long after = memory();
  after_inserts();
  std::size_t false_positives = 0;
  for (std::size_t i = 0; i < probes.size(); i += page) {
    std::span<const fingerprint> batch(probes.data() + i, std::min(page, probes.size() - i));
    for (auto f : filter.async_seen(batch, use_future).get()) false_positives += f;
  }
  return {seconds, static_cast<double>(after - before) / static_cast<double>(keys.size()),
          static_cast<double>(false_positives) / static_cast<double>(probes.size())};
}

std::string per_second(double count, double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%.0f checks/s", count / seconds);
  return text;
}

std::string per_check(double seconds, double count) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f ns/check", seconds * 1e9 / count);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t local_keys = argc > 1 ? std::stoull(argv[1]) : 10'000'000;
  std::size_t redis_keys = argc > 2 ? std::stoull(argv[2]) : 1'000'000;
  const double rate = 0.01;
  std::printf(
      "dupefilter benchmark: %zu local keys, %zu Redis keys, error rate %.2f%%, batches of %zu\n\n",
      local_keys, redis_keys, rate * 100, page);
  std::printf("%-34s %22s %14s %13s\n", "backend", "speed", "bytes/key", "measured FPR");

  auto keys = random_fingerprints(local_keys, 1);
  auto probes = random_fingerprints(200'000, 2);
  fixtures::event_loop loop;

  {  // baseline: std::unordered_set<std::string> of 40-hex fingerprints
    std::vector<std::string> hex;
    hex.reserve(keys.size());
    for (const auto& fp : keys) hex.push_back(fp.hex());
    long before = heap_in_use();
    auto start = clock_type::now();
    std::unordered_set<std::string> seen;
    std::size_t duplicates = 0;
    for (const auto& h : hex) duplicates += !seen.insert(h).second;
    double seconds = seconds_since(start);
    // The strings were built before timing; the set's own copies, nodes and buckets are counted.
    double bytes = static_cast<double>(heap_in_use() - before) / static_cast<double>(keys.size());
    row("baseline unordered_set<string>", per_check(seconds, keys.size()).c_str(), bytes, 0.0,
        duplicates ? "(duplicates!)" : "");
  }

  crawler::stats stats;
  for (const char* backend : {"set", "bloom"}) {
    crawler::settings settings;
    settings.set("LOG_LEVEL", "WARNING");
    settings.set("DUPEFILTER_CLASS", backend);
    settings.set("BLOOMFILTER_CAPACITY", static_cast<std::int64_t>(local_keys));
    settings.set("BLOOMFILTER_ERRORRATE", rate);
    auto filter = make_dupefilter({settings, stats, "bench", loop.executor()});
    filter->async_open(use_future).get();
    // Read the filter's size before the probes: they are inserted too, and would grow it.
    std::int64_t bits = 0;
    auto result = run_dupefilter(*filter, true, keys, probes, heap_in_use, [&] {
      filter->async_close(use_future).get();  // brings the stats up to date
      bits = stats.get_int("bloomfilter/bits");
    });
    std::string note;
    if (std::string_view(backend) == "bloom") {
      // The filter's bits live in mmapped pages outside malloc: count them from its own stats.
      double bits_per_key = static_cast<double>(bits) / static_cast<double>(local_keys);
      result.bytes_per_key = bits_per_key / 8;
      char text[64];
      std::snprintf(text, sizeof text, "%.2f bits/key", bits_per_key);
      note = text;
    }
    row(backend, per_check(result.seconds, keys.size()).c_str(), result.bytes_per_key, result.fpr,
        note.c_str());
  }

  std::printf("\n");
  fixtures::redis_server server({.load_redisbloom = true});
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  auto used_memory = [&]() -> long {
    auto info = client->async_command({"INFO", "memory"}, use_future).get().str;
    auto at = info.find("used_memory:");
    return std::stol(info.substr(at + 12));
  };
  std::vector<fingerprint> remote_keys(keys.begin(),
                                       keys.begin() + std::min(redis_keys, keys.size()));
  const int bit =
      static_cast<int>(std::ceil(std::log2(static_cast<double>(remote_keys.size()) * 16)));

  {  // baseline: ScrapyRedisBloomFilter as seed 001 writes it, k GETBITs then k SETBITs per request
    const int hashes = 6;
    std::size_t requests = std::min<std::size_t>(remote_keys.size(), 20'000);
    auto start = clock_type::now();
    for (std::size_t n = 0; n < requests; ++n) {
      std::vector<std::uint64_t> offsets;
      bitmap_offsets(remote_keys[n], bit, hashes, bitmap_hash::scrapy_redis_bloomfilter, offsets);
      bool exists = true;
      for (auto offset : offsets) {
        exists &= client->async_command({"GETBIT", "baseline", std::to_string(offset)}, use_future)
                      .get()
                      .integer == 1;
      }
      if (!exists) {
        for (auto offset : offsets)
          client->async_command({"SETBIT", "baseline", std::to_string(offset), "1"}, use_future)
              .get();
      }
    }
    row("baseline seed-001 GETBIT/SETBIT", per_second(requests, seconds_since(start)).c_str(), 0, 0,
        "12 round trips per request");
    client->async_command({"DEL", "baseline"}, use_future).get();
  }

  for (const char* backend : {"redis_set", "redis_bitmap", "redisbloom"}) {
    crawler::settings settings;
    settings.set("LOG_LEVEL", "WARNING");
    settings.set("DUPEFILTER_CLASS", backend);
    settings.set("REDIS_URL", server.url());
    settings.set("BLOOMFILTER_CAPACITY", static_cast<std::int64_t>(remote_keys.size()));
    settings.set("BLOOMFILTER_ERRORRATE", rate);
    settings.set("BLOOMFILTER_BIT", bit);
    settings.set("BLOOMFILTER_HASH_NUMBER", 6);
    auto filter = make_dupefilter({settings, stats, "bench", loop.executor()});
    filter->async_open(use_future).get();
    std::vector<fingerprint> redis_probes(probes.begin(), probes.begin() + 20'000);
    auto result = run_dupefilter(*filter, false, remote_keys, redis_probes, used_memory);
    std::string note =
        std::string_view(backend) == "redis_bitmap" ? "m = 2^" + std::to_string(bit) + ", k = 6"
        : std::string_view(backend) == "redisbloom" ? "against the test stand-in module"
                                                    : "";
    row(backend, per_second(remote_keys.size(), result.seconds).c_str(), result.bytes_per_key,
        result.fpr, note.c_str());
    filter->async_close(use_future).get();
    // redis_bitmap and redisbloom share the default key, each in its own type.
    client->async_command({"FLUSHDB"}, use_future).get();
  }
  return 0;
}
