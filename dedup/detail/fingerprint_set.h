// An exact set of fingerprints in one flat array: 20 bytes a slot, no per-key allocation.
//
// Open addressing with linear probing; the slot comes from the fingerprint's first 8 bytes (already
// uniform: it is a SHA-1), mapped onto the table by multiply-shift so the table need not be a power
// of two. It grows by 1.5x at 80% load, so it always sits between 53% and 80% full: 25 to 38 bytes
// a key, against ~100 for std::unordered_set<std::string> of 40-hex strings. The all-zero
// fingerprint marks an empty slot and is tracked on the side.
#pragma once

#include <cstdint>
#include <vector>

#include "request/fingerprint.h"

namespace crawler::dedup::detail {

class fingerprint_set {
 public:
  explicit fingerprint_set(std::size_t expected = 1024);

  /// Adds `fp`; false when it was already present.
  bool insert(const fingerprint& fp);
  bool contains(const fingerprint& fp) const;
  std::size_t size() const { return size_; }
  /// Bytes the table holds (its slots), for the bytes-per-key figure.
  std::size_t memory_bytes() const { return slots_.size() * sizeof(fingerprint); }

  template <typename Visit>
  void for_each(Visit visit) const {
    if (has_zero_) visit(fingerprint{});
    for (const auto& slot : slots_) {
      if (!is_empty(slot)) visit(slot);
    }
  }

 private:
  static bool is_empty(const fingerprint& fp) { return fp == fingerprint{}; }
  std::size_t home(const fingerprint& fp) const {
    return static_cast<std::size_t>(
        (static_cast<unsigned __int128>(fp.prefix64()) * slots_.size()) >> 64);
  }
  void grow();

  std::vector<fingerprint> slots_;
  std::size_t size_ = 0;
  bool has_zero_ = false;
};

}  // namespace crawler::dedup::detail
