// RFPDupeFilter: answers "has this request been seen?" for batches of fingerprints.
//
//   crawler::dedup::dupefilter_context context{settings, stats, "books", io.get_executor()};
//   auto filter = crawler::dedup::make_dupefilter(context);  // DUPEFILTER_CLASS picks the backend
//   filter->async_open(boost::asio::use_future).get();
//   auto flags = filter->async_seen(page_fingerprints, boost::asio::use_future).get();
//   // flags[i] == 1: a duplicate, drop it (and call filter->log(...)); 0: new, now recorded.
//   filter->async_close(boost::asio::use_future).get();
//
// Scrapy's seams: a fingerprinter (fingerprint.h) turns requests into SHA-1s, this interface
// answers membership only, and the scheduler calls it. A page's links are checked as one batch, one
// Redis round trip per page for the Redis backends; a fingerprint that appears twice in one batch
// is new the first time and a duplicate the second.
//
// Backends (DUPEFILTER_CLASS; the Python class paths are accepted too):
//
//   name          what it keeps                                               stats prefix
//   set           in-memory set; JOBDIR/requests.seen as Scrapy writes it     dupefilter/
//   bloom         scalable blocked Bloom filter; JOBDIR/requests.bloom        bloomfilter/
//   redis_set     SADD <spider>:dupefilter <40-hex> (scrapy-redis)            dupefilter/
//   redis_bitmap  BITFIELD on <spider>:bloomfilter (ScrapyRedisBloomFilter)   bloomfilter/
//   redisbloom    BF.MADD on <spider>:bloomfilter (scrapy-redis-bf)           bloomfilter/
//
// Errors are errors: when Redis cannot answer, the completion carries an exception (a redis_error
// naming the address), never a batch of "seen" flags that would silently drop requests.
// Completions take `(std::exception_ptr, ...)`: callbacks, use_future and use_awaitable all work.
// Local backends complete before async_* returns; Redis backends complete on the handler's
// executor. A dupefilter is used from one thread at a time (the engine's loop).
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "dedup/dupefilter_error.h"
#include "request/fingerprint.h"

namespace spdlog {
class logger;
}
namespace crawler::redis {
class client;
}

namespace crawler::dedup {

namespace asio = boost::asio;

/// One flag per fingerprint of a batch, in order: 1 = seen before (a duplicate), 0 = new.
using seen_flags = std::vector<std::uint8_t>;
using done_signature = void(std::exception_ptr);
using seen_signature = void(std::exception_ptr, seen_flags);

/// Everything a backend is built from: the one construction path, as Scrapy's from_crawler.
struct dupefilter_context {
  const crawler::settings& settings;
  crawler::stats& stats;
  std::string spider_name;
  asio::any_io_executor executor;  // the crawl's event loop: Redis I/O runs here
  /// A connection to share with the scheduler; null makes one from REDIS_URL / REDIS_HOST.
  std::shared_ptr<redis::client> redis = nullptr;
};

/// How a Redis backend marks a fingerprint as seen from inside a Redis script, so that a fleet's
/// scheduler can check a request and queue it in one atomic step (a crash between the two would
/// leave a URL seen but never queued).
/// Each Redis backend supplies its own step, so the scheduler's scripts know no backend by name.
struct redis_marking {
  /// The body of the Lua function `mark(key, argument)`, run inside the scheduler's scripts: marks
  /// one fingerprint (as `argument` gives it) seen in `key` and returns true when it was new.
  std::string lua;
  /// The dupefilter's key, and what TYPE answers for it once the backend has written it
  /// (scripts check it before their first write).
  std::string key;
  std::string key_type;
  /// The script argument for one fingerprint.
  std::function<std::string(const fingerprint&)> argument;
};

class rfp_dupefilter {
 public:
  virtual ~rfp_dupefilter();
  rfp_dupefilter(const rfp_dupefilter&) = delete;
  rfp_dupefilter& operator=(const rfp_dupefilter&) = delete;

  /// Loads persisted state (JOBDIR), checks Redis keys and parameters. Call once before async_seen.
  template <asio::completion_token_for<done_signature> Token>
  auto async_open(Token&& token) {
    return asio::async_initiate<Token, done_signature>(
        [this](auto handler) { do_open(std::move(handler)); }, token);
  }

  /// Checks and records a batch. `batch` is read before this returns; it need not outlive the call.
  template <asio::completion_token_for<seen_signature> Token>
  auto async_seen(std::span<const fingerprint> batch, Token&& token) {
    return asio::async_initiate<Token, seen_signature>(
        [this, batch](auto handler) {
          if (batch.empty()) return std::move(handler)(nullptr, seen_flags{});  // no round trip
          do_seen(batch, std::move(handler));
        },
        token);
  }

  /// Saves state (JOBDIR). A Redis backend's keys stay: the scheduler decides when they go.
  template <asio::completion_token_for<done_signature> Token>
  auto async_close(Token&& token) {
    return asio::async_initiate<Token, done_signature>(
        [this](auto handler) { do_close(std::move(handler)); }, token);
  }

  /// Deletes what a Redis backend stores (stored_keys()); local backends keep their state in
  /// JOBDIR and have nothing here. A dupefilter never deletes on its own: its scheduler calls
  /// this as its policy says (SCHEDULER_FLUSH_ON_START before open, SCHEDULER_PERSIST=false
  /// after close), since in a fleet only the scheduler knows whether other workers still use it.
  template <asio::completion_token_for<done_signature> Token>
  auto async_flush(Token&& token) {
    return asio::async_initiate<Token, done_signature>(
        [this](auto handler) { do_flush(std::move(handler)); }, token);
  }

  /// The Redis keys holding this backend's state; empty for local backends.
  virtual std::vector<std::string> stored_keys() const { return {}; }

  /// Why a local backend's JOBDIR record could not be written (a full disk), naming the file;
  /// empty while it can. Its answers stay right, coming from memory, but what it failed to save
  /// would be forgotten by a resume: the scheduler stops the crawl (jobdir_write_failed).
  virtual std::string record_failure() const { return {}; }

  /// With JOBDIR: the queue's journal, which a local backend's record trails, could not be
  /// written. From now on nothing reaches that record, not even what was answered before and is
  /// not written yet: a resume would take requests the journal never got for seen, and lose
  /// them. Answers go on coming from memory. Redis backends, which record as they answer, are
  /// not asked again once the journal fails.
  virtual void stop_recording() {}

  /// Records one filtered request, as Scrapy's RFPDupeFilter.log: counts `<prefix>/filtered`, and
  /// logs the first duplicate only ("no more duplicates will be shown") unless DUPEFILTER_DEBUG.
  /// `request` is the request as Scrapy prints it, e.g. "<GET http://example.com/>".
  void log(std::string_view request, std::string_view referer = "None");

  /// How this backend marks a fingerprint inside a Redis script; null for local backends.
  virtual const redis_marking* marking() const { return nullptr; }

  /// The DUPEFILTER_CLASS value this backend answers to ("set", "bloom", ...).
  std::string_view backend() const { return backend_; }
  /// "dupefilter" for set backends, "bloomfilter" for Bloom backends: the stats keys' prefix.
  std::string_view stats_prefix() const { return stats_prefix_; }

 protected:
  rfp_dupefilter(const dupefilter_context& context, std::string_view backend,
                 std::string_view stats_prefix);

  virtual void do_open(asio::any_completion_handler<done_signature> handler) = 0;
  virtual void do_seen(std::span<const fingerprint> batch,
                       asio::any_completion_handler<seen_signature> handler) = 0;
  virtual void do_close(asio::any_completion_handler<done_signature> handler) = 0;
  virtual void do_flush(asio::any_completion_handler<done_signature> handler) {
    std::move(handler)(nullptr);
  }

  /// Bloom backends report their shape and estimated rate; warns once past twice the configured
  /// rate.
  void report_bloom(std::uint64_t capacity, std::uint64_t bits, int hashes, double estimated_fpr,
                    double configured_rate);
  /// The spider's key for a template such as "%(spider)s:dupefilter".
  std::string redis_key(std::string_view setting) const;

  const crawler::settings& settings_;
  crawler::stats& stats_;
  std::string spider_name_;
  std::shared_ptr<spdlog::logger> logger_;

 private:
  std::string backend_;
  std::string stats_prefix_;
  std::string filtered_key_;  // "<prefix>/filtered", built once: log() runs per duplicate
  bool debug_;
  bool log_duplicates_ = true;
  bool warned_fpr_ = false;
};

/// Builds the backend DUPEFILTER_CLASS names. Throws settings_error for an unknown name (listing
/// the valid ones) and for a Redis backend whose REDIS_URL is malformed.
std::unique_ptr<rfp_dupefilter> make_dupefilter(const dupefilter_context& context);

/// The DUPEFILTER_CLASS values make_dupefilter accepts (short names).
std::vector<std::string_view> dupefilter_backends();

}  // namespace crawler::dedup
