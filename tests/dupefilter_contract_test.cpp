// One contract, every backend: the suite builds each dupefilter through make_dupefilter, the same
// factory a crawl uses, and pins what a user relies on.
#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dedup/bloom_math.h"
#include "dedup/dupefilter.h"
#include "event_loop.h"
#include "redis/client.h"
#include "redis_server.h"

using namespace crawler;
using namespace crawler::dedup;
using boost::asio::use_future;

namespace {

bool uses_redis(std::string_view backend) {
  return backend.starts_with("redis");
}
bool is_bloom(std::string_view backend) {
  return backend != "set" && backend != "redis_set";
}

fingerprint fp_of(const std::string& url) {
  return request_fingerprint("GET", url);
}

class dupefilter_contract : public ::testing::TestWithParam<std::string> {
 protected:
  // One server for the suite. Should it not start, the Redis backends' tests fail with the
  // reason (a missing prerequisite is a failure); the local ones run as ever.
  static void SetUpTestSuite() {
    try {
      server_ = new fixtures::redis_server({.load_redisbloom = true});
    } catch (const std::exception& error) {
      server_error_ = error.what();
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    if (uses_redis(GetParam()) && !server_) FAIL() << "redis-server: " << server_error_;
    settings_.set("DUPEFILTER_CLASS", GetParam());
    settings_.set("LOG_LEVEL", "INFO");
    settings_.set("BLOOMFILTER_CAPACITY", 100000);
    settings_.set("BLOOMFILTER_ERRORRATE", 0.001);
    settings_.set("BLOOMFILTER_BIT", 22);
    if (uses_redis(GetParam())) settings_.set("REDIS_URL", server_->url());
    // Each test gets its own keys on the shared server.
    spider_ = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (char& c : spider_) c = c == '/' ? '_' : c;
  }

  std::unique_ptr<rfp_dupefilter> open(crawler::stats& stats) {
    dupefilter_context context{settings_, stats, spider_, loop_.executor()};
    auto filter = make_dupefilter(context);
    filter->async_open(use_future).get();
    return filter;
  }
  std::unique_ptr<rfp_dupefilter> open() { return open(stats_); }

  static seen_flags seen(rfp_dupefilter& filter, const std::vector<std::string>& urls) {
    std::vector<fingerprint> batch;
    for (const auto& url : urls) batch.push_back(fp_of(url));
    return filter.async_seen(batch, use_future).get();
  }

  // Redis backends keep their keys until a scheduler flushes them; local ones need JOBDIR.
  void use_persistence() {
    if (!uses_redis(GetParam())) settings_.set("JOBDIR", jobdir_.path().string());
  }

  static fixtures::redis_server* server_;
  static std::string server_error_;
  fixtures::event_loop loop_;
  fixtures::temp_dir jobdir_;
  crawler::settings settings_;
  crawler::stats stats_;
  std::string spider_;
};

fixtures::redis_server* dupefilter_contract::server_ = nullptr;
std::string dupefilter_contract::server_error_;

// The parts of the contract that hold for some backends only: each suite is instantiated for
// those backends, so no backend runs a test that is not about it.
class bloom_dupefilter_contract : public dupefilter_contract {};
class redis_dupefilter_contract : public dupefilter_contract {};

using flags = seen_flags;

}  // namespace

TEST_P(dupefilter_contract, a_new_request_is_new_and_then_seen) {
  auto filter = open();
  EXPECT_EQ(seen(*filter, {"http://example.com/a", "http://example.com/b"}), (flags{0, 0}));
  EXPECT_EQ(seen(*filter, {"http://example.com/a", "http://example.com/c"}), (flags{1, 0}));
  EXPECT_EQ(seen(*filter, {"http://example.com/?y=2&x=1#f"}), (flags{0}));
  EXPECT_EQ(seen(*filter, {"http://example.com/?x=1&y=2"}), (flags{1}));  // same canonical URL
  filter->async_close(use_future).get();
}

TEST_P(dupefilter_contract, a_duplicate_inside_one_batch_is_new_once_then_seen) {
  auto filter = open();
  EXPECT_EQ(seen(*filter, {"http://example.com/a", "http://example.com/b", "http://example.com/a",
                           "http://example.com/a"}),
            (flags{0, 0, 1, 1}));
  EXPECT_EQ(seen(*filter, {}), flags{});
  filter->async_close(use_future).get();
}

TEST_P(dupefilter_contract, the_seed_scenario_filters_ten_of_a_hundred_and_ten) {
  // The seed articles' scenario: ?wd=0..9, then ?wd=0..99.
  auto filter = open();
  int duplicates = 0;
  for (int round : {10, 100}) {
    std::vector<std::string> urls;
    for (int i = 0; i < round; ++i)
      urls.push_back("http://127.0.0.1:8080/s?wd=" + std::to_string(i));
    auto answer = seen(*filter, urls);
    for (std::size_t i = 0; i < answer.size(); ++i) {
      if (answer[i]) {
        filter->log("<GET " + urls[i] + ">");
        ++duplicates;
      }
    }
  }
  EXPECT_EQ(duplicates, 10);
  std::string key = std::string(filter->stats_prefix()) + "/filtered";
  EXPECT_EQ(key, is_bloom(GetParam()) ? "bloomfilter/filtered" : "dupefilter/filtered");
  EXPECT_EQ(stats_.get_int(key), 10);
  filter->async_close(use_future).get();
}

TEST_P(dupefilter_contract, persisted_state_survives_close_and_open) {
  use_persistence();
  {
    auto filter = open();
    EXPECT_EQ(seen(*filter, {"http://example.com/a", "http://example.com/b"}), (flags{0, 0}));
    filter->async_close(use_future).get();
  }
  auto reopened = open();
  EXPECT_EQ(
      seen(*reopened, {"http://example.com/a", "http://example.com/c", "http://example.com/b"}),
      (flags{1, 0, 1}));
  reopened->async_close(use_future).get();
}

// Without SCHEDULER_PERSIST (or with SCHEDULER_FLUSH_ON_START) the scheduler flushes what a Redis
// backend stored; a local backend without JOBDIR has nothing stored.
TEST_P(dupefilter_contract, without_persistence_a_new_crawl_starts_empty) {
  {
    auto filter = open();
    EXPECT_EQ(seen(*filter, {"http://example.com/a"}), (flags{0}));
    filter->async_close(use_future).get();
    filter->async_flush(use_future).get();
  }
  auto reopened = open();
  EXPECT_EQ(seen(*reopened, {"http://example.com/a"}), (flags{0}));
  reopened->async_close(use_future).get();
}

// Each parameter that shapes a backend's filter is checked when it reopens one: the file's header
// (bloom), the stored parameters (redis_bitmap), BF.INFO's capacity (redisbloom, which does not
// report its error rate). A filter read with another shape would answer wrongly.
// (The set backends have no parameters.)
TEST_P(bloom_dupefilter_contract, a_filter_built_with_other_parameters_is_refused) {
  use_persistence();
  {
    auto filter = open();
    seen(*filter, {"http://example.com/a"});
    filter->async_close(use_future).get();
  }
  std::vector<std::pair<std::string, nlohmann::json>> changes;
  if (GetParam() == "redis_bitmap") {
    changes = {{"BLOOMFILTER_BIT", 23},
               {"BLOOMFILTER_HASH_NUMBER", 7},
               {"BLOOMFILTER_HASH", "scrapy_redis_bloomfilter"}};
  } else if (GetParam() == "bloom") {
    changes = {{"BLOOMFILTER_CAPACITY", 200000}, {"BLOOMFILTER_ERRORRATE", 0.01}};
  } else {
    changes = {{"BLOOMFILTER_CAPACITY", 200000}};
  }
  auto built_with = settings_;
  for (const auto& [key, value] : changes) {
    settings_ = built_with;
    settings_.set(key, value);
    dupefilter_context context{settings_, stats_, spider_, loop_.executor()};
    auto filter = make_dupefilter(context);
    try {
      filter->async_open(use_future).get();
      ADD_FAILURE() << "opened a filter built with another " << key;
    } catch (const dupefilter_error& error) {
      EXPECT_NE(std::string(error.what()).find(key), std::string::npos) << error.what();
    }
  }
  settings_ = built_with;  // and with its own parameters it opens, remembering what it saw
  auto reopened = open();
  EXPECT_EQ(seen(*reopened, {"http://example.com/a"}), (flags{1}));
  reopened->async_close(use_future).get();
}

TEST_P(bloom_dupefilter_contract, bloom_backends_report_their_shape_and_estimated_rate) {
  auto filter = open();
  std::vector<std::string> urls;
  for (int i = 0; i < 1000; ++i) urls.push_back("http://example.com/" + std::to_string(i));
  seen(*filter, urls);
  filter->async_close(use_future).get();  // stats are current at close at the latest
  // The shape follows the settings: BLOOMFILTER_CAPACITY 100000 at BLOOMFILTER_ERRORRATE 0.001
  // (bloom, redisbloom: at least a standard filter's optimal bits, and at most those for half the
  // rate, which RedisBloom's first layer is sized for), BLOOMFILTER_BIT 22 with
  // BLOOMFILTER_HASH_NUMBER's 6 (redis_bitmap, whose capacity is where that shape reaches the
  // rate).
  auto capacity = std::uint64_t(stats_.get_int("bloomfilter/capacity"));
  auto bits = std::uint64_t(stats_.get_int("bloomfilter/bits"));
  auto hashes = int(stats_.get_int("bloomfilter/hash_number"));
  if (GetParam() == "redis_bitmap") {
    EXPECT_EQ(bits, std::uint64_t{1} << 22);
    EXPECT_EQ(hashes, 6);
    EXPECT_NEAR(crawler::dedup::bloom_math::expected_fpr(bits, hashes, capacity), 0.001, 0.00002) << capacity;
  } else {
    EXPECT_EQ(capacity, 100000u);
    auto least = crawler::dedup::bloom_math::optimal_bits(100000, 0.001);
    auto most = crawler::dedup::bloom_math::optimal_bits(100000, 0.0005) * 101 / 100;
    EXPECT_GE(bits, least);
    EXPECT_LE(bits, most);
    EXPECT_GE(hashes, crawler::dedup::bloom_math::optimal_hashes(least, 100000) - 1);
    EXPECT_LE(hashes, crawler::dedup::bloom_math::optimal_hashes(most, 100000) + 1);
  }
  auto rate = stats_.get_value("bloomfilter/estimated_fpr");
  ASSERT_TRUE(rate.has_value());
  EXPECT_GT(rate->get<double>(), 0.0);
  EXPECT_LT(rate->get<double>(), 0.001);
}

TEST_P(redis_dupefilter_contract, redis_stopped_mid_run_is_an_error_never_a_false_seen) {
  fixtures::redis_server own({.load_redisbloom = true});
  settings_.set("REDIS_URL", own.url());
  settings_.set("REDIS_PARAMS",
                nlohmann::json{{"socket_timeout", 2}, {"socket_connect_timeout", 2}});
  auto filter = open();
  EXPECT_EQ(seen(*filter, {"http://example.com/a"}), (flags{0}));
  own.stop();
  try {
    auto answer = seen(*filter, {"http://example.com/a", "http://example.com/new"});
    FAIL() << "answered " << answer.size() << " flags with Redis stopped";
  } catch (const redis::redis_error& error) {
    EXPECT_NE(std::string(error.what()).find(own.url()), std::string::npos) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(every_backend, dupefilter_contract,
                         ::testing::Values("set", "bloom", "redis_set", "redis_bitmap",
                                           "redisbloom"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(bloom_backends, bloom_dupefilter_contract,
                         ::testing::Values("bloom", "redis_bitmap", "redisbloom"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(redis_backends, redis_dupefilter_contract,
                         ::testing::Values("redis_set", "redis_bitmap", "redisbloom"),
                         [](const auto& info) { return info.param; });

TEST(make_dupefilter, an_unknown_backend_names_the_setting_and_the_choices) {
  crawler::settings settings;
  crawler::stats stats;
  fixtures::event_loop loop;
  settings.set("DUPEFILTER_CLASS", "blom");
  try {
    make_dupefilter({settings, stats, "spider", loop.executor()});
    FAIL();
  } catch (const crawler::settings_error& error) {
    EXPECT_STREQ(error.what(),
                 "DUPEFILTER_CLASS: unknown dupefilter 'blom' (choose one of: set, bloom, "
                 "redis_set, redis_bitmap, redisbloom)");
  }
}

TEST(make_dupefilter, accepts_the_python_class_paths) {
  crawler::settings settings;
  crawler::stats stats;
  fixtures::event_loop loop;
  const std::pair<const char*, const char*> paths[] = {
      {"scrapy.dupefilters.RFPDupeFilter", "set"},
      {"scrapy_redis.dupefilter.RFPDupeFilter", "redis_set"},
      {"scrapy_redis_bloomfilter.dupefilter.RFPDupeFilter", "redis_bitmap"},
      {"scrapy_redis_bf.dupefilter.RFPDupeFilter", "redisbloom"},
  };
  for (auto [path, backend] : paths) {
    settings.set("DUPEFILTER_CLASS", path);
    EXPECT_EQ(make_dupefilter({settings, stats, "spider", loop.executor()})->backend(), backend);
  }
}

TEST(redisbloom_backend, a_server_without_the_module_is_refused_at_open_with_a_clear_error) {
  fixtures::redis_server plain;
  fixtures::event_loop loop;
  crawler::settings settings;
  crawler::stats stats;
  settings.set("DUPEFILTER_CLASS", "redisbloom");
  settings.set("REDIS_URL", plain.url());
  auto filter = make_dupefilter({settings, stats, "spider", loop.executor()});
  try {
    filter->async_open(use_future).get();
    FAIL();
  } catch (const dupefilter_error& error) {
    EXPECT_NE(std::string(error.what()).find("RedisBloom module is not loaded"), std::string::npos)
        << error.what();
  }
}

TEST(redis_backends, a_key_of_another_type_is_refused_at_open) {
  fixtures::redis_server server({.load_redisbloom = true});
  fixtures::event_loop loop;
  auto where = redis::parse_redis_url(server.url());
  auto client = redis::client::create(loop.executor(), where);
  client->async_command({"LPUSH", "spider:dupefilter", "x"}, use_future).get();
  client->async_command({"LPUSH", "spider:bloomfilter", "x"}, use_future).get();
  for (const char* backend : {"redis_set", "redis_bitmap", "redisbloom"}) {
    crawler::settings settings;
    crawler::stats stats;
    settings.set("DUPEFILTER_CLASS", backend);
    settings.set("REDIS_URL", server.url());
    auto filter = make_dupefilter({settings, stats, "spider", loop.executor()});
    try {
      filter->async_open(use_future).get();
      ADD_FAILURE() << backend << " opened a list";
    } catch (const dupefilter_error& error) {
      EXPECT_NE(std::string(error.what()).find("holds a list"), std::string::npos) << error.what();
    }
  }
}

// A parameters key that holds no Bloom filter's parameters, beside an empty filter, is set aside
// and the filter starts anew: its estimated false-positive rate counts what this crawl inserts
// from nought (0 when nothing yet, then that of exactly the fingerprints it was given).
TEST(redis_bitmap_backend, a_filter_whose_parameters_were_set_aside_estimates_from_nothing) {
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  client->async_command({"SET", "spider:bloomfilter:params", "m=whatever"}, use_future).get();
  crawler::settings settings;
  crawler::stats stats;
  settings.set("DUPEFILTER_CLASS", "redis_bitmap");
  settings.set("REDIS_URL", server.url());
  settings.set("BLOOMFILTER_BIT", 12);
  auto filter = make_dupefilter({settings, stats, "spider", loop.executor()});
  filter->async_open(use_future).get();
  EXPECT_EQ(client->async_command({"LLEN", "spider:bloomfilter:bad"}, use_future).get().integer, 1);
  EXPECT_EQ(stats.get_value("bloomfilter/estimated_fpr")->get<double>(), 0.0);
  std::vector<fingerprint> three;
  for (const char* url : {"http://a.example/", "http://b.example/", "http://c.example/"}) {
    three.push_back(request_fingerprint("GET", url));
  }
  filter->async_seen(three, use_future).get();
  auto hashes = int(stats.get_int("bloomfilter/hash_number"));
  EXPECT_DOUBLE_EQ(stats.get_value("bloomfilter/estimated_fpr")->get<double>(),
                   crawler::dedup::bloom_math::expected_fpr(std::uint64_t{1} << 12, hashes, 3));
}

// What counts as this crawler's parameters is all of them, each of its type: format 1, bits and
// hash_number whole numbers of no sign, hash a name. Parameters with any one of them missing or
// mistyped are someone else's: over an empty filter, set aside, and the settings' written.
TEST(redis_bitmap_backend, parameters_with_one_field_missing_or_mistyped_are_set_aside) {
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  crawler::settings settings;
  settings.set("DUPEFILTER_CLASS", "redis_bitmap");
  settings.set("REDIS_URL", server.url());
  settings.set("BLOOMFILTER_BIT", 12);
  auto open_as = [&](const std::string& spider) {
    crawler::stats stats;
    make_dupefilter({settings, stats, spider, loop.executor()})->async_open(use_future).get();
    return client->async_command({"GET", spider + ":bloomfilter:params"}, use_future).get().str;
  };
  auto ours = nlohmann::json::parse(open_as("first"));
  std::vector<std::pair<std::string, nlohmann::json>> spoiled{
      {"format", 2},       {"bits", "4096"},     {"bits", -4096}, {"hash_number", "6"},
      {"hash_number", -6}, {"hash_number", 6.5}, {"hash", 1}};
  for (const auto& field : {"format", "bits", "hash_number", "hash"}) {
    spoiled.emplace_back(field, nullptr);  // missing
  }
  int n = 0;
  for (const auto& [field, value] : spoiled) {
    auto params = ours;
    if (value.is_null()) {
      params.erase(field);
    } else {
      params[field] = value;
    }
    auto spider = "spoiled" + std::to_string(++n);
    client->async_command({"SET", spider + ":bloomfilter:params", params.dump()}, use_future).get();
    EXPECT_EQ(nlohmann::json::parse(open_as(spider)), ours) << params.dump();
    EXPECT_EQ(
        client->async_command({"LLEN", spider + ":bloomfilter:bad"}, use_future).get().integer, 1)
        << params.dump();
  }
}

TEST(redis_bitmap_backend, shares_a_key_with_scrapy_redis_bloomfilter_bit_for_bit) {
  // ScrapyRedisBloomFilter's insert() is k SETBITs at its HashMap offsets; after them, our filter
  // with BLOOMFILTER_HASH=scrapy_redis_bloomfilter must answer "seen".
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  auto fp = request_fingerprint("GET", "http://example.com/", "", fingerprint_scheme::scrapy_2_6);
  const std::uint64_t offsets[] = {2881, 1057483776, 320676015, 165418636, 812451557, 897431848};
  for (auto offset : offsets) {
    client->async_command({"SETBIT", "spider:bloomfilter", std::to_string(offset), "1"}, use_future)
        .get();
  }
  crawler::settings settings;
  crawler::stats stats;
  settings.set("DUPEFILTER_CLASS", "redis_bitmap");
  settings.set("BLOOMFILTER_HASH", "scrapy_redis_bloomfilter");
  settings.set("REDIS_URL", server.url());
  auto filter = make_dupefilter({settings, stats, "spider", loop.executor()});
  filter->async_open(use_future).get();
  std::vector<fingerprint> batch = {fp, request_fingerprint("GET", "http://example.com/other")};
  EXPECT_EQ(filter->async_seen(batch, use_future).get(), (seen_flags{1, 0}));
}

// The set backend over a JOBDIR whose requests.seen a test writes first.
class set_backend : public testing::Test {
 protected:
  set_backend() { settings_.set("JOBDIR", jobdir_.path().string()); }
  std::filesystem::path seen_file() const { return jobdir_.path() / "requests.seen"; }
  std::vector<std::string> lines() const {
    std::ifstream file(seen_file());
    std::vector<std::string> out;
    for (std::string line; std::getline(file, line);) out.push_back(line);
    return out;
  }
  std::unique_ptr<rfp_dupefilter> make() {
    return make_dupefilter({settings_, stats_, "spider", loop_.executor()});
  }

 private:
  fixtures::temp_dir jobdir_;
  fixtures::event_loop loop_;
  crawler::settings settings_;
  crawler::stats stats_;
};

TEST_F(set_backend, a_corrupt_requests_seen_line_is_reported_with_its_file_and_line) {
  std::ofstream(seen_file()) << request_fingerprint("GET", "http://a.example/").hex()
                             << "\nnot-a-fingerprint\n";
  auto filter = make();
  try {
    filter->async_open(use_future).get();
    FAIL() << "opened a corrupt requests.seen";
  } catch (const dupefilter_error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("requests.seen:2: expected a 40-hex fingerprint, got 'not-a-fingerprint'"),
              std::string::npos)
        << error.what();
  }
}

// A crash mid-write leaves a last line cut short: dropped (its request is in the queue's journal).
// A whole fingerprint without its newline (a file edited by hand) is kept. Either way the next
// fingerprint appended goes on a line of its own.
TEST_F(set_backend, a_requests_seen_last_line_cut_short_by_a_crash_is_dropped) {
  auto a = request_fingerprint("GET", "http://a.example/");
  auto b = request_fingerprint("GET", "http://b.example/");
  std::ofstream(seen_file()) << a.hex() << "\n" << b.hex().substr(0, 17);
  auto filter = make();
  filter->async_open(use_future).get();
  std::vector<fingerprint> batch = {a, b};
  EXPECT_EQ(filter->async_seen(batch, use_future).get(), (seen_flags{1, 0}));
  filter->async_close(use_future).get();
  EXPECT_EQ(lines(), (std::vector<std::string>{a.hex(), b.hex()}));
}

TEST_F(set_backend, a_requests_seen_last_line_without_its_newline_is_kept_when_whole) {
  auto a = request_fingerprint("GET", "http://a.example/");
  auto b = request_fingerprint("GET", "http://b.example/");
  std::ofstream(seen_file()) << a.hex() << "\n" << b.hex();
  auto filter = make();
  filter->async_open(use_future).get();
  auto c = request_fingerprint("GET", "http://c.example/");
  std::vector<fingerprint> batch = {a, b, c};
  EXPECT_EQ(filter->async_seen(batch, use_future).get(), (seen_flags{1, 1, 0}));
  filter->async_close(use_future).get();
  EXPECT_EQ(lines(), (std::vector<std::string>{a.hex(), b.hex(), c.hex()}));
}

TEST_F(set_backend, resumes_from_a_requests_seen_file_written_by_scrapy) {
  // Scrapy's RFPDupeFilter writes one 40-hex fingerprint a line; a C++ crawl resuming the JOBDIR
  // must treat those requests as seen.
  std::ofstream(seen_file()) << "cebe46deeab7ee5915824a38cf73ee6f7eb0aba5\n";
  auto filter = make();
  filter->async_open(use_future).get();
  std::vector<fingerprint> batch = {request_fingerprint("GET", "http://example.com/"),
                                    request_fingerprint("GET", "http://example.com/new")};
  EXPECT_EQ(filter->async_seen(batch, use_future).get(), (seen_flags{1, 0}));
  filter->async_close(use_future).get();
  std::ifstream file(seen_file());
  std::string first, second;
  std::getline(file, first);
  std::getline(file, second);
  EXPECT_EQ(second, batch[1].hex());  // appended in Scrapy's format
}
