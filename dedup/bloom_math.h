// Bloom filter maths, shared by the local and Redis backends and by the RedisBloom test module.
//
// For n items at false-positive rate p, an optimal standard Bloom filter has
//   m = -n ln p / (ln 2)^2 bits and k = (m / n) ln 2 hash functions,
// and after n items with k hashes over m bits its false-positive rate is (1 - e^{-kn/m})^k.
// A filter that counts its set bits can estimate its rate from the fill ratio alone: fill^k.
#pragma once

#include <cstdint>

namespace crawler::dedup::bloom_math {

/// Bits per item of an optimal standard Bloom filter at rate p: -ln p / ln^2 2.
double bits_per_item(double error_rate);
/// m = ceil(n * bits_per_item(p)).
std::uint64_t optimal_bits(std::uint64_t capacity, double error_rate);
/// k = round((m / n) ln 2), at least 1.
int optimal_hashes(std::uint64_t bits, std::uint64_t capacity);

/// (1 - e^{-kn/m})^k: the expected rate after n insertions.
double expected_fpr(std::uint64_t bits, int hashes, std::uint64_t items);
/// fill^k: the rate a filter whose set-bit fraction is `fill` answers with.
double fpr_from_fill(double fill, int hashes);

/// The rate of a blocked filter (every item's k bits in one block of `block_bits`) holding
/// `bits_per_item` bits per item: the standard formula averaged over the Poisson spread of items
/// per block. Blocking costs a few percent of space for one cache miss per lookup.
double blocked_fpr(double bits_per_item, int hashes, int block_bits);

}  // namespace crawler::dedup::bloom_math
