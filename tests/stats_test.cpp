// The crawl's stats as Scrapy's StatsCollector keeps them: max_value and min_value keep the
// larger or smaller of what they are given, starting at the first value; only inc_value's keys
// add up across a fleet.
#include "config/stats.h"

#include <gtest/gtest.h>

namespace {

TEST(stats, max_value_starts_at_its_first_value_and_keeps_only_larger_ones) {
  crawler::stats stats;
  stats.max_value("request_depth_max", -3);  // no implicit 0 to start from
  EXPECT_EQ(stats.get_int("request_depth_max", 99), -3);
  stats.max_value("request_depth_max", -4);
  EXPECT_EQ(stats.get_int("request_depth_max"), -3);
  stats.max_value("request_depth_max", -3);
  EXPECT_EQ(stats.get_int("request_depth_max"), -3);
  stats.max_value("request_depth_max", 7);
  EXPECT_EQ(stats.get_int("request_depth_max"), 7);
}

TEST(stats, min_value_starts_at_its_first_value_and_keeps_only_smaller_ones) {
  crawler::stats stats;
  stats.min_value("price_min", 40);  // no implicit 0 to start from
  EXPECT_EQ(stats.get_int("price_min", 99), 40);
  stats.min_value("price_min", 41);
  EXPECT_EQ(stats.get_int("price_min"), 40);
  stats.min_value("price_min", 40);
  EXPECT_EQ(stats.get_int("price_min"), 40);
  stats.min_value("price_min", -2);
  EXPECT_EQ(stats.get_int("price_min"), -2);
}

TEST(stats, only_counted_keys_add_up_across_a_fleet_and_every_key_is_in_the_stats_file) {
  crawler::stats stats;
  stats.inc_value("downloader/request_count");
  stats.inc_value("downloader/request_count", 4);
  stats.max_value("request_depth_max", 2);
  stats.min_value("price_min", 1);
  stats.set_value("finish_reason", "finished");
  EXPECT_EQ(stats.counters(),
            (std::map<std::string, std::int64_t>{{"downloader/request_count", 5}}));
  EXPECT_EQ(stats.to_json().dump(), R"({"downloader/request_count":5,"finish_reason":"finished",)"
                                    R"("price_min":1,"request_depth_max":2})");
  EXPECT_EQ(stats.get_int("finish_reason", 8), 8);  // not an integer: the fallback
  EXPECT_EQ(stats.get_value("never/set"), std::nullopt);
  stats.clear();
  EXPECT_TRUE(stats.counters().empty());
  EXPECT_EQ(stats.to_json().dump(), "{}");
}

// Scrapy raises a TypeError; here the error names the key, what it holds and the operation, and
// the value stays as it was.
TEST(stats, counting_on_a_key_that_holds_no_number_names_the_key_and_changes_nothing) {
  crawler::stats stats;
  stats.set_value("finish_reason", "finished");
  stats.set_value("start_time", 1.5);
  auto error_of = [&](auto operation) -> std::string {
    try {
      operation();
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of([&] { stats.inc_value("finish_reason"); }),
            R"(stats: inc_value on "finish_reason", which holds "finished", not a number)");
  EXPECT_EQ(error_of([&] { stats.max_value("finish_reason", 3); }),
            R"(stats: max_value on "finish_reason", which holds "finished", not a number)");
  EXPECT_EQ(error_of([&] { stats.min_value("finish_reason", 3); }),
            R"(stats: min_value on "finish_reason", which holds "finished", not a number)");
  EXPECT_EQ(stats.get_value("finish_reason"), nlohmann::json("finished"));
  // What it holds is quoted whole up to 60 characters, and cut to 57 and "..." past them.
  stats.set_value("finish_reason", std::string(58, 'x'));
  EXPECT_EQ(error_of([&] { stats.inc_value("finish_reason"); }),
            "stats: inc_value on \"finish_reason\", which holds \"" + std::string(58, 'x') +
                "\", not a number");
  stats.set_value("finish_reason", std::string(59, 'x'));
  EXPECT_EQ(error_of([&] { stats.inc_value("finish_reason"); }),
            "stats: inc_value on \"finish_reason\", which holds \"" + std::string(56, 'x') +
                "..., not a number");
  stats.inc_value("start_time");  // a number, kept as an integer from here on
  EXPECT_EQ(stats.get_int("start_time"), 2);
}

}  // namespace
