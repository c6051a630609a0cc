#include "dedup/bloom_filter.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/io_context.hpp>
#include <random>

#include "dedup/bitmap_hash.h"
#include "dedup/detail/fingerprint_set.h"
#include "config/settings.h"
#include "config/stats.h"
#include "dedup/dupefilter.h"
#include "redis_server.h"

using namespace crawler::dedup;

namespace {

// SHA-1 output is uniform, so random bytes stand in for fingerprints of distinct requests.
class fingerprint_source {
 public:
  explicit fingerprint_source(std::uint64_t seed) : random_(seed) {}
  fingerprint next() {
    fingerprint fp;
    for (std::size_t i = 0; i < fp.bytes.size(); i += 8) {
      std::uint64_t word = random_();
      std::memcpy(fp.bytes.data() + i, &word, std::min<std::size_t>(8, fp.bytes.size() - i));
    }
    return fp;
  }

 private:
  std::mt19937_64 random_;
};

// Inserts `count` fingerprints, checking none was reported present by mistake too often, and
// returns the measured false-positive rate over `probes` fingerprints never inserted.
double measured_fpr(scalable_bloom_filter& filter, std::uint64_t count, std::uint64_t probes,
                    std::uint64_t seed) {
  fingerprint_source inserted(seed), absent(seed + 1000);
  for (std::uint64_t i = 0; i < count; ++i) filter.test_and_insert(inserted.next());
  std::uint64_t false_positives = 0;
  for (std::uint64_t i = 0; i < probes; ++i) false_positives += filter.contains(absent.next());
  return static_cast<double>(false_positives) / static_cast<double>(probes);
}

}  // namespace

TEST(scalable_bloom_filter, never_forgets_an_inserted_fingerprint) {
  scalable_bloom_filter filter({.capacity = 50'000, .error_rate = 0.01});
  fingerprint_source source(1);
  std::vector<fingerprint> inserted;
  for (int i = 0; i < 150'000; ++i) inserted.push_back(source.next());  // three times the capacity
  for (const auto& fp : inserted) filter.test_and_insert(fp);
  for (const auto& fp : inserted) ASSERT_TRUE(filter.contains(fp));
  for (const auto& fp : inserted) ASSERT_TRUE(filter.test_and_insert(fp));
}

// 300k probes at 1%: the standard error is 0.018 percentage points, so 1.1% is more than five of
// them above a filter that meets its rate, and far below a broken one (a filter one hash short,
// or one that stopped scaling, lands at 1.5% or more).
TEST(scalable_bloom_filter, false_positive_rate_at_capacity_is_within_the_configured_rate) {
  scalable_bloom_filter filter({.capacity = 200'000, .error_rate = 0.01});
  double rate = measured_fpr(filter, 200'000, 300'000, 7);
  EXPECT_EQ(filter.sub_filters(), 1u);
  EXPECT_LE(rate, 0.011);
  EXPECT_GE(rate, 0.005);  // not vacuous: the filter is really at its design point
  EXPECT_LE(static_cast<double>(filter.bits()) / 200'000, 11.0);  // bits per key at 1%
}

TEST(scalable_bloom_filter, false_positive_rate_stays_within_the_rate_after_scaling) {
  scalable_bloom_filter filter({.capacity = 50'000, .error_rate = 0.01});
  double rate = measured_fpr(filter, 350'000, 300'000, 11);  // seven times the capacity
  EXPECT_GE(filter.sub_filters(), 3u);
  EXPECT_LE(rate, 0.011);
  EXPECT_NEAR(filter.estimated_fpr(), rate, 0.003);
}

TEST(scalable_bloom_filter, saves_and_loads_with_its_parameters) {
  crawler::fixtures::temp_dir dir;
  auto file = dir.path() / "requests.bloom";
  scalable_bloom_filter filter({.capacity = 1000, .error_rate = 0.01});
  fingerprint_source source(3);
  std::vector<fingerprint> inserted;
  for (int i = 0; i < 3000; ++i) inserted.push_back(source.next());
  for (const auto& fp : inserted) filter.test_and_insert(fp);
  filter.save(file);
  auto loaded = scalable_bloom_filter::load(file, {.capacity = 1000, .error_rate = 0.01});
  EXPECT_EQ(loaded.size(), filter.size());
  EXPECT_EQ(loaded.sub_filters(), filter.sub_filters());
  for (const auto& fp : inserted) ASSERT_TRUE(loaded.contains(fp));
  try {
    scalable_bloom_filter::load(file, {.capacity = 2000, .error_rate = 0.01});
    FAIL() << "loaded with another capacity";
  } catch (const dupefilter_error& error) {
    EXPECT_NE(std::string(error.what()).find("BLOOMFILTER_CAPACITY=1000"), std::string::npos)
        << error.what();
  }
}

// requests.bloom is a JOBDIR file like the journal: a crawl's group (umask 002) may resume it.
TEST(scalable_bloom_filter, its_saved_file_is_created_0666_less_the_umask) {
  for (mode_t umask : {mode_t(022), mode_t(002)}) {
    crawler::fixtures::temp_dir dir;
    auto file = dir.path() / "requests.bloom";
    auto before = ::umask(umask);
    scalable_bloom_filter({.capacity = 100, .error_rate = 0.01}).save(file);
    ::umask(before);
    struct stat saved {};
    ASSERT_EQ(::stat(file.c_str(), &saved), 0);
    EXPECT_EQ(saved.st_mode & 07777, 0666 & ~umask) << "under umask " << umask;
  }
}

TEST(bitmap_offsets, match_scrapy_redis_bloomfilter_for_the_issue_vector) {
  auto fp = request_fingerprint("GET", "http://example.com/", "", fingerprint_scheme::scrapy_2_6);
  std::vector<std::uint64_t> offsets;
  bitmap_offsets(fp, 30, 6, bitmap_hash::scrapy_redis_bloomfilter, offsets);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{2881, 1057483776, 320676015, 165418636, 812451557,
                                                 897431848}));
}

TEST(bitmap_offsets, sha1_double_gives_distinct_offsets_within_the_bitmap) {
  fingerprint_source source(5);
  for (int n = 0; n < 1000; ++n) {
    std::vector<std::uint64_t> offsets;
    bitmap_offsets(source.next(), 20, 12, bitmap_hash::sha1_double, offsets);
    std::sort(offsets.begin(), offsets.end());
    ASSERT_EQ(std::unique(offsets.begin(), offsets.end()), offsets.end());
    ASSERT_LT(offsets.back(), 1u << 20);
  }
}

TEST(fingerprint_set, is_exact_and_stays_under_forty_bytes_a_key_as_it_grows) {
  detail::fingerprint_set set;
  fingerprint_source source(9);
  std::vector<fingerprint> inserted;
  for (int i = 0; i < 300'000; ++i) {
    inserted.push_back(source.next());
    ASSERT_TRUE(set.insert(inserted.back()));
    if (i > 1000 && i % 9973 == 0) {
      ASSERT_LE(set.memory_bytes() / set.size(), 40u) << "at " << i;
    }
  }
  EXPECT_TRUE(set.insert(fingerprint{}));  // the all-zero fingerprint is a key like any other
  EXPECT_FALSE(set.insert(fingerprint{}));
  for (const auto& fp : inserted) ASSERT_FALSE(set.insert(fp));
  EXPECT_FALSE(set.contains(source.next()));
  EXPECT_EQ(set.size(), inserted.size() + 1);
}

// A Bloom filter's shape comes from its capacity (1 and up) and its rate of false positives
// (strictly between 0 and 1: at 1 every request would be a duplicate). Each bound is tried at,
// just inside and just outside it, whether the settings or the backend refuse it; a refusal
// names the setting and the value.
TEST(bloom_dupefilter, capacity_and_error_rate_outside_their_range_are_refused_by_name) {
  boost::asio::io_context io;
  struct shape {
    std::int64_t capacity;
    double rate;
    const char* refused;  // the setting the refusal names, or nullptr
    const char* got;      // and how it quotes the value
  };
  for (auto [capacity, rate, refused, got] : std::vector<shape>{
           {1, 0.5, nullptr, nullptr},
           {0, 0.5, "BLOOMFILTER_CAPACITY: ", "got 0"},
           {-1, 0.5, "BLOOMFILTER_CAPACITY: ", "got -1"},
           {1000, 0.999, nullptr, nullptr},
           {1000, 1e-9, nullptr, nullptr},
           {1000, 1.0, "BLOOMFILTER_ERRORRATE: ", "got 1"},
           {1000, 0.0, "BLOOMFILTER_ERRORRATE: ", "got 0"},
           {1000, -0.1, "BLOOMFILTER_ERRORRATE: ", "got -0.1"},
           {1000, 1.5, "BLOOMFILTER_ERRORRATE: ", "got 1.5"}}) {
    SCOPED_TRACE(std::to_string(capacity) + " at " + std::to_string(rate));
    crawler::settings settings;
    crawler::stats stats;
    try {
      settings.set("DUPEFILTER_CLASS", "bloom");
      settings.set("BLOOMFILTER_CAPACITY", capacity);
      settings.set("BLOOMFILTER_ERRORRATE", rate);
      make_dupefilter({settings, stats, "spider", io.get_executor()});
      EXPECT_EQ(refused, nullptr);
    } catch (const crawler::settings_error& error) {
      ASSERT_NE(refused, nullptr) << error.what();
      EXPECT_TRUE(std::string(error.what()).starts_with(refused)) << error.what();
      EXPECT_NE(std::string(error.what()).find(got), std::string::npos) << error.what();
    }
  }
}
