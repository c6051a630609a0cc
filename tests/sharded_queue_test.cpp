// SCHEDULER_SHARDS: the fleet's queue in shards against a real redis-server. Where requests and
// fingerprints land, how a settle whose links cross shards answers, and takes that gather from
// every shard with work.
#include "scheduler/fleet/sharded_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "event_loop.h"
#include "fleet.h"
#include "redis_server.h"
#include "scheduler/host_pace.h"

namespace {

using namespace std::chrono_literals;
using crawler::leased_request;
using crawler::request;
using crawler::settle_result;
using crawler::sharded_queue;
using crawler::fixtures::answer_of;
using crawler::fixtures::event_loop;
using crawler::fixtures::redis_run;
using crawler::fixtures::redis_server;

constexpr auto scheme = crawler::dedup::fingerprint_scheme::scrapy_2_7;

// Shard i's dupefilter: a set, as redis_set's step marks it.
crawler::dedup::redis_marking set_marking(std::size_t shard) {
  return {.lua = "return redis.call('SADD', key, argument) == 1",
          .key = "spider:" + std::to_string(shard) + ":dupefilter",
          .key_type = "set",
          .argument = [](const crawler::dedup::fingerprint& fp) { return fp.hex(); }};
}

struct shard_fixture {
  redis_server server;
  event_loop loop;
  std::shared_ptr<crawler::redis::client> client = crawler::redis::client::create(
      loop.executor(), crawler::redis::parse_redis_url(server.url()));
  std::vector<crawler::dedup::redis_marking> markings{set_marking(0), set_marking(1),
                                                      set_marking(2)};

  sharded_queue queue(const std::string& worker) {
    std::vector<crawler::redis_queue_options> shards;
    std::vector<const crawler::dedup::redis_marking*> steps;
    for (std::size_t i = 0; i < markings.size(); ++i) {
      shards.push_back({.key = "spider:" + std::to_string(i) + ":requests",
                        .worker = worker,
                        .lease = 60s,
                        .items_key = "spider:items",
                        .start_urls_key = "spider:start_urls"});
      steps.push_back(&markings[i]);
    }
    return sharded_queue(client, std::move(shards), std::move(steps));
  }
};

settle_result settle_in(sharded_queue& queue, const std::string& lease,
                        const std::vector<request>& children) {
  return answer_of<settle_result>([&](auto done) {
    if (lease.empty()) return queue.async_push(children, scheme, done);
    queue.async_settle(lease, children, {}, scheme, done);
  });
}

std::vector<leased_request> take_from(sharded_queue& queue, std::size_t count) {
  return answer_of<std::vector<leased_request>>([&](auto done) { queue.async_take(count, done); });
}

// Eight hosts, `pages` URLs each.
std::vector<request> eight_hosts_requests(int pages, const std::string& path = "/p") {
  std::vector<request> requests;
  for (int host = 0; host < 8; ++host) {
    for (int page = 0; page < pages; ++page) {
      requests.emplace_back("http://host" + std::to_string(host) + ".test" + path +
                            std::to_string(page));
    }
  }
  return requests;
}

std::string host_of_entry(const std::string& entry) {
  auto at = entry.find("http://");
  return entry.substr(at + 7, entry.find('/', at + 7) - at - 7);
}

TEST(sharded_queue, each_hosts_requests_and_fingerprints_live_in_its_one_shard) {
  shard_fixture f;
  auto queue = f.queue("w1");
  auto pushed = settle_in(queue, "", eight_hosts_requests(4));
  EXPECT_EQ(pushed.queued, 32u);
  std::map<std::string, std::set<std::size_t>> shards_of_host;
  std::size_t shards_used = 0, queued = 0;
  for (std::size_t shard = 0; shard < 3; ++shard) {
    auto key = "spider:" + std::to_string(shard) + ":requests";
    auto entries = redis_run(f.server.port(), {"ZRANGE", key, "0", "-1"});
    for (const auto& entry : entries) shards_of_host[host_of_entry(entry)].insert(shard);
    // The shard's dupefilter holds exactly its own requests' fingerprints.
    EXPECT_EQ(redis_run(f.server.port(), {"SMEMBERS", "spider:" + std::to_string(shard) +
                                                          ":dupefilter"})
                  .size(),
              entries.size());
    shards_used += entries.empty() ? 0 : 1;
    queued += entries.size();
  }
  EXPECT_EQ(queued, 32u);
  EXPECT_GE(shards_used, 2u) << "eight hosts all hashed to one shard";
  ASSERT_EQ(shards_of_host.size(), 8u);
  for (const auto& [host, shards] : shards_of_host) EXPECT_EQ(shards.size(), 1u) << host;
  EXPECT_EQ(redis_run(f.server.port(), {"TYPE", "spider:requests"}),
            std::vector<std::string>{"none"});
  // The same URLs again, from a second worker: every one a duplicate, in its own shard.
  auto second = f.queue("w2");
  auto again = settle_in(second, "", eight_hosts_requests(4));
  EXPECT_EQ(again.queued, 0u);
  EXPECT_EQ(again.duplicates, 32u);
  EXPECT_EQ(again.duplicate_positions.size(), 32u);
}

TEST(sharded_queue, a_settle_whose_links_cross_shards_names_each_duplicate_by_its_place) {
  shard_fixture f;
  auto queue = f.queue("w1");
  settle_in(queue, "", {request{"http://host0.test/start"}});
  auto taken = take_from(queue, 4);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].lease_id.substr(1, 1), "~") << taken[0].lease_id;
  // Two links of each host, the second of each seen before.
  auto seen = settle_in(queue, "", eight_hosts_requests(1, "/b"));
  ASSERT_EQ(seen.queued, 8u);
  std::vector<request> children;
  for (const auto& link : eight_hosts_requests(1, "/a")) children.push_back(link);
  for (const auto& link : eight_hosts_requests(1, "/b")) children.push_back(link);
  auto settled = settle_in(queue, taken[0].lease_id, children);
  EXPECT_TRUE(settled.settled);
  EXPECT_EQ(settled.queued, 8u);
  EXPECT_EQ(settled.duplicates, 8u);
  std::set<std::size_t> duplicates(settled.duplicate_positions.begin(),
                                   settled.duplicate_positions.end());
  EXPECT_EQ(duplicates, (std::set<std::size_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  // The lease is gone from its shard, and what was queued is in the queue: 8 + 8.
  std::size_t queued = 0, leased = 0;
  for (std::size_t shard = 0; shard < 3; ++shard) {
    auto key = "spider:" + std::to_string(shard) + ":requests";
    queued += redis_run(f.server.port(), {"ZRANGE", key, "0", "-1"}).size();
    leased += redis_run(f.server.port(), {"HKEYS", key + ":leased"}).size();
  }
  EXPECT_EQ(queued, 16u);
  EXPECT_EQ(leased, 0u);
}

TEST(sharded_queue, takes_gather_every_shards_requests_and_leases_renew_and_go_back) {
  shard_fixture f;
  auto queue = f.queue("w1");
  ASSERT_EQ(settle_in(queue, "", eight_hosts_requests(3)).queued, 24u);
  std::vector<leased_request> all;
  for (int round = 0; round < 20 && all.size() < 24; ++round) {
    auto taken = take_from(queue, 5);
    EXPECT_LE(taken.size(), 5u);
    all.insert(all.end(), taken.begin(), taken.end());
  }
  ASSERT_EQ(all.size(), 24u);
  std::set<std::string> urls, leases;
  for (const auto& leased : all) {
    urls.insert(leased.request.url);
    leases.insert(leased.lease_id);
  }
  EXPECT_EQ(urls.size(), 24u);
  std::vector<std::string> ids(leases.begin(), leases.end());
  ids.push_back("7~not-a-lease");  // no shard 7: not this worker's
  auto lost = answer_of<std::vector<std::string>>([&](auto done) { queue.async_renew(ids, done); });
  EXPECT_EQ(lost, std::vector<std::string>{"7~not-a-lease"});
  auto released = answer_of<std::size_t>([&](auto done) {
    queue.async_release(std::vector<std::string>(leases.begin(), leases.end()), done);
  });
  EXPECT_EQ(released, 24u);
  // Back in their shards: the next takes find every one again, none twice.
  urls.clear();
  for (int round = 0; round < 4; ++round) {
    for (const auto& leased : take_from(queue, 30)) {
      EXPECT_TRUE(urls.insert(leased.request.url).second) << leased.request.url;
    }
  }
  EXPECT_EQ(urls.size(), 24u);
}

TEST(sharded_queue, start_urls_go_to_their_hosts_shards_and_a_bad_one_is_set_aside) {
  shard_fixture f;
  auto queue = f.queue("w1");
  for (const auto& start : eight_hosts_requests(2)) {
    redis_run(f.server.port(), {"RPUSH", "spider:start_urls", start.url});
  }
  redis_run(f.server.port(), {"RPUSH", "spider:start_urls", "file:///etc/passwd"});
  std::size_t queued = 0;
  for (int round = 0; round < 5; ++round) {
    queued += answer_of<settle_result>([&](auto done) { queue.async_feed(8, scheme, done); }).queued;
  }
  EXPECT_EQ(queued, 16u);
  EXPECT_EQ(queue.bad(), 1u);
  EXPECT_TRUE(redis_run(f.server.port(), {"LRANGE", "spider:start_urls", "0", "-1"}).empty());
  auto bad = redis_run(f.server.port(), {"LRANGE", "spider:start_urls:bad", "0", "-1"});
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("file:///etc/passwd"), std::string::npos) << bad[0];
  std::map<std::string, std::set<std::size_t>> shards_of_host;
  for (std::size_t shard = 0; shard < 3; ++shard) {
    for (const auto& entry : redis_run(f.server.port(), {"ZRANGE", "spider:" +
                                                                       std::to_string(shard) +
                                                                       ":requests",
                                                         "0", "-1"})) {
      shards_of_host[host_of_entry(entry)].insert(shard);
    }
  }
  ASSERT_EQ(shards_of_host.size(), 8u);
  for (const auto& [host, shards] : shards_of_host) EXPECT_EQ(shards.size(), 1u) << host;
}

}  // namespace
