#include "dedup/bloom_filter.h"

#include <sys/mman.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "config/file_writes.h"
#include "dedup/bloom_math.h"
#include "dedup/dupefilter_error.h"

namespace crawler::dedup {
namespace {

constexpr int block_bits = 512;
constexpr int words_per_block = block_bits / 64;
constexpr double tightening = 0.1;  // each new sub-filter's rate relative to the previous one
constexpr std::uint64_t expansion = 2;
constexpr char magic[8] = {'C', 'R', 'W', 'L', 'B', 'L', 'M', '1'};
constexpr std::uint32_t format_version = 1;
constexpr std::uint32_t scheme_blocked512_sha1 = 1;

std::uint64_t load64(const std::uint8_t* bytes) {
  std::uint64_t value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

// Large, zero-filled, lazily committed memory: pages a small crawl never touches cost nothing.
struct zeroed_words {
  std::uint64_t* data = nullptr;
  std::size_t count = 0;

  explicit zeroed_words(std::size_t words) : count(words) {
    void* memory =
        mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    // Every check lands on a random block: with 4 KiB pages nearly each one also misses the TLB.
    // Transparent huge pages (where the kernel allows them) remove most of those page walks.
    madvise(memory, bytes(), MADV_HUGEPAGE);
    data = static_cast<std::uint64_t*>(memory);
  }
  zeroed_words(const zeroed_words&) = delete;
  zeroed_words& operator=(const zeroed_words&) = delete;
  ~zeroed_words() { munmap(data, bytes()); }
  std::size_t bytes() const { return std::max<std::size_t>(count * sizeof(std::uint64_t), 64); }
};

struct sizing {
  std::uint64_t blocks;
  int hashes;
};

// The fewest bits per item (and the k that achieves it) for which a 512-bit-blocked filter stays
// within `rate`, found by bisection on bloom_math::blocked_fpr for each k.
sizing size_for(std::uint64_t capacity, double rate) {
  double best_bits = 1e9;
  int best_k = 1;
  for (int k = 1; k <= 24; ++k) {
    double low = 1, high = 200;
    if (bloom_math::blocked_fpr(high, k, block_bits) > rate) continue;
    for (int step = 0; step < 40; ++step) {
      double mid = (low + high) / 2;
      (bloom_math::blocked_fpr(mid, k, block_bits) <= rate ? high : low) = mid;
    }
    if (high < best_bits) best_bits = high, best_k = k;
  }
  double total = std::ceil(best_bits * static_cast<double>(std::max<std::uint64_t>(capacity, 1)));
  auto blocks = static_cast<std::uint64_t>(std::ceil(total / block_bits));
  return {std::max<std::uint64_t>(blocks, 1), best_k};
}

}  // namespace

class scalable_bloom_filter::sub_filter {
 public:
  sub_filter(std::uint64_t capacity, double rate, unsigned salt)
      : sub_filter(capacity, rate, salt, size_for(capacity, rate)) {}
  sub_filter(std::uint64_t capacity, double rate, unsigned salt, sizing size)
      : capacity_(capacity),
        rate_(rate),
        salt_(salt),
        blocks_(size.blocks),
        hashes_(size.hashes),
        words_(size.blocks * words_per_block) {}

  // Returns true when every bit was already set: the item was (probably) present. Counters stay in
  // locals: a per-word mask array measured slower (its vector reloads defeat store forwarding).
  bool test_and_set(const fingerprint& fp) { return test_and_set(fp, block_of(fp)); }

  // The same with the block already located (the batch path computes it once, to prefetch it).
  bool test_and_set(const fingerprint& fp, std::uint64_t* block) {
    const probe_bits bits = probe_bits_of(fp);
    int newly_set = 0;
    auto set = [&](unsigned position) {
      std::uint64_t mask = std::uint64_t{1} << (position & 63);
      std::uint64_t word = block[position >> 6];
      newly_set += (word & mask) == 0;
      block[position >> 6] = word | mask;
    };
    // The common k <= 7 walks one register 9 bits at a time, with no per-position branch.
    std::uint64_t low = bits.low;
    const int direct = std::min(hashes_, 7);
    for (int i = 0; i < direct; ++i, low >>= 9) set(static_cast<unsigned>(low) & (block_bits - 1));
    for (int i = direct; i < hashes_; ++i) set(bits.position(i));
    set_bits_ += static_cast<std::uint64_t>(newly_set);
    if (newly_set) ++items_;
    return newly_set == 0;
  }

  bool contains(const fingerprint& fp) const {
    const std::uint64_t* block = const_cast<sub_filter*>(this)->block_of(fp);
    const probe_bits bits = probe_bits_of(fp);
    std::uint64_t missing = 0;
    for (int i = 0; i < hashes_; ++i) {
      unsigned position = bits.position(i);
      missing |= ~block[position >> 6] & (std::uint64_t{1} << (position & 63));
    }
    return missing == 0;
  }

  bool full() const { return items_ >= capacity_; }
  std::uint64_t* prefetch(const fingerprint& fp) {
    std::uint64_t* block = block_of(fp);
    __builtin_prefetch(block, 1, 3);
    return block;
  }
  double fill() const { return static_cast<double>(set_bits_) / static_cast<double>(bits()); }
  std::uint64_t bits() const { return blocks_ * block_bits; }

  std::uint64_t capacity_;
  double rate_;
  unsigned salt_;
  std::uint64_t blocks_;
  int hashes_;
  std::uint64_t items_ = 0;
  std::uint64_t set_bits_ = 0;
  zeroed_words words_;

 private:
  // Sub-filters after the first mix in other fingerprint bits, so that one unlucky fingerprint is
  // not unlucky in every sub-filter.
  std::uint64_t* block_of(const fingerprint& fp) {
    std::uint64_t h = load64(fp.bytes.data());
    if (salt_) h ^= std::rotl(load64(fp.bytes.data() + 8), static_cast<int>(salt_ * 21));
    auto index = static_cast<std::uint64_t>((static_cast<unsigned __int128>(h) * blocks_) >> 64);
    return words_.data + index * words_per_block;
  }
  // The k positions are read straight from the fingerprint: bytes 8-19 are 96 uniform SHA-1 bits,
  // ten 9-bit positions with no arithmetic at all (sub-filters after the first rotate them, so an
  // unlucky fingerprint is not unlucky everywhere). Past ten, positions come from the same bits
  // mixed with a multiplier per position. Why not double hashing (h1 + i*h2) inside the block: it
  // has only 2^17 distinct patterns, and items sharing a block and a pattern collide on every bit;
  // measured, that pushed a scaled filter to 1.4% at a configured 1%.
  struct probe_bits {
    std::uint64_t low;
    std::uint32_t tail;
    unsigned position(int i) const {
      if (i < 7) return static_cast<unsigned>(low >> (9 * i)) & (block_bits - 1);
      if (i < 10) return (tail >> (9 * (i - 7))) & (block_bits - 1);
      std::uint64_t x = (low ^ (static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ULL) ^ tail) *
                        0xD6E8FEB86659FD93ULL;
      return static_cast<unsigned>(x >> 55);
    }
  };
  probe_bits probe_bits_of(const fingerprint& fp) const {
    probe_bits bits;
    std::memcpy(&bits.tail, fp.bytes.data() + 16, sizeof bits.tail);
    bits.low = std::rotl(load64(fp.bytes.data() + 8), static_cast<int>(salt_ * 13));
    return bits;
  }
};

scalable_bloom_filter::scalable_bloom_filter(params params) : params_(params) {
  if (params_.capacity == 0) throw dupefilter_error("BLOOMFILTER_CAPACITY must be larger than 0");
  if (!(params_.error_rate > 0 && params_.error_rate < 1)) {
    throw dupefilter_error("BLOOMFILTER_ERRORRATE must be between 0 and 1 (exclusive), got " +
                           std::to_string(params_.error_rate));
  }
  add_sub_filter();
}

scalable_bloom_filter::scalable_bloom_filter(scalable_bloom_filter&&) noexcept = default;
scalable_bloom_filter& scalable_bloom_filter::operator=(scalable_bloom_filter&&) noexcept = default;
scalable_bloom_filter::~scalable_bloom_filter() = default;

void scalable_bloom_filter::add_sub_filter() {
  if (filters_.empty()) {
    filters_.push_back(
        std::make_unique<sub_filter>(params_.capacity, params_.error_rate * (1 - tightening), 0));
    return;
  }
  const sub_filter& last = *filters_.back();
  filters_.push_back(std::make_unique<sub_filter>(
      last.capacity_ * expansion, last.rate_ * tightening, static_cast<unsigned>(filters_.size())));
}

bool scalable_bloom_filter::test_and_insert(const fingerprint& fp) {
  for (std::size_t i = 0; i + 1 < filters_.size(); ++i) {
    if (filters_[i]->contains(fp)) return true;
  }
  if (!filters_.back()->full()) return filters_.back()->test_and_set(fp);
  // Grow only when a new item arrives at a full filter, not when the last one fills it: a crawl
  // that meets its capacity exactly never pays for a sub-filter it does not use.
  if (filters_.back()->contains(fp)) return true;
  add_sub_filter();
  return filters_.back()->test_and_set(fp);
}

void scalable_bloom_filter::test_and_insert(std::span<const fingerprint> batch,
                                            std::uint8_t* seen) {
  // Each check is one cache miss at a random block; touching the blocks a few items ahead lets the
  // misses overlap instead of queueing one after another.
  // The common case, one sub-filter with room for the whole batch, locates every block first.
  sub_filter& newest = *filters_.back();
  if (filters_.size() == 1 && newest.items_ + batch.size() <= newest.capacity_) {
    constexpr std::size_t chunk = 32;
    std::uint64_t* blocks[chunk];
    for (std::size_t start = 0; start < batch.size(); start += chunk) {
      std::size_t count = std::min(chunk, batch.size() - start);
      for (std::size_t i = 0; i < count; ++i) blocks[i] = newest.prefetch(batch[start + i]);
      for (std::size_t i = 0; i < count; ++i)
        seen[start + i] = newest.test_and_set(batch[start + i], blocks[i]);
    }
    return;
  }
  constexpr std::size_t ahead = 16;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (i + ahead < batch.size()) filters_.back()->prefetch(batch[i + ahead]);
    seen[i] = test_and_insert(batch[i]);
  }
}

bool scalable_bloom_filter::contains(const fingerprint& fp) const {
  for (const auto& filter : filters_) {
    if (filter->contains(fp)) return true;
  }
  return false;
}

std::uint64_t scalable_bloom_filter::size() const {
  std::uint64_t total = 0;
  for (const auto& filter : filters_) total += filter->items_;
  return total;
}

std::uint64_t scalable_bloom_filter::bits() const {
  std::uint64_t total = 0;
  for (const auto& filter : filters_) total += filter->bits();
  return total;
}

int scalable_bloom_filter::hashes() const {
  return filters_.back()->hashes_;
}
std::size_t scalable_bloom_filter::sub_filters() const {
  return filters_.size();
}

double scalable_bloom_filter::estimated_fpr() const {
  // Summed as logarithms: 1 - prod(1 - tiny) would round to exactly 0.
  double log_pass = 0;
  for (const auto& filter : filters_)
    log_pass += std::log1p(-bloom_math::fpr_from_fill(filter->fill(), filter->hashes_));
  return -std::expm1(log_pass);
}

namespace {

struct file_header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t scheme;
  std::uint64_t capacity;
  double error_rate;
  std::uint64_t sub_filters;
};

struct sub_filter_header {
  std::uint64_t capacity;
  double rate;
  std::uint64_t items;
  std::uint64_t set_bits;
  std::uint64_t blocks;
  std::uint32_t hashes;
  std::uint32_t salt;
};

}  // namespace

void scalable_bloom_filter::save(const std::filesystem::path& file) const {
  try {
    // Beside its place under a name nobody can guess, then renamed (config/file_writes.h).
    replacing_file out(file, 0666);
    file_header header{};
    std::memcpy(header.magic, magic, sizeof magic);
    header.version = format_version;
    header.scheme = scheme_blocked512_sha1;
    header.capacity = params_.capacity;
    header.error_rate = params_.error_rate;
    header.sub_filters = filters_.size();
    out.write({reinterpret_cast<const char*>(&header), sizeof header});
    for (const auto& filter : filters_) {
      sub_filter_header sub{filter->capacity_, filter->rate_,
                            filter->items_,    filter->set_bits_,
                            filter->blocks_,   static_cast<std::uint32_t>(filter->hashes_),
                            filter->salt_};
      out.write({reinterpret_cast<const char*>(&sub), sizeof sub});
      out.write({reinterpret_cast<const char*>(filter->words_.data),
                 filter->words_.count * sizeof(std::uint64_t)});
    }
    out.commit();
  } catch (const std::runtime_error& error) {
    throw dupefilter_error(std::string("Bloom filter not saved: ") + error.what());
  }
}

scalable_bloom_filter scalable_bloom_filter::load(const std::filesystem::path& file,
                                                  params expected) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw dupefilter_error("cannot read Bloom filter " + file.string() + ": " +
                           std::strerror(errno));
  file_header header{};
  in.read(reinterpret_cast<char*>(&header), sizeof header);
  if (!in || std::memcmp(header.magic, magic, sizeof magic) != 0) {
    throw dupefilter_error(file.string() + " is not a Bloom filter written by this crawler");
  }
  if (header.version != format_version || header.scheme != scheme_blocked512_sha1) {
    throw dupefilter_error(file.string() + " has format version " + std::to_string(header.version) +
                           " and hash scheme " + std::to_string(header.scheme) +
                           "; this build reads version " + std::to_string(format_version) +
                           " scheme " + std::to_string(scheme_blocked512_sha1));
  }
  if (header.capacity != expected.capacity || header.error_rate != expected.error_rate) {
    throw dupefilter_error(
        file.string() + " was built with BLOOMFILTER_CAPACITY=" + std::to_string(header.capacity) +
        " BLOOMFILTER_ERRORRATE=" + std::to_string(header.error_rate) +
        " but the settings ask for BLOOMFILTER_CAPACITY=" + std::to_string(expected.capacity) +
        " BLOOMFILTER_ERRORRATE=" + std::to_string(expected.error_rate) +
        "; keep the settings the filter was built with, or start a new JOBDIR");
  }
  scalable_bloom_filter filter(expected);
  filter.filters_.clear();
  for (std::uint64_t i = 0; i < header.sub_filters; ++i) {
    sub_filter_header sub{};
    in.read(reinterpret_cast<char*>(&sub), sizeof sub);
    if (!in || sub.blocks == 0 || sub.blocks > (std::uint64_t{1} << 40) || sub.hashes == 0 ||
        sub.hashes > 64) {
      throw dupefilter_error(file.string() + " is truncated or corrupt (sub-filter " +
                             std::to_string(i) + ")");
    }
    auto filter_ptr = std::make_unique<sub_filter>(
        sub.capacity, sub.rate, sub.salt, sizing{sub.blocks, static_cast<int>(sub.hashes)});
    filter_ptr->items_ = sub.items;
    filter_ptr->set_bits_ = sub.set_bits;
    in.read(reinterpret_cast<char*>(filter_ptr->words_.data),
            static_cast<std::streamsize>(filter_ptr->words_.count * sizeof(std::uint64_t)));
    if (!in)
      throw dupefilter_error(file.string() + " is truncated (sub-filter " + std::to_string(i) +
                             ")");
    filter.filters_.push_back(std::move(filter_ptr));
  }
  if (filter.filters_.empty()) throw dupefilter_error(file.string() + " holds no sub-filter");
  return filter;
}

}  // namespace crawler::dedup
