// A fleet on a real Redis Cluster (three masters on loopback): `crawler crawl site` workers with
// REDIS_CLUSTER_NODES crawl the generated site each page once, through a `redis-cli --cluster
// reshard` of the crawl's slot mid-crawl and through kill -9s, and refuse what a cluster cannot
// run (a key outside the crawl's slot) by name. The host frontier runs there too, in shards,
// each host paced fleet-wide through a move of its slot.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "child_process.h"
#include "fleet.h"
#include "http_server.h"
#include "redis/cluster_slots.h"
#include "redis_cluster.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::fleet_worker;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_cluster;
using crawler::fixtures::redis_list;
using crawler::fixtures::temp_dir;

constexpr std::size_t cluster_site_pages = 300;

// A worker of the fleet on `cluster`: every key of the crawl is tagged {site}.
std::unique_ptr<child_process> cluster_worker(const http_server& site, redis_cluster& cluster,
                                              const std::filesystem::path& feed,
                                              std::vector<std::string> extra = {},
                                              const std::string& dupefilter = "redis_set") {
  extra.insert(extra.end(), {"-s", "REDIS_CLUSTER_NODES=" + cluster.seeds(), "-s",
                             "REDIS_PIPELINE=true", "-s", "SCHEDULER_LEASE_TIME=2", "-s",
                             "SCHEDULER_HEARTBEAT_INTERVAL=0.5"});
  return fleet_worker(site, cluster.node(0), feed, dupefilter, extra);
}

// The master that holds the crawl's keys now.
int crawl_node(const redis_cluster& cluster) {
  return cluster.owner_of(crawler::redis::key_slot("{site}"));
}

// Every page was fetched, and its item is in {site}:items exactly once; no lease is left.
void expect_every_page_stored_once(const http_server& site, const redis_cluster& cluster) {
  for (std::size_t page = 0; page < cluster_site_pages; ++page)
    ASSERT_GE(site.hits("/site/" + std::to_string(page)), 1u) << "page " << page << " was lost";
  std::multiset<std::string> items;
  for (const auto& item : redis_list(crawl_node(cluster), "{site}:items"))
    items.insert(nlohmann::json::parse(item)["url"].get<std::string>());
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()).size(), cluster_site_pages);
  EXPECT_EQ(items.size(), cluster_site_pages);
  EXPECT_EQ(redis_list(crawl_node(cluster), "{site}:requests:leased", "HKEYS").size(), 0u);
}

// What `crawler stats` says of the fleet on the cluster.
nlohmann::json fleet_stats(const redis_cluster& cluster) {
  child_process stats({crawler::fixtures::crawler_binary(), "stats", "site", "-s",
                       "REDIS_CLUSTER_NODES=" + cluster.seeds()});
  EXPECT_EQ(stats.wait(), 0) << stats.stderr_text();
  return nlohmann::json::parse(stats.stdout_text(), nullptr, false);
}

}  // namespace

TEST(fleet_on_a_cluster, three_workers_crawl_every_page_once_through_a_reshard_of_their_slot) {
  // 12 downloads at a time of 100 ms each: the crawl takes 2.5 s, time for the reshard to land in
  // its middle even on a loaded machine or under a sanitizer.
  http_server site({.site_pages = cluster_site_pages, .page_delay_ms = 100});
  redis_cluster cluster(3);
  temp_dir dir;
  // The crawl's slot first goes to a master whose own slots all come after it, so that the
  // reshard below (which moves a master's first slots) moves just that slot.
  int slot = crawler::redis::key_slot("{site}");
  int before = cluster.ports()[2], after = cluster.ports()[0];
  ASSERT_GT(cluster.first_slot_of(before), slot);
  cluster.begin_move(slot, before, {});
  cluster.finish_move(slot, before);
  ASSERT_EQ(cluster.first_slot_of(before), slot);
  std::vector<std::unique_ptr<child_process>> workers;
  for (int i = 0; i < 3; ++i)
    workers.push_back(cluster_worker(
        site, cluster, dir.path() / ("items-" + std::to_string(i) + ".jsonl"), {}, "redis_bitmap"));
  crawler::fixtures::wait_until([&] { return site.hits("/site/20") > 0; }, "the crawl under way");
  cluster.reshard(before, after, 1);
  ASSERT_EQ(crawl_node(cluster), after);
  std::size_t fetched = 0;
  for (std::size_t page = 0; page < cluster_site_pages; ++page)
    fetched += site.hits("/site/" + std::to_string(page)) > 0;
  EXPECT_LT(fetched, cluster_site_pages) << "the reshard came after the crawl";
  for (auto& worker : workers) EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  for (std::size_t page = 0; page < cluster_site_pages; ++page)
    EXPECT_EQ(site.hits("/site/" + std::to_string(page)), 1u) << page;
  expect_every_page_stored_once(site, cluster);
  // The fleet's commands find its keys on the cluster too.
  child_process stats({crawler::fixtures::crawler_binary(), "stats", "site", "-s",
                       "REDIS_CLUSTER_NODES=" + cluster.seeds()});
  ASSERT_EQ(stats.wait(), 0) << stats.stderr_text();
  EXPECT_EQ(nlohmann::json::parse(stats.stdout_text()).value("item_scraped_count", 0), cluster_site_pages);
}

TEST(fleet_on_a_cluster, workers_killed_mid_crawl_lose_nothing) {
  http_server site({.site_pages = cluster_site_pages, .page_delay_ms = 50});
  redis_cluster cluster(3);
  temp_dir dir;
  int started = 0;
  auto start = [&] {
    return cluster_worker(site, cluster, dir.path() / ("items-" + std::to_string(started++) + ".jsonl"));
  };
  for (auto& worker : crawler::fixtures::kill_one_of_two(start, 3, 300ms)) {
    EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  }
  expect_every_page_stored_once(site, cluster);
  // Each page counted once, by whoever settled it, whatever the killed workers had fetched.
  auto stats = fleet_stats(cluster);
  EXPECT_EQ(stats.value("item_scraped_count", -1), int(cluster_site_pages)) << stats;
  EXPECT_EQ(stats.value("response_received_count", -1), int(cluster_site_pages)) << stats;
}

// The refusals come before the first fetch, with exit 2, naming the setting to change; `crawler
// push` writes the start URLs under the key the workers read on a cluster.
TEST(fleet_on_a_cluster, push_names_the_tagged_key_and_what_a_cluster_cannot_run_is_refused) {
  http_server site({.site_pages = 5});
  redis_cluster cluster(3);
  temp_dir dir;
  child_process push({crawler::fixtures::crawler_binary(), "push", "site", "-s",
                      "REDIS_CLUSTER_NODES=" + cluster.seeds(), site.url("/s?wd=pushed")});
  ASSERT_EQ(push.wait(), 0) << push.stderr_text();
  EXPECT_EQ(redis_list(crawl_node(cluster), "{site}:start_urls"),
            std::vector<std::string>{site.url("/s?wd=pushed")});
  for (auto [setting, words] : std::vector<std::pair<std::string, std::string>>{
           {"REDIS_START_URLS_KEY=seeds", "{site}"},
           {"DUPEFILTER_KEY=seen", "no hash tag"}}) {
    auto worker =
        cluster_worker(site, cluster, dir.path() / "items.jsonl", {"-s", setting, "-L", "ERROR"});
    EXPECT_EQ(worker->wait(), 2) << setting;
    auto said = worker->stderr_text();
    EXPECT_NE(said.find(setting.substr(0, setting.find('='))), std::string::npos) << said;
    EXPECT_NE(said.find(words), std::string::npos) << said;
  }
  // With shards the start URLs stay the fleet's own, in the spider's slot.
  auto sharded = cluster_worker(site, cluster, dir.path() / "items.jsonl",
                                {"-s", "SCHEDULER_SHARDS=3", "-s", "REDIS_START_URLS_KEY=seeds",
                                 "-L", "ERROR"});
  EXPECT_EQ(sharded->wait(), 2);
  EXPECT_NE(sharded->stderr_text().find("settings.REDIS_START_URLS_KEY: \"seeds\" does not lie "
                                        "in the crawl's hash slot"),
            std::string::npos)
      << sharded->stderr_text();
  EXPECT_EQ(site.hits("/site/0"), 0u);
}

// SCHEDULER_SHARDS on the cluster: six shards, each its own hash slot ({site:0} ... {site:5}),
// spread over the masters; eight hosts (127.0.0.2 to .9) reached from a hub page on a ninth, so
// that settles push links into other shards, on other masters.
namespace {

constexpr std::size_t shards = 6, host_pages = 30;

struct many_hosts {
  std::vector<std::unique_ptr<http_server>> hosts;
  std::unique_ptr<http_server> hub;
  std::string starts;  // the hub, and each host's 404 page (so it is an allowed domain)

  explicit many_hosts(int delay_ms) {
    std::string links;
    for (int i = 0; i < 8; ++i) {
      hosts.push_back(std::make_unique<http_server>(
          http_server::options{.address = "127.0.0." + std::to_string(i + 2),
                               .site_pages = host_pages,
                               .page_delay_ms = delay_ms}));
      links += "<a href=\"" + hosts.back()->url("/site/0") + "\">a host</a>";
      starts += " " + hosts.back()->url("/status/404");
    }
    hub = std::make_unique<http_server>(http_server::options{
        .address = "127.0.0.10", .pages = {{"/hub", "<html><body>" + links}}});
    starts = hub->url("/hub") + starts;
  }
  std::size_t fetched() const {
    std::size_t sum = 0;
    for (const auto& host : hosts) sum += host->total_hits();
    return sum;
  }
};

// `extra` settings ("-s", "NAME=VALUE"...) come last.
std::unique_ptr<child_process> sharded_worker(const many_hosts& site, redis_cluster& cluster,
                                              const std::filesystem::path& feed,
                                              const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv{
      crawler::fixtures::crawler_binary(), "crawl", "site", "-a", "start=" + site.starts, "-s",
      "SCHEDULER=redis", "-s", "SCHEDULER_SHARDS=" + std::to_string(shards), "-s",
      "DUPEFILTER_CLASS=redis_bitmap", "-s", "BLOOMFILTER_BIT=20", "-s",
      "REDIS_CLUSTER_NODES=" + cluster.seeds(), "-s", "REDIS_PIPELINE=true", "-s",
      "SCHEDULER_LEASE_TIME=2", "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.5", "-s",
      "MAX_IDLE_TIME_BEFORE_CLOSE=2", "-s", "CONCURRENT_REQUESTS=4", "-o", feed.string(),
      "--nolog"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<child_process>(argv);
}

// Every page of every host fetched at least once, and its item stored once, in the items of its
// host's shard; no shard holds a lease.
void expect_every_page_stored_once(const many_hosts& site, const redis_cluster& cluster) {
  for (const auto& host : site.hosts) {
    for (std::size_t page = 0; page < host_pages; ++page) {
      ASSERT_GE(host->hits("/site/" + std::to_string(page)), 1u)
          << host->url("/site/" + std::to_string(page)) << " was lost";
    }
  }
  std::multiset<std::string> items;
  for (std::size_t shard = 0; shard < shards; ++shard) {
    auto tag = "{site:" + std::to_string(shard) + "}";
    auto node = cluster.owner_of(crawler::redis::key_slot(tag));
    for (const auto& item : redis_list(node, tag + ":items")) {
      items.insert(nlohmann::json::parse(item)["url"].get<std::string>());
    }
    EXPECT_EQ(redis_list(node, tag + ":requests:leased", "HKEYS").size(), 0u) << tag;
  }
  // The hub's item, and one per page of each host.
  EXPECT_EQ(std::set<std::string>(items.begin(), items.end()).size(), 1 + 8 * host_pages);
  EXPECT_EQ(items.size(), 1 + 8 * host_pages);
}

}  // namespace

TEST(fleet_on_a_cluster, shards_spread_a_crawl_over_the_masters_and_a_reshard_of_one_loses_nothing) {
  many_hosts site(100);
  redis_cluster cluster(3);
  temp_dir dir;
  std::set<int> masters;
  for (std::size_t shard = 0; shard < shards; ++shard) {
    masters.insert(cluster.owner_of(crawler::redis::key_slot("{site:" + std::to_string(shard) + "}")));
  }
  EXPECT_GE(masters.size(), 2u) << "six shards' slots all on one master";
  std::vector<std::unique_ptr<child_process>> workers;
  for (int i = 0; i < 3; ++i) {
    workers.push_back(
        sharded_worker(site, cluster, dir.path() / ("items-" + std::to_string(i) + ".jsonl")));
  }
  crawler::fixtures::wait_until([&] { return site.fetched() >= 30; }, "the crawl under way");
  // Shard 0's slot, keys and all, to another master, in the middle of the crawl.
  int slot = crawler::redis::key_slot("{site:0}");
  int owner = cluster.owner_of(slot);
  int to = cluster.ports()[0] == owner ? cluster.ports()[1] : cluster.ports()[0];
  cluster.begin_move(slot, to, {});
  cluster.finish_move(slot, to);
  ASSERT_EQ(cluster.owner_of(slot), to);
  EXPECT_LT(site.fetched(), 8 * host_pages) << "the reshard came after the crawl";
  for (auto& worker : workers) EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  for (const auto& host : site.hosts) {
    for (std::size_t page = 0; page < host_pages; ++page) {
      EXPECT_EQ(host->hits("/site/" + std::to_string(page)), 1u)
          << host->url("/site/" + std::to_string(page));
    }
  }
  expect_every_page_stored_once(site, cluster);
}

TEST(fleet_on_a_cluster, a_sharded_fleets_workers_killed_mid_crawl_lose_nothing) {
  many_hosts site(50);
  redis_cluster cluster(3);
  temp_dir dir;
  int started = 0;
  auto start = [&] {
    return sharded_worker(site, cluster,
                          dir.path() / ("items-" + std::to_string(started++) + ".jsonl"));
  };
  for (auto& worker : crawler::fixtures::kill_one_of_two(start, 3, 400ms)) {
    EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  }
  expect_every_page_stored_once(site, cluster);
  // Counted in each shard's stats, in its slot, and added up by `crawler stats`: the hub, the
  // hosts' 404 pages and every page of theirs once.
  auto stats = fleet_stats(cluster);
  EXPECT_EQ(stats.value("item_scraped_count", -1), int(1 + 8 * host_pages)) << stats;
  EXPECT_EQ(stats.value("response_received_count", -1), int(1 + 8 + 8 * host_pages)) << stats;
}

// The host frontier on the cluster, in shards: a host's queue, its pace and its fingerprints in
// its shard's slot, on Redis's clock for the whole fleet. Mid-crawl, the slot of the shard with the
// most hosts moves to another master in two halves, as `redis-cli --cluster reshard` moves it:
// first its hosts' queues, while its old master keeps the rest (and answers for them), and the
// crawl goes on meanwhile; then the rest. Each page once, each host at DOWNLOAD_DELAY throughout.
TEST(fleet_on_a_cluster, the_host_frontier_paces_each_host_fleet_wide_through_a_move_of_its_slot) {
  many_hosts site(0);
  redis_cluster cluster(3);
  temp_dir dir;
  std::vector<std::unique_ptr<child_process>> workers;
  for (int i = 0; i < 3; ++i) {
    workers.push_back(sharded_worker(
        site, cluster, dir.path() / ("items-" + std::to_string(i) + ".jsonl"),
        {"-s", "SCHEDULER_QUEUE_CLASS=host", "-s", "DOWNLOAD_DELAY=0.2", "-s",
         "RANDOMIZE_DOWNLOAD_DELAY=False", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=4"}));
  }
  crawler::fixtures::wait_until([&] { return site.fetched() >= 24; }, "the crawl under way");
  int slot = -1;
  std::vector<std::string> host_queues;
  for (std::size_t shard = 0; shard < shards; ++shard) {
    auto tag = "{site:" + std::to_string(shard) + "}";
    int at = crawler::redis::key_slot(tag);
    std::vector<std::string> queues;
    for (const auto& key : crawler::fixtures::redis_run(
             cluster.owner_of(at), {"CLUSTER", "GETKEYSINSLOT", std::to_string(at), "1000"})) {
      if (key.starts_with(tag + ":requests:host:")) queues.push_back(key);
    }
    if (queues.size() > host_queues.size()) slot = at, host_queues = queues;
  }
  ASSERT_FALSE(host_queues.empty()) << "no host queued anything";
  int owner = cluster.owner_of(slot);
  int to = cluster.ports()[0] == owner ? cluster.ports()[1] : cluster.ports()[0];
  cluster.begin_move(slot, to, host_queues);
  auto before = site.fetched();
  crawler::fixtures::wait_until([&] { return site.fetched() >= before + 24; },
                                "the crawl going on while the slot moves");
  cluster.finish_move(slot, to);
  ASSERT_EQ(cluster.owner_of(slot), to);
  EXPECT_LT(site.fetched(), 8 * host_pages) << "the move came after the crawl";
  for (auto& worker : workers) EXPECT_EQ(worker->wait(), 0) << worker->stderr_text();
  for (const auto& host : site.hosts) {
    for (std::size_t page = 0; page < host_pages; ++page) {
      EXPECT_EQ(host->hits("/site/" + std::to_string(page)), 1u)
          << host->url("/site/" + std::to_string(page));
    }
    crawler::fixtures::expect_paced_at_the_download_delay(*host);
  }
  expect_every_page_stored_once(site, cluster);
  auto stats = fleet_stats(cluster);  // each shard's, added up
  EXPECT_EQ(stats.value("item_scraped_count", -1), int(1 + 8 * host_pages)) << stats;
  EXPECT_EQ(stats.value("response_received_count", -1), int(1 + 8 + 8 * host_pages)) << stats;
}
