#include "dedup/bloom_math.h"

#include <algorithm>
#include <cmath>

namespace crawler::dedup::bloom_math {

double bits_per_item(double error_rate) {
  const double ln2 = std::log(2.0);
  return -std::log(error_rate) / (ln2 * ln2);
}

std::uint64_t optimal_bits(std::uint64_t capacity, double error_rate) {
  return static_cast<std::uint64_t>(
      std::ceil(static_cast<double>(capacity) * bits_per_item(error_rate)));
}

int optimal_hashes(std::uint64_t bits, std::uint64_t capacity) {
  double k = static_cast<double>(bits) / static_cast<double>(std::max<std::uint64_t>(capacity, 1)) *
             std::log(2.0);
  return std::max(1, static_cast<int>(std::lround(k)));
}

double expected_fpr(std::uint64_t bits, int hashes, std::uint64_t items) {
  if (bits == 0) return 1.0;
  double fill = 1.0 - std::exp(-static_cast<double>(hashes) * static_cast<double>(items) /
                               static_cast<double>(bits));
  return std::pow(fill, hashes);
}

double fpr_from_fill(double fill, int hashes) {
  return std::pow(fill, hashes);
}

double blocked_fpr(double bits_per_item, int hashes, int block_bits) {
  const double mean = block_bits / bits_per_item;  // items per block, Poisson-distributed
  const double miss = std::log1p(-1.0 / block_bits);
  double probability = std::exp(-mean);  // P(i = 0)
  double rate = 0;
  const int limit = static_cast<int>(mean * 4 + 64);
  for (int i = 0; i <= limit; ++i) {
    if (i > 0) probability *= mean / i;
    double fill = 1.0 - std::exp(miss * hashes * i);
    rate += probability * std::pow(fill, hashes);
  }
  return rate;
}

}  // namespace crawler::dedup::bloom_math
