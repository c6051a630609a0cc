// Fingerprints this worker knows the fleet's dupefilter holds: every child a settle sent through
// the dupefilter is in it afterwards, queued or duplicate, and stays there for the crawl (the
// keys go only when no worker is alive, or at a flush before any is). So a link seen again need
// not travel to Redis to be found a duplicate: on a site whose pages share their links, that is
// most links, and most of the bytes and the script time of each settle.
//
// A direct-mapped table of the fingerprints' first 8 bytes (already uniform, being SHA-1), fixed
// in size: a newer fingerprint evicts an older one at its slot, which then goes to Redis again
// (correct, only slower). Two fingerprints with equal first 8 bytes would be taken for each other:
// about one crawl in 2^64 / URLs, far below any Bloom filter's rate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "request/fingerprint.h"

namespace crawler::detail {

class known_fingerprints {
 public:
  /// `slots` is rounded down to a power of two; 2^20 slots take 8 MB, allocated on first use.
  explicit known_fingerprints(std::size_t slots = std::size_t{1} << 20) {
    while (mask_ * 2 + 1 < slots) mask_ = mask_ * 2 + 1;
  }

  bool contains(const dedup::fingerprint& fp) const {
    return table_ && table_[slot(fp)] == key(fp);
  }

  void insert(const dedup::fingerprint& fp) {
    if (!table_) table_ = std::make_unique<std::uint64_t[]>(mask_ + 1);
    table_[slot(fp)] = key(fp);
  }

 private:
  // 0 marks an empty slot, so a fingerprint whose first 8 bytes are 0 is stored as 1.
  static std::uint64_t key(const dedup::fingerprint& fp) {
    auto prefix = fp.prefix64();
    return prefix ? prefix : 1;
  }
  std::size_t slot(const dedup::fingerprint& fp) const {
    // The bytes after the key: independent of it, so two keys that share a slot still differ.
    std::uint64_t bits;
    std::memcpy(&bits, fp.bytes.data() + 8, sizeof bits);
    return std::size_t(bits) & mask_;
  }

  std::size_t mask_ = 0;
  std::unique_ptr<std::uint64_t[]> table_;
};

}  // namespace crawler::detail
