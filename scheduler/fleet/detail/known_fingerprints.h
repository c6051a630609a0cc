// Fingerprints this worker knows the fleet's dupefilter holds: every child a settle sent through
// the dupefilter is in it afterwards, queued or duplicate, and stays there for the crawl (the
// keys go only when no worker is alive, or at a flush before any is). So a link seen again need
// not travel to Redis to be found a duplicate: on a site whose pages share their links, that is
// most links, and most of the bytes and the script time of each settle.
//
// A table of the fingerprints' first 8 bytes (already uniform, being SHA-1), in buckets of four
// (a lookup reads 32 bytes in a row): a fingerprint that finds its bucket full evicts the
// oldest there, which then goes to Redis again (correct, only slower). Two fingerprints with
// equal first 8 bytes would be taken for each other: about one crawl in 2^64 / URLs, far below
// any Bloom filter's rate.
//
// It starts small and doubles when a quarter full, up to its size: every link of every page is
// looked up here, and a table far larger than what it holds makes each lookup a cache and TLB
// miss (a fixed 8 MB table cost 4% of a worker's event loop on a 20,000-page crawl).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "request/fingerprint.h"

namespace crawler::detail {

class known_fingerprints {
 public:
  /// Grows from `first_slots` to `slots` at most, each rounded down to a power of two (one bucket
  /// of four at least); 2^20 slots take 8 MB. Nothing is allocated before the first insert.
  explicit known_fingerprints(std::size_t slots = std::size_t{1} << 20,
                              std::size_t first_slots = std::size_t{1} << 12) {
    while (max_buckets_ * 2 * ways <= slots) max_buckets_ *= 2;
    while (buckets_ * 2 * ways <= first_slots && buckets_ < max_buckets_) buckets_ *= 2;
  }

  bool contains(const dedup::fingerprint& fp) const {
    if (!table_) return false;
    auto k = key(fp);
    const auto* bucket = bucket_of(k);
    return std::find(bucket, bucket + ways, k) != bucket + ways;
  }

  /// Starts reading the slots where `fp` would be, for a contains() soon after.
  void prefetch(const dedup::fingerprint& fp) const {
    if (table_) __builtin_prefetch(bucket_of(key(fp)));
  }

  void insert(const dedup::fingerprint& fp) {
    if (!table_) table_ = std::make_unique<std::uint64_t[]>(buckets_ * ways);
    if (place(table_.get(), buckets_, key(fp)) && ++filled_ > buckets_ * ways / 4 &&
        buckets_ < max_buckets_) {
      grow();
    }
  }

  /// The slots in use now (for tests).
  std::size_t slots() const { return buckets_ * ways; }

 private:
  static constexpr std::size_t ways = 4;

  // 0 marks an empty slot, so a fingerprint whose first 8 bytes are 0 is stored as 1. Its bucket
  // is its low bits: the whole key is compared, so two keys that share a bucket still differ.
  static std::uint64_t key(const dedup::fingerprint& fp) {
    auto prefix = fp.prefix64();
    return prefix ? prefix : 1;
  }
  const std::uint64_t* bucket_of(std::uint64_t k) const {
    return table_.get() + (k & (buckets_ - 1)) * ways;
  }

  // Puts `k` first in its bucket of `table`, the others moving down and the last one leaving;
  // true when it took an empty slot.
  static bool place(std::uint64_t* table, std::size_t buckets, std::uint64_t k) {
    auto* bucket = table + (k & (buckets - 1)) * ways;
    auto* end = bucket + ways;
    if (std::find(bucket, end, k) != end) return false;
    bool was_empty = bucket[ways - 1] == 0;
    std::copy_backward(bucket, end - 1, end);
    bucket[0] = k;
    return was_empty;
  }

  void grow() {
    auto old = std::move(table_);
    auto old_slots = buckets_ * ways;
    buckets_ *= 2;
    table_ = std::make_unique<std::uint64_t[]>(buckets_ * ways);
    filled_ = 0;
    // A new bucket takes from one old bucket only, so none overflows; oldest first, so each
    // keeps its order.
    for (std::size_t i = old_slots; i-- > 0;) {
      if (old[i] != 0 && place(table_.get(), buckets_, old[i])) ++filled_;
    }
  }

  std::size_t buckets_ = 1, max_buckets_ = 1;
  std::size_t filled_ = 0;  // slots not 0
  std::unique_ptr<std::uint64_t[]> table_;
};

}  // namespace crawler::detail
