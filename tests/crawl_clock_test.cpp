// The crawl's clock as tests drive it: it stands where it is put, moves only forward, and only by
// the steps it is given; without a driver it is the machine's monotonic clock.
#include "config/crawl_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

namespace {

using crawler::crawl_clock;
using std::chrono::seconds;

TEST(crawl_clock, a_driven_clock_stands_where_it_is_put_and_moves_by_its_steps_only) {
  {
    crawler::driven_clock clock(seconds(1));
    EXPECT_EQ(crawl_clock::now().time_since_epoch(), seconds(1));
    EXPECT_EQ(crawl_clock::now(), crawl_clock::now());  // no time passes by itself
    clock.advance(seconds(0));                             // a step of nothing is allowed
    EXPECT_EQ(crawl_clock::now().time_since_epoch(), seconds(1));
    clock.advance(seconds(599));
    EXPECT_EQ(crawl_clock::now().time_since_epoch(), seconds(600));
    EXPECT_DOUBLE_EQ(crawler::seconds_since(crawl_clock::time_point(seconds(0))), 600.0);
    EXPECT_THROW(clock.advance(-std::chrono::nanoseconds(1)), std::invalid_argument);
    EXPECT_EQ(crawl_clock::now().time_since_epoch(), seconds(600));
    EXPECT_THROW(crawler::driven_clock second, std::logic_error);  // one driver at a time
    EXPECT_EQ(crawl_clock::now().time_since_epoch(), seconds(600));
  }
  // Its driver gone, the clock is the machine's again, which has been running all along.
  auto machine = std::chrono::steady_clock::now().time_since_epoch();
  EXPECT_GE(crawl_clock::now().time_since_epoch(), machine);
}

TEST(crawl_clock, while_driven_the_loop_looks_at_the_clock_every_millisecond) {
  using traits = crawler::crawl_clock_wait_traits;
  EXPECT_EQ(traits::to_wait_duration(crawl_clock::duration(seconds(600))), seconds(600));
  crawler::driven_clock clock;
  EXPECT_EQ(traits::to_wait_duration(crawl_clock::duration(seconds(600))),
            std::chrono::milliseconds(1));
  EXPECT_EQ(traits::to_wait_duration(crawl_clock::now() - seconds(1)), crawl_clock::duration(0));
  // A due time, as Asio's wait traits may be asked for one: at most a millisecond away too.
  EXPECT_EQ(traits::to_wait_duration(crawl_clock::now() + seconds(600)),
            std::chrono::milliseconds(1));
  EXPECT_EQ(traits::to_wait_duration(crawl_clock::now() + std::chrono::microseconds(500)),
            std::chrono::microseconds(500));
}

}  // namespace
