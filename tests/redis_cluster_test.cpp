// redis::client on a real Redis Cluster (three masters on loopback, redis-cli --cluster create):
// slots as the nodes compute them, commands routed to their slot's master, MOVED and ASK
// followed through resharding, and REDIS_CLUSTER_NODES read from settings; and, from a scripted
// node, redirects no real node sends.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <boost/asio/use_future.hpp>
#include <functional>

#include "config/settings.h"
#include "event_loop.h"
#include "redis/client.h"
#include "redis/cluster_slots.h"
#include "redis/endpoint.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "scripted_cluster_node.h"

using namespace crawler;
using boost::asio::use_future;

namespace {

// One cluster for the suite: creating one takes a second or two. Each test uses keys of its own.
class redis_cluster_client : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new fixtures::redis_cluster(3); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  std::shared_ptr<redis::client> connect() {
    crawler::settings settings;
    settings.set_from_string("REDIS_CLUSTER_NODES=" + cluster_->seeds());
    return redis::client::create(loop_.executor(), redis::endpoint_from(settings));
  }

  // What the node at `port` itself answers to GET `key` (a value, or its MOVED / ASK error).
  static std::string get_at(int port, const std::string& key) {
    auto* context = redisConnect("127.0.0.1", port);
    auto* reply = static_cast<redisReply*>(redisCommand(context, "GET %b", key.data(), key.size()));
    std::string out = reply && reply->str ? std::string(reply->str, reply->len) : "(nil)";
    if (reply) freeReplyObject(reply);
    redisFree(context);
    return out;
  }

  static fixtures::redis_cluster* cluster_;
  fixtures::event_loop loop_;
};

fixtures::redis_cluster* redis_cluster_client::cluster_ = nullptr;

std::string slot_by_redis(int port, const std::string& key) {
  auto* context = redisConnect("127.0.0.1", port);
  auto* reply =
      static_cast<redisReply*>(redisCommand(context, "CLUSTER KEYSLOT %b", key.data(), key.size()));
  auto slot = std::to_string(reply->integer);
  freeReplyObject(reply);
  redisFree(context);
  return slot;
}

}  // namespace

TEST_F(redis_cluster_client, computes_every_keys_slot_as_the_nodes_do) {
  EXPECT_EQ(redis::key_slot("123456789"), 12739);  // the cluster spec's check value
  for (std::string key : {"books:requests", "{books}:requests", "{books}:dupefilter", "foo{}{bar}",
                          "foo{{bar}}zap", "foo{bar}{zap}", "{", "}{x}", "", "\xff\x01 binary"}) {
    EXPECT_EQ(std::to_string(redis::key_slot(key)), slot_by_redis(cluster_->ports()[0], key))
        << key;
  }
  EXPECT_EQ(redis::key_slot("{books}:requests"), redis::key_slot("{books}:items"));
}

TEST(redis_cluster_routing, a_command_goes_by_its_first_key_and_a_script_by_its_first_of_keys) {
  EXPECT_EQ(redis::routing_key({"HGET", "h", "f"}), "h");
  EXPECT_EQ(redis::routing_key({"EVALSHA", "abc", "2", "k1", "k2", "arg"}), "k1");
  EXPECT_EQ(redis::routing_key({"eval", "return 1", "0", "arg"}), std::nullopt);
  // A count that names a key the command does not carry, or is no count: no key to go by.
  EXPECT_EQ(redis::routing_key({"EVAL", "return 1", "1"}), std::nullopt);
  EXPECT_EQ(redis::routing_key({"EVAL", "return 1"}), std::nullopt);
  EXPECT_EQ(redis::routing_key({"EVAL", "return 1", "x", "k"}), std::nullopt);
  EXPECT_EQ(redis::routing_key({"FCALL", "f", "1", "k"}), "k");
  // An empty key is a key (slot 0, as computes_every_keys_slot_as_the_nodes_do checks), and a
  // count is read whole, however long the key after it.
  EXPECT_EQ(redis::routing_key({"EVAL", "return 1", "1", ""}), "");
  EXPECT_EQ(redis::routing_key({"EVAL", "return 1", "0", ""}), std::nullopt);
  EXPECT_EQ(redis::routing_key({"TIME"}), std::nullopt);
  EXPECT_EQ(redis::routing_key({"INFO", "memory"}), std::nullopt);
  EXPECT_EQ(redis::routing_key({"OBJECT", "ENCODING", "k"}), "k");
  // Their subcommands without a key: none to go by (and nothing read past the last word).
  EXPECT_EQ(redis::routing_key({"MEMORY", "STATS"}), std::nullopt);
  EXPECT_EQ(redis::routing_key({"OBJECT", "HELP"}), std::nullopt);
}

TEST_F(redis_cluster_client, sends_each_command_to_its_slots_master_and_answers_in_order) {
  auto client = connect();
  std::vector<redis::command> sets, gets;
  for (int i = 0; i < 300; ++i) {
    sets.push_back({"SET", "route:" + std::to_string(i), "value " + std::to_string(i)});
    gets.push_back({"GET", "route:" + std::to_string(i)});
  }
  gets.push_back({"TIME"});  // no key: it goes along with the first keyed command
  for (const auto& answer : client->async_pipeline(sets, use_future).get())
    ASSERT_EQ(answer.str, "OK") << answer.describe();
  auto values = client->async_pipeline(gets, use_future).get();
  ASSERT_EQ(values.size(), 301u);
  std::set<int> masters_used;
  for (int i = 0; i < 300; ++i) {
    auto key = "route:" + std::to_string(i);
    EXPECT_EQ(values[i].str, "value " + std::to_string(i));
    int owner = cluster_->owner_of(redis::key_slot(key));
    masters_used.insert(owner);
    EXPECT_EQ(get_at(owner, key), "value " + std::to_string(i));  // stored where it belongs
  }
  EXPECT_EQ(masters_used.size(), 3u);
  EXPECT_EQ(values[300].elements.size(), 2u) << values[300].describe();
}

TEST_F(redis_cluster_client, a_script_whose_keys_share_a_tag_runs_and_one_across_slots_is_refused) {
  auto client = connect();
  const char* script = "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[2])";
  auto together = client->async_command({"EVAL", script, "2", "{tagged}:a", "{tagged}:b", "x"},
                                        use_future)
                      .get();
  EXPECT_EQ(together.integer, 1) << together.describe();
  ASSERT_NE(redis::key_slot("apart:a"), redis::key_slot("apart:b"));
  auto apart = client->async_command({"EVAL", script, "2", "apart:a", "apart:b", "x"}, use_future)
                   .get();
  EXPECT_TRUE(apart.is_error());
  EXPECT_TRUE(apart.str.starts_with("CROSSSLOT")) << apart.str;
}

// A reshard moves slots while the client holds the old map: the old owner answers MOVED, and the
// client follows it, reads the new map, and loses no write.
// A slot no master holds (unassigned by an operator mid-maintenance): its command gets an error
// that names the slot and the cluster, at once, while the other slots' commands are served; and
// the client says which cluster it is (its seeds' address) wherever it names where it is.
TEST_F(redis_cluster_client, a_slot_no_master_holds_is_an_error_naming_it_and_the_rest_are_served) {
  const std::string key = "unserved:key";
  int slot = redis::key_slot(key);
  auto on_node = [](int port, const std::string& command) {
    auto* context = redisConnect("127.0.0.1", port);
    freeReplyObject(redisCommand(context, command.c_str()));
    redisFree(context);
  };
  // The suite's later tests need every slot served (a cluster short of one answers CLUSTERDOWN
  // to every key): its owner takes it back however this test ends.
  struct slot_given_back {
    std::function<void()> give_back;
    ~slot_given_back() { give_back(); }
  } restore{[&, owner = cluster_->owner_of(slot)] {
    on_node(owner, "CLUSTER ADDSLOTS " + std::to_string(slot));
    on_node(owner, "CLUSTER BUMPEPOCH");
    cluster_->wait_until_stable();
  }};
  for (int port : cluster_->ports()) {  // every node forgets who serves it
    on_node(port, "CLUSTER DELSLOTS " + std::to_string(slot));
  }
  auto client = connect();
  auto where = client->where().address();
  EXPECT_NE(where.find(std::to_string(cluster_->ports()[0])), std::string::npos) << where;
  std::vector<redis::command> commands{{"GET", key}, {"PING"}};
  auto replies = client->async_pipeline(commands, use_future).get();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_TRUE(replies[0].is_error());
  EXPECT_EQ(replies[0].str, "CLUSTERDOWN Hash slot not served (no master of " + where +
                                " holds slot " + std::to_string(slot) + ")");
  EXPECT_EQ(replies[1].str, "PONG");
}

TEST_F(redis_cluster_client, follows_moved_when_a_reshard_moved_the_slot) {
  auto client = connect();
  const std::string key = "moving:key";
  ASSERT_EQ(client->async_command({"SET", key, "before"}, use_future).get().str, "OK");
  int from = cluster_->owner_of(redis::key_slot(key));
  int to = from == cluster_->ports()[0] ? cluster_->ports()[1] : cluster_->ports()[0];
  int slot = redis::key_slot(key);
  cluster_->begin_move(slot, to, {});
  cluster_->finish_move(slot, to);
  EXPECT_TRUE(get_at(from, key).starts_with("MOVED")) << get_at(from, key);
  EXPECT_EQ(client->async_command({"GET", key}, use_future).get().str, "before");
  EXPECT_EQ(client->async_command({"SET", key, "after"}, use_future).get().str, "OK");
  EXPECT_EQ(get_at(to, key), "after");
}

// Mid-migration, the old owner answers ASK for a key already moved (and for a new one), and
// keeps serving the keys still with it: the client reaches each where it is, and after the move
// every value is where the new map says.
TEST_F(redis_cluster_client, follows_ask_while_a_slot_is_migrating) {
  auto client = connect();
  const std::string moved = "{migrating}:moved", staying = "{migrating}:staying",
                    added = "{migrating}:added";
  int slot = redis::key_slot(moved);
  client->async_pipeline({{"SET", moved, "1"}, {"SET", staying, "2"}}, use_future).get();
  int from = cluster_->owner_of(slot);
  int to = from == cluster_->ports()[2] ? cluster_->ports()[1] : cluster_->ports()[2];
  cluster_->begin_move(slot, to, {moved});
  ASSERT_TRUE(get_at(from, moved).starts_with("ASK")) << get_at(from, moved);
  auto replies = client->async_pipeline({{"GET", moved}, {"GET", staying}, {"SET", added, "3"}},
                                        use_future)
                     .get();
  EXPECT_EQ(replies[0].str, "1") << replies[0].describe();
  EXPECT_EQ(replies[1].str, "2") << replies[1].describe();
  EXPECT_EQ(replies[2].str, "OK") << replies[2].describe();
  cluster_->finish_move(slot, to);
  auto after = client->async_pipeline({{"GET", moved}, {"GET", staying}, {"GET", added}},
                                      use_future)
                   .get();
  EXPECT_EQ(after[0].str + after[1].str + after[2].str, "123");
  EXPECT_EQ(get_at(to, added), "3");
}

TEST_F(redis_cluster_client, a_redis_cluster_reshard_under_a_stream_of_writes_loses_none) {
  auto client = connect();
  int from = cluster_->ports()[1], to = cluster_->ports()[2];
  // Keys in the slots the reshard moves: the first 300 of `from`.
  int first = cluster_->first_slot_of(from);
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 50; ++i) {
    auto key = "stream:" + std::to_string(i);
    if (redis::key_slot(key) >= first && redis::key_slot(key) < first + 300) keys.push_back(key);
  }
  std::atomic<bool> writing{true};
  std::atomic<int> written{0};
  std::string failure;
  std::thread writer([&] {
    for (int i = 0; writing || i < 200; ++i) {
      try {
        auto answer =
            client->async_command({"RPUSH", keys[i % 50], std::to_string(i)}, use_future)
                .get();
        if (answer.is_error()) {
          failure = answer.describe();
          return;
        }
        written = i + 1;
      } catch (const std::exception& e) {
        failure = e.what();
        return;
      }
    }
  });
  cluster_->reshard(from, to, 300);
  writing = false;
  writer.join();
  ASSERT_EQ(failure, "");
  std::vector<redis::command> lengths;
  for (const auto& key : keys) lengths.push_back({"LLEN", key});
  long long total = 0;
  for (const auto& answer : client->async_pipeline(lengths, use_future).get())
    total += answer.integer;
  EXPECT_EQ(total, written.load());
  for (const auto& key : keys) EXPECT_EQ(cluster_->owner_of(redis::key_slot(key)), to) << key;
}

TEST_F(redis_cluster_client, a_seed_that_is_no_cluster_node_is_an_error_naming_it) {
  fixtures::redis_server plain;
  crawler::settings settings;
  settings.set_from_string("REDIS_CLUSTER_NODES=127.0.0.1:" + std::to_string(plain.port()));
  auto client = redis::client::create(loop_.executor(), redis::endpoint_from(settings));
  try {
    client->async_command({"GET", "k"}, use_future).get();
    FAIL() << "a plain server served as a cluster";
  } catch (const redis::redis_error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("127.0.0.1:" + std::to_string(plain.port())), std::string::npos)
        << message;
    EXPECT_NE(message.find("cluster"), std::string::npos) << message;
  }
}

// A node that has met no other does not know its own address: CLUSTER SLOTS names it with an
// empty host. The client reaches it where it asked (the seed's host), as for "?".
TEST(redis_cluster_one_node, a_node_that_names_itself_without_a_host_is_reached_at_the_seeds) {
  fixtures::redis_cluster cluster(1);
  auto& node = cluster.node(0);
  auto* context = redisConnect("127.0.0.1", node.port());
  ASSERT_TRUE(context && !context->err);
  auto* slots = static_cast<redisReply*>(redisCommand(context, "CLUSTER SLOTS"));
  ASSERT_TRUE(slots && slots->elements == 1 && slots->element[0]->elements >= 3);
  EXPECT_EQ(std::string(slots->element[0]->element[2]->element[0]->str), "");  // as Redis says
  freeReplyObject(slots);
  redisFree(context);

  fixtures::event_loop loop;
  crawler::settings settings;
  settings.set_from_string("REDIS_CLUSTER_NODES=127.0.0.1:" + std::to_string(node.port()));
  auto client = redis::client::create(loop.executor(), redis::endpoint_from(settings));
  EXPECT_EQ(client->async_command({"SET", "k", "v"}, use_future).get().str, "OK");
  EXPECT_EQ(client->async_command({"GET", "k"}, use_future).get().str, "v");
  // Gone, it is named as an address is written: an IPv4 host bare, not in IPv6's brackets.
  node.stop();
  std::string said;
  try {
    auto answer = client->async_command({"GET", "k"}, use_future).get();
    said = answer.str;
  } catch (const std::exception& error) {
    said = error.what();
  }
  auto address = "127.0.0.1:" + std::to_string(node.port());
  EXPECT_NE(said.find(address), std::string::npos) << said;
  EXPECT_EQ(said.find("[127.0.0.1]"), std::string::npos) << said;
}

// A MOVED is input like any reply: one whose slot is no number or past 16383, or whose node has
// no port, is no redirect, and the caller gets it as the error it is; a good one is followed. No
// real node sends the bad ones, so a scripted node does, pointing at a server that holds the key.
TEST(redis_cluster_one_node, a_moved_that_names_no_slot_or_no_port_is_an_error_not_followed) {
  fixtures::redis_server holder;
  std::string key;
  for (int i = 0; redis::key_slot(key = "moved:" + std::to_string(i)) != 0; ++i) {
  }
  auto* context = redisConnect("127.0.0.1", holder.port());
  ASSERT_TRUE(context && !context->err);
  freeReplyObject(redisCommand(context, "SET %s held", key.c_str()));
  redisFree(context);
  auto there = "127.0.0.1:" + std::to_string(holder.port());
  fixtures::event_loop loop;
  auto get_through = [&](const std::string& moved, std::size_t expected_gets) {
    fixtures::scripted_cluster_node node(moved);
    crawler::settings settings;
    settings.set_from_string("REDIS_CLUSTER_NODES=127.0.0.1:" + std::to_string(node.port()));
    auto client = redis::client::create(loop.executor(), redis::endpoint_from(settings));
    auto answer = client->async_command({"GET", key}, use_future).get();
    EXPECT_EQ(node.commands("GET"), expected_gets) << moved;
    client->close();
    return answer;
  };
  const std::vector<std::string> bad_ones = {"MOVED abc " + there, "MOVED 16384 " + there,
                                             "MOVED 0 127.0.0.1", "MOVED 0 127.0.0.1:0",
                                             "MOVED " + there};
  for (const auto& bad : bad_ones) {
    auto answer = get_through(bad, 1);
    EXPECT_TRUE(answer.is_error()) << bad << ": " << answer.describe();
    EXPECT_EQ(answer.str, bad);
  }
  EXPECT_EQ(get_through("MOVED 0 " + there, 1).str, "held");
  EXPECT_EQ(get_through("MOVED 16383 " + there, 6).str, "MOVED 16383 " + there)
      << "a slot moved that is not the key's: the key's master asked again, up to 5 redirects";
}

TEST(redis_cluster_settings, cluster_nodes_come_from_a_list_or_commas_and_bad_ones_are_named) {
  crawler::settings settings;
  settings.set_from_string("REDIS_CLUSTER_NODES=10.0.0.1:7000,10.0.0.2:7001");
  auto where = redis::endpoint_from(settings);
  ASSERT_EQ(where.cluster_nodes.size(), 2u);
  EXPECT_EQ(where.cluster_nodes[1].host, "10.0.0.2");
  EXPECT_EQ(where.cluster_nodes[1].port, 7001);
  EXPECT_EQ(where.address(), "redis cluster 10.0.0.1:7000,10.0.0.2:7001");

  settings.set_from_string("REDIS_CLUSTER_NODES=10.0.0.1:7000,10.0.0.2");
  try {
    redis::endpoint_from(settings);
    FAIL();
  } catch (const settings_error& error) {
    EXPECT_NE(std::string(error.what()).find("REDIS_CLUSTER_NODES[1]"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("no port"), std::string::npos) << error.what();
  }
  settings.set_from_string("REDIS_CLUSTER_NODES=10.0.0.1:7000");
  settings.set("REDIS_URL", "redis://10.0.0.1:7000/2");
  try {
    redis::endpoint_from(settings);
    FAIL();
  } catch (const settings_error& error) {
    EXPECT_NE(std::string(error.what()).find("only database 0"), std::string::npos)
        << error.what();
  }
}

// A map reading that failed leaves nothing owed: the readings asked for while it ran failed with
// it, and the cluster, once back, is read once, not once more for a request long answered.
TEST(redis_cluster_one_node, a_map_reading_that_failed_is_not_read_again_after_the_next) {
  fixtures::redis_cluster cluster(1);
  auto& node = cluster.node(0);
  node.stop();
  fixtures::event_loop loop;
  crawler::settings settings;
  settings.set_from_string("REDIS_CLUSTER_NODES=127.0.0.1:" + std::to_string(node.port()));
  auto client = redis::client::create(loop.executor(), redis::endpoint_from(settings));
  // Both wait for one reading of the map: the second asks for another while the first runs.
  auto first = client->async_command({"GET", "k"}, use_future);
  auto second = client->async_command({"GET", "k"}, use_future);
  EXPECT_THROW(first.get(), redis::redis_error);
  EXPECT_THROW(second.get(), redis::redis_error);

  node.start();
  cluster.wait_until_stable();  // which reads the map itself: counts from here
  auto* context = redisConnect("127.0.0.1", node.port());
  ASSERT_TRUE(context && !context->err);
  freeReplyObject(redisCommand(context, "CONFIG RESETSTAT"));
  redisFree(context);
  EXPECT_EQ(client->async_command({"SET", "k", "v"}, use_future).get().str, "OK");
  // INFO has no key: it follows the SET on the node's one connection, after any reading the
  // SET's map left behind.
  auto stats = client->async_command({"INFO", "commandstats"}, use_future).get().str;
  auto line = stats.find("cmdstat_cluster|slots:calls=");
  ASSERT_NE(line, std::string::npos) << stats;
  EXPECT_EQ(stats.substr(line, stats.find(',', line) - line), "cmdstat_cluster|slots:calls=1");
}

// A real cluster's masters live on hosts of their own: a worker given one of them as its seed
// reaches the others where CLUSTER SLOTS says they are (here each listens on a loopback address
// of its own, alone), never at the seed's host.
TEST(redis_cluster_hosts, masters_on_three_hosts_are_reached_where_the_map_names_them) {
  fixtures::redis_cluster cluster(3, {"127.0.0.1", "127.0.0.2", "127.0.0.3"});
  fixtures::event_loop loop;
  crawler::settings settings;
  settings.set_from_string("REDIS_CLUSTER_NODES=127.0.0.1:" +
                           std::to_string(cluster.ports()[0]));
  auto client = redis::client::create(loop.executor(), redis::endpoint_from(settings));
  std::vector<redis::command> sets, gets;
  std::set<int> masters_used;
  for (int i = 0; i < 60; ++i) {
    auto key = "host:" + std::to_string(i);
    sets.push_back({"SET", key, "value " + std::to_string(i)});
    gets.push_back({"GET", key});
    masters_used.insert(cluster.owner_of(redis::key_slot(key)));
  }
  ASSERT_EQ(masters_used.size(), 3u);
  for (const auto& answer : client->async_pipeline(sets, use_future).get())
    ASSERT_EQ(answer.str, "OK") << answer.describe();
  auto values = client->async_pipeline(gets, use_future).get();
  for (int i = 0; i < 60; ++i) EXPECT_EQ(values[i].str, "value " + std::to_string(i));
}
