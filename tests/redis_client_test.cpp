#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <chrono>

#include "config/settings.h"
#include "event_loop.h"
#include "redis/backoff.h"
#include "redis/endpoint.h"
#include "redis/client.h"
#include "redis/reply_error.h"
#include "redis_server.h"
#include "refusing_port.h"

using namespace crawler;
using boost::asio::use_future;
using redis::reply;

namespace {

std::string message_of(std::future<reply>& future) {
  try {
    future.get();
  } catch (const redis::redis_error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST(redis_backoff, doubles_up_to_its_longest_wait_and_starts_over_after_a_success) {
  using std::chrono::milliseconds;
  crawler::redis::backoff wait{milliseconds(100), milliseconds(500)};
  EXPECT_EQ(wait.next(), milliseconds(100));
  EXPECT_EQ(wait.next(), milliseconds(200));
  EXPECT_EQ(wait.next(), milliseconds(400));
  EXPECT_EQ(wait.peek(), milliseconds(500));
  EXPECT_EQ(wait.next(), milliseconds(500));
  EXPECT_EQ(wait.next(), milliseconds(500));
  wait.reset();
  EXPECT_EQ(wait.next(), milliseconds(100));
}

TEST(redis_url, parses_password_host_port_and_db) {
  auto where = redis::parse_redis_url("redis://:s3cret@cache.internal:6380/4");
  EXPECT_EQ(where.host, "cache.internal");
  EXPECT_EQ(where.port, 6380);
  EXPECT_EQ(where.password, "s3cret");
  EXPECT_EQ(where.db, 4);
  EXPECT_EQ(where.address(), "redis://cache.internal:6380/4");  // never the password
  auto v6 = redis::parse_redis_url("redis://[::1]:7000");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 7000);
}

TEST(redis_url, rejects_malformed_urls_naming_the_url_and_the_part) {
  EXPECT_THROW(redis::parse_redis_url("http://localhost"), redis::redis_error);
  try {
    redis::parse_redis_url("redis://localhost:99999/0");
    FAIL();
  } catch (const redis::redis_error& error) {
    EXPECT_NE(std::string(error.what()).find("redis://localhost:99999/0"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("bad port '99999'"), std::string::npos);
  }
  EXPECT_THROW(redis::parse_redis_url("redis://localhost/x"), redis::redis_error);
}

// Without REDIS_URL, REDIS_HOST and REDIS_PORT say where, and REDIS_PARAMS how, as scrapy-redis
// reads them: its password is sent with AUTH and its db selected.
TEST(redis_url, redis_host_port_and_params_are_used_when_redis_url_is_unset) {
  fixtures::redis_server server({.password = "pw-in-params"});
  crawler::settings settings;
  settings.set("REDIS_HOST", "127.0.0.1");
  settings.set("REDIS_PORT", server.port());
  settings.set_from_string(
      R"(REDIS_PARAMS={"password": "pw-in-params", "db": 3, "socket_timeout": 2.5})");
  auto where = redis::endpoint_from(settings);
  EXPECT_EQ(where.address(), "redis://127.0.0.1:" + std::to_string(server.port()) + "/3");
  EXPECT_EQ(where.command_timeout, std::chrono::milliseconds(2500));
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), where);
  auto replies = client->async_pipeline({{"SET", "k", "v"}}, use_future).get();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_FALSE(replies[0].is_error()) << replies[0].str;
  // It landed in db 3, reached with the password.
  auto in_db3 = redis::client::create(
      loop.executor(), redis::parse_redis_url("redis://:pw-in-params@127.0.0.1:" +
                                              std::to_string(server.port()) + "/3"));
  auto got = in_db3->async_pipeline({{"GET", "k"}}, use_future).get();
  EXPECT_EQ(got[0].str, "v");
}

TEST(redis_client, pipelines_commands_and_returns_replies_in_order) {
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  std::vector<redis::command> commands;
  for (int i = 0; i < 100; ++i) commands.push_back({"RPUSH", "list", std::to_string(i)});
  commands.push_back({"LRANGE", "list", "98", "-1"});
  commands.push_back({"NOSUCHCOMMAND"});
  auto replies = client->async_pipeline(commands, use_future).get();
  ASSERT_EQ(replies.size(), 102u);
  EXPECT_EQ(replies[0].integer, 1);
  EXPECT_EQ(replies[99].integer, 100);
  ASSERT_EQ(replies[100].elements.size(), 2u);
  EXPECT_EQ(replies[100].elements[1].str, "99");
  EXPECT_TRUE(replies[101].is_error());  // an error reply is a reply, not an exception
}

// The answers a real server gives (WRONGTYPE, a script's runtime error, OOM once maxmemory is
// reached) read for whether trying again can help, and the few that mean "not now".
TEST(redis_reply_error, only_not_now_and_out_of_memory_are_worth_retrying) {
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  auto replies = client
                     ->async_pipeline({{"SET", "s", "x"},
                                       {"LPUSH", "s", "y"},
                                       {"EVAL", "return nil + 1", "0"},
                                       {"CONFIG", "SET", "maxmemory", "1"},
                                       {"SET", "t", "y"}},
                                      use_future)
                     .get();
  using redis::classify_reply_error;
  using kind = redis::reply_error_kind;
  ASSERT_TRUE(replies[1].is_error());
  EXPECT_EQ(classify_reply_error(replies[1].str), kind::permanent) << replies[1].str;
  ASSERT_TRUE(replies[2].is_error());
  EXPECT_EQ(classify_reply_error(replies[2].str), kind::permanent) << replies[2].str;
  ASSERT_TRUE(replies[4].is_error());
  EXPECT_EQ(classify_reply_error(replies[4].str), kind::out_of_memory) << replies[4].str;
  for (const char* not_now :
       {"LOADING Redis is loading the dataset in memory",
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        "READONLY You can't write against a read only replica.", "TRYAGAIN Multiple keys"}) {
    EXPECT_EQ(classify_reply_error(not_now), kind::outage) << not_now;
  }
  redis::reply_error refused("add to site:stats", replies[1].str);
  EXPECT_FALSE(refused.retrying_helps());
  EXPECT_EQ(std::string(refused.what()).find("add to site:stats: WRONGTYPE"), 0u);
}

TEST(redis_client, unreachable_server_fails_with_an_error_naming_the_address) {
  fixtures::event_loop loop;
  fixtures::refusing_port refusing;
  auto nowhere = redis::parse_redis_url("redis://127.0.0.1:" + std::to_string(refusing.port()));
  auto client = redis::client::create(loop.executor(), nowhere);
  auto future = client->async_command({"PING"}, use_future);
  std::string message = message_of(future);
  EXPECT_NE(
      message.find("cannot connect to Redis at redis://127.0.0.1:" + std::to_string(nowhere.port)),
      std::string::npos)
      << message;
}

// A Redis that is away is not hammered: after a failed attempt the next waits 100 ms, the one
// after 200 ms. Times are lower bounds from before the first command, which a loaded machine only
// makes longer.
TEST(redis_client, after_a_failed_connection_the_next_attempts_wait_100_then_200_ms) {
  fixtures::event_loop loop;
  fixtures::refusing_port refusing;
  auto nowhere = redis::parse_redis_url("redis://127.0.0.1:" + std::to_string(refusing.port()));
  auto client = redis::client::create(loop.executor(), nowhere);
  auto started = std::chrono::steady_clock::now();
  auto since_start = [&] { return std::chrono::steady_clock::now() - started; };
  auto first = client->async_command({"PING"}, use_future);
  EXPECT_NE(message_of(first).find("cannot connect"), std::string::npos);
  auto second = client->async_command({"PING"}, use_future);  // waits for the next attempt
  EXPECT_NE(message_of(second).find("cannot connect"), std::string::npos);
  EXPECT_GE(since_start(), std::chrono::milliseconds(100));
  auto third = client->async_command({"PING"}, use_future);
  EXPECT_NE(message_of(third).find("cannot connect"), std::string::npos);
  EXPECT_GE(since_start(), std::chrono::milliseconds(100 + 200));
}

TEST(redis_client, authenticates_and_selects_the_database_from_the_url) {
  fixtures::redis_server server({.password = "hunter2"});
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url() + "/3"));
  EXPECT_EQ(client->async_command({"SET", "k", "v"}, use_future).get().str, "OK");
  auto other = redis::client::create(loop.executor(), redis::parse_redis_url(server.url() + "/0"));
  EXPECT_EQ(other->async_command({"EXISTS", "k"}, use_future).get().integer, 0);
  EXPECT_EQ(other->async_command({"SELECT", "3"}, use_future).get().str, "OK");
  EXPECT_EQ(other->async_command({"GET", "k"}, use_future).get().str, "v");
}

TEST(redis_client, wrong_password_is_an_error_naming_the_address) {
  fixtures::redis_server server({.password = "right"});
  fixtures::event_loop loop;
  auto where = redis::parse_redis_url(server.url());
  where.password = "wrong";
  auto client = redis::client::create(loop.executor(), where);
  auto future = client->async_command({"PING"}, use_future);
  std::string message = message_of(future);
  EXPECT_NE(message.find("refused AUTH"), std::string::npos) << message;
  EXPECT_NE(message.find(where.address()), std::string::npos) << message;
}

TEST(redis_client, a_server_that_does_not_answer_times_out) {
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto where = redis::parse_redis_url(server.url());
  where.command_timeout = std::chrono::milliseconds(200);
  auto client = redis::client::create(loop.executor(), where);
  auto future = client->async_command({"DEBUG", "SLEEP", "1"}, use_future);
  std::string message = message_of(future);
  EXPECT_NE(message.find("did not answer within 200 ms"), std::string::npos) << message;
}

TEST(redis_client, reconnects_after_the_server_restarts) {
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  EXPECT_EQ(client->async_command({"PING"}, use_future).get().str, "PONG");
  server.stop();
  auto lost = client->async_command({"PING"}, use_future);
  EXPECT_NE(message_of(lost), "(no error)");
  server.start();
  // The first attempt after a failure waits out the backoff; within a few seconds it connects.
  std::string answer;
  for (int attempt = 0; attempt < 50 && answer != "PONG"; ++attempt) {
    try {
      answer = client->async_command({"PING"}, use_future).get().str;
    } catch (const redis::redis_error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  EXPECT_EQ(answer, "PONG");
}

TEST(redis_client, closing_fails_pending_commands_instead_of_dropping_them) {
  fixtures::redis_server server;
  fixtures::event_loop loop;
  auto client = redis::client::create(loop.executor(), redis::parse_redis_url(server.url()));
  auto slow = client->async_command({"DEBUG", "SLEEP", "0.5"}, use_future);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  client->close();
  EXPECT_NE(message_of(slow).find("closed"), std::string::npos);
  auto after = client->async_command({"PING"}, use_future);
  EXPECT_NE(message_of(after).find("closed"), std::string::npos);
}
