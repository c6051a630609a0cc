// The RedisBloom stand-in answers as shared/REDISBLOOM.md records the real module answering.
#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>

#include "event_loop.h"
#include "redis/client.h"
#include "redis_server.h"

using namespace crawler;
using boost::asio::use_future;

class redisbloom_module : public ::testing::Test {
 protected:
  std::string ask(redis::command args) {
    return client_->async_command(std::move(args), use_future).get().describe();
  }
  fixtures::redis_server server_{{.load_redisbloom = true}};
  fixtures::event_loop loop_;
  std::shared_ptr<redis::client> client_ = redis::client::create(loop_.executor(), redis::parse_redis_url(server_.url()));
};

TEST_F(redisbloom_module, reserve_answers_and_errors_as_recorded) {
  EXPECT_EQ(ask({"BF.RESERVE", "k", "0.01", "1000"}), "OK");
  EXPECT_EQ(ask({"BF.RESERVE", "k", "0.01", "1000"}), "(error) ERR item exists");
  EXPECT_EQ(ask({"BF.RESERVE", "x", "abc", "10"}), "(error) ERR bad error rate");
  EXPECT_EQ(ask({"BF.RESERVE", "x", "1.5", "10"}), "(error) ERR (0 < error rate range < 1) ");
  EXPECT_EQ(ask({"BF.RESERVE", "x", "0.1", "ten"}), "(error) ERR bad capacity");
  EXPECT_EQ(ask({"BF.RESERVE", "x", "0.1", "0"}), "(error) ERR (capacity should be larger than 0)");
  EXPECT_EQ(ask({"BF.RESERVE", "x", "0.1", "10", "EXPANSION"}), "(error) ERR no expansion");
  EXPECT_EQ(ask({"BF.RESERVE", "x", "0.1", "10", "EXPANSION", "big"}), "(error) ERR bad expansion");
  EXPECT_EQ(ask({"BF.RESERVE", "x", "0.1", "10", "EXPANSION", "4", "NONSCALING"}),
            "(error) Nonscaling filters cannot expand");
  EXPECT_EQ(ask({"BF.RESERVE", "x"}), "(error) ERR wrong number of arguments for 'bf.reserve' command");
  EXPECT_EQ(ask({"TYPE", "k"}), "MBbloom--");
}

TEST_F(redisbloom_module, madd_exists_info_and_card_answer_as_recorded) {
  EXPECT_EQ(ask({"BF.RESERVE", "k", "0.01", "1000"}), "OK");
  EXPECT_EQ(ask({"BF.MADD", "k", "a", "d", "a"}), "[(integer) 1, (integer) 1, (integer) 0]");
  EXPECT_EQ(ask({"BF.ADD", "k", "a"}), "(integer) 0");
  EXPECT_EQ(ask({"BF.MEXISTS", "k", "a", "zzz", "d"}), "[(integer) 1, (integer) 0, (integer) 1]");
  EXPECT_EQ(ask({"BF.EXISTS", "missing", "a"}), "(integer) 0");
  EXPECT_EQ(ask({"BF.CARD", "k"}), "(integer) 2");
  EXPECT_EQ(ask({"BF.CARD", "missing"}), "(integer) 0");
  EXPECT_EQ(ask({"BF.INFO", "k", "CAPACITY"}), "[(integer) 1000]");
  EXPECT_EQ(ask({"BF.INFO", "missing"}), "(error) ERR not found");
  auto info = client_->async_command({"BF.INFO", "k"}, use_future).get();
  ASSERT_EQ(info.elements.size(), 10u);
  EXPECT_EQ(info.elements[0].str, "Capacity");
  EXPECT_EQ(info.elements[6].str, "Number of items inserted");
  EXPECT_EQ(info.elements[7].integer, 2);
}

TEST_F(redisbloom_module, another_type_is_wrongtype_for_writes_and_zero_for_exists) {
  EXPECT_EQ(ask({"SET", "s", "1"}), "OK");
  EXPECT_EQ(ask({"BF.ADD", "s", "x"}), "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
  EXPECT_EQ(ask({"BF.INFO", "s"}), "(error) WRONGTYPE Operation against a key holding the wrong kind of value");
  EXPECT_EQ(ask({"BF.EXISTS", "s", "x"}), "(integer) 0");
}

TEST_F(redisbloom_module, a_full_nonscaling_filter_stops_madd_at_the_error) {
  EXPECT_EQ(ask({"BF.RESERVE", "n", "0.01", "2", "NONSCALING"}), "OK");
  EXPECT_EQ(ask({"BF.MADD", "n", "a", "b", "c", "d"}),
            "[(integer) 1, (integer) 1, (error) ERR non scaling filter is full]");
  EXPECT_EQ(ask({"BF.ADD", "n", "a"}), "(integer) 0");  // present items still answer 0
  EXPECT_EQ(ask({"BF.INFO", "n", "EXPANSION"}), "[(nil)]");
}

TEST_F(redisbloom_module, a_scaling_filter_grows_instead_of_filling_up) {
  EXPECT_EQ(ask({"BF.RESERVE", "g", "0.01", "100"}), "OK");
  redis::command add = {"BF.MADD", "g"};
  for (int i = 0; i < 1000; ++i) add.push_back("item" + std::to_string(i));
  auto answers = client_->async_command(add, use_future).get();
  int added = 0;
  for (const auto& answer : answers.elements) added += answer.integer;
  EXPECT_GE(added, 980);  // a 1% filter may call up to ~1% of new items present
  auto filters = client_->async_command({"BF.INFO", "g", "FILTERS"}, use_future).get();
  EXPECT_GE(filters.elements.at(0).integer, 4);
}
