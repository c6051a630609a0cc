// Bit positions of a fingerprint in the redis_bitmap dupefilter's m = 2^bit bit array.
//
// Two schemes (BLOOMFILTER_HASH):
// - "sha1_double" (default): k positions by double hashing (Kirsch-Mitzenmacher) from the
//   fingerprint's own 20 bytes: h1 + i*h2 mod m. No string hashing at all.
// - "scrapy_redis_bloomfilter": the Python package's HashMap, bit for bit, so a mixed Python/C++
//   fleet can share one key: for seed i in 0..k-1, r = 0; for each byte c of the 40-hex
//   fingerprint, r = r*(i+1) + c (wrapping uint64); offset = r & (m - 1).
//   Seed 0 degenerates to the sum of the bytes; this is why it is not the default.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "request/fingerprint.h"

namespace crawler::dedup {

enum class bitmap_hash { sha1_double, scrapy_redis_bloomfilter };

std::optional<bitmap_hash> parse_bitmap_hash(std::string_view name);
std::string_view name_of(bitmap_hash hash);

/// Appends the `hashes` bit offsets of `fp` in a 2^`bit`-bit array to `out`.
void bitmap_offsets(const fingerprint& fp, int bit, int hashes, bitmap_hash hash,
                    std::vector<std::uint64_t>& out);

}  // namespace crawler::dedup
