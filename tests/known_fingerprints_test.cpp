#include "scheduler/fleet/detail/known_fingerprints.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

using crawler::dedup::fingerprint;
using crawler::detail::known_fingerprints;

namespace {

// Fingerprints as SHA-1 gives them: uniform bytes.
std::vector<fingerprint> random_fingerprints(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 bits(seed);
  std::vector<fingerprint> out(count);
  for (auto& fp : out) {
    for (std::size_t at = 0; at < fp.bytes.size(); at += 8) {
      auto word = bits();
      std::memcpy(fp.bytes.data() + at, &word, std::min<std::size_t>(8, fp.bytes.size() - at));
    }
  }
  return out;
}

}  // namespace

TEST(known_fingerprints, keeps_every_fingerprint_while_it_grows_from_a_small_table) {
  known_fingerprints known(std::size_t{1} << 16, 16);
  EXPECT_EQ(known.slots(), 16u);
  auto given = random_fingerprints(5000, 1);
  for (const auto& fp : given) known.insert(fp);
  EXPECT_GT(known.slots(), 5000u);
  EXPECT_LE(known.slots(), std::size_t{1} << 16);
  // A full bucket loses its oldest fingerprint: a worker sends that one to Redis again. Grown at
  // a quarter full, the table keeps nearly all of them.
  std::size_t kept = 0;
  for (const auto& fp : given) kept += known.contains(fp);
  EXPECT_GT(kept, 5000u * 98 / 100);
  // What was given last is always there.
  EXPECT_TRUE(known.contains(given.back()));
}

TEST(known_fingerprints, stops_growing_at_its_size_and_never_claims_a_fingerprint_not_given) {
  known_fingerprints known(64, 16);
  auto given = random_fingerprints(1000, 2);
  for (const auto& fp : given) known.insert(fp);
  EXPECT_EQ(known.slots(), 64u);
  std::size_t kept = 0;
  for (const auto& fp : given) kept += known.contains(fp);
  EXPECT_LE(kept, 64u);
  EXPECT_GT(kept, 0u);
  for (const auto& fp : random_fingerprints(1000, 3)) EXPECT_FALSE(known.contains(fp));
}

TEST(known_fingerprints, an_empty_table_knows_nothing) {
  known_fingerprints known;
  for (const auto& fp : random_fingerprints(10, 4)) EXPECT_FALSE(known.contains(fp));
  fingerprint zero{};
  EXPECT_FALSE(known.contains(zero));
  known.insert(zero);
  EXPECT_TRUE(known.contains(zero));
}
