// A scalable, cache-line-blocked Bloom filter of request fingerprints, kept in process memory.
//
//   scalable_bloom_filter filter({.capacity = 10'000'000, .error_rate = 0.01});
//   bool seen = filter.test_and_insert(fp);   // false the first time, true afterwards
//
// Why this shape:
// - Blocked: an item's k bits all live in one 512-bit block (one cache line), so a check costs one
//   cache miss instead of k. The block and the k positions come from the fingerprint's own bits (it
//   is already a SHA-1; hashing it again buys nothing): the block from bytes 0-7, the positions as
//   9-bit slices of bytes 8-19 (see probe_bits in bloom_filter.cpp for why not double hashing).
//   Sizing accounts for the few percent of extra bits blocking costs (bloom_math::blocked_fpr).
// - Scalable (Almeida et al.; RedisBloom does the same): when the newest sub-filter has taken its
//   capacity, a new one twice as large with a tenth of the rate is added, so an underestimated
//   capacity does not silently raise the rate. The first sub-filter gets 0.9 p and the series
//   0.9 p (1 + 0.1 + 0.01 + ...) stays within p. A small tightening ratio keeps the first filter,
//   the one that matters when the capacity was right, close to the optimum (about 10.1 bits per
//   item at p = 1%).
// Not thread-safe: one writer at a time (the dupefilter calls it from the event loop).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "dedup/dupefilter_error.h"
#include "request/fingerprint.h"

namespace crawler::dedup {

class scalable_bloom_filter {
 public:
  struct params {
    std::uint64_t capacity = 10'000'000;  // items the first sub-filter holds at `error_rate`
    double error_rate = 0.001;            // false-positive rate the whole filter stays within
  };

  explicit scalable_bloom_filter(params params);
  scalable_bloom_filter(scalable_bloom_filter&&) noexcept;
  scalable_bloom_filter& operator=(scalable_bloom_filter&&) noexcept;
  ~scalable_bloom_filter();

  /// True when `fp` was (probably) inserted before; otherwise records it and returns false.
  /// Never returns false for a fingerprint that was inserted (no false negatives).
  bool test_and_insert(const fingerprint& fp);
  /// The same for a batch, in order (`seen[i]` for `batch[i]`); overlaps the memory accesses of
  /// neighbouring items, which makes a page's worth of checks several times faster.
  void test_and_insert(std::span<const fingerprint> batch, std::uint8_t* seen);
  /// True when `fp` is (probably) present. Does not insert.
  bool contains(const fingerprint& fp) const;

  const params& parameters() const { return params_; }
  /// Items inserted (answers of false from test_and_insert).
  std::uint64_t size() const;
  /// Bits over all sub-filters.
  std::uint64_t bits() const;
  /// Hash functions of the newest sub-filter.
  int hashes() const;
  std::size_t sub_filters() const;
  /// The current rate, estimated from each sub-filter's fill ratio: 1 - prod(1 - fill_i^k_i).
  double estimated_fpr() const;

  /// Writes the filter with its parameters in a versioned header (atomically: temp file + rename).
  void save(const std::filesystem::path& file) const;
  /// Reads a filter written by save(). Throws dupefilter_error when the file is unreadable, of
  /// another format version, or was built with other parameters than `expected`.
  static scalable_bloom_filter load(const std::filesystem::path& file, params expected);

 private:
  class sub_filter;
  void add_sub_filter();

  params params_;
  std::vector<std::unique_ptr<sub_filter>> filters_;
};

}  // namespace crawler::dedup
