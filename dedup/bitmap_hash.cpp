#include "dedup/bitmap_hash.h"

#include <cstring>

namespace crawler::dedup {

std::optional<bitmap_hash> parse_bitmap_hash(std::string_view name) {
  if (name == "sha1_double") return bitmap_hash::sha1_double;
  if (name == "scrapy_redis_bloomfilter") return bitmap_hash::scrapy_redis_bloomfilter;
  return std::nullopt;
}

std::string_view name_of(bitmap_hash hash) {
  return hash == bitmap_hash::sha1_double ? "sha1_double" : "scrapy_redis_bloomfilter";
}

void bitmap_offsets(const fingerprint& fp, int bit, int hashes, bitmap_hash hash,
                    std::vector<std::uint64_t>& out) {
  const std::uint64_t mask = bit >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bit) - 1;
  if (hash == bitmap_hash::scrapy_redis_bloomfilter) {
    char hex[40];
    fp.write_hex(hex);
    for (int seed = 0; seed < hashes; ++seed) {
      std::uint64_t r = 0;
      for (unsigned char c : hex) r = r * static_cast<std::uint64_t>(seed + 1) + c;
      out.push_back(r & mask);
    }
    return;
  }
  std::uint64_t h1 = fp.prefix64(), h2;
  std::memcpy(&h2, fp.bytes.data() + 8, sizeof h2);
  h2 |= 1;  // odd: with a power-of-two m, the k offsets are distinct
  for (int i = 0; i < hashes; ++i) out.push_back((h1 + static_cast<std::uint64_t>(i) * h2) & mask);
}

}  // namespace crawler::dedup
