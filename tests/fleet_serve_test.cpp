// `crawler serve NAME`: a running fleet watched through its Redis, as an operator watches it:
// the page, its figures as JSON, the metrics Prometheus scrapes (checked by promtool), who may
// ask, and what it shows of a worker killed mid-crawl and of records set aside.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "child_process.h"
#include "fleet.h"
#include "http_server.h"
#include "redis_server.h"
#include "tree_paths.h"

namespace {

using namespace std::chrono_literals;
using crawler::fixtures::child_process;
using crawler::fixtures::crawler_binary;
using crawler::fixtures::fleet_worker;
using crawler::fixtures::http_server;
using crawler::fixtures::redis_run;
using crawler::fixtures::redis_server;
using crawler::fixtures::temp_dir;
using crawler::fixtures::wait_until;
using crawler::fixtures::with_environment;

// What a GET answered: its status and body (Python's urllib, a client nobody here wrote).
struct answer {
  int status = 0;
  std::string body;
};

answer get(const std::string& url, const std::string& authorization = "") {
  child_process python(
      {"/usr/bin/python3", "-c",
       "import sys, urllib.request, urllib.error\n"
       "request = urllib.request.Request(sys.argv[1])\n"
       "if sys.argv[2]: request.add_header('Authorization', sys.argv[2])\n"
       "try:\n"
       "    r = urllib.request.urlopen(request, timeout=10); status, body = r.status, r.read()\n"
       "except urllib.error.HTTPError as e:\n"
       "    status, body = e.code, e.read()\n"
       "sys.stdout.write(str(status) + '\\n'); sys.stdout.flush()\n"
       "sys.stdout.buffer.write(body)\n",
       url, authorization});
  EXPECT_EQ(python.wait(), 0) << python.stderr_text();
  auto text = python.stdout_text();
  auto newline = text.find('\n');
  if (newline == std::string::npos) return {};
  return {std::stoi(text.substr(0, newline)), text.substr(newline + 1)};
}

// `crawler serve` on a free port, and the address it said it serves at.
struct served {
  served(const redis_server& redis, const std::string& spider,
         std::vector<std::string> extra = {}, std::vector<std::string> environment = {}) {
    std::vector<std::string> argv{crawler_binary(), "serve", spider, "-s",
                                  "REDIS_URL=" + redis.url(), "--port", "0", "--interval", "0.2"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process = std::make_unique<child_process>(with_environment(argv, environment));
    std::regex said(R"(Serving fleet .* at (http://127\.0\.0\.1:\d+)/ )");
    std::smatch found;
    wait_until(
        [&] {
          auto out = process->stdout_text();
          if (!std::regex_search(out, found, said)) return false;
          base = found[1];
          return true;
        },
        "crawler serve to say where it serves: " + process->stderr_text(), 30s);
  }
  ~served() { process->signal(SIGTERM); }
  nlohmann::json fleet() const {
    auto got = get(base + "/api/fleet");
    EXPECT_EQ(got.status, 200);
    return nlohmann::json::parse(got.body);
  }

  std::unique_ptr<child_process> process;
  std::string base;
};

// The page as Debian's chromium renders it (headless, its script run for three seconds of the
// page's time), as the DOM it built; with `screenshot`, a picture of it there too.
std::string rendered(const std::string& url, const std::filesystem::path& screenshot = {}) {
  EXPECT_TRUE(std::filesystem::exists("/usr/bin/chromium"))
      << "Debian's chromium is needed (.ci/packages.txt)";
  temp_dir profile;
  std::vector<std::string> argv{"/usr/bin/chromium", "--headless", "--no-sandbox",
                                "--disable-gpu", "--user-data-dir=" + profile.path().string(),
                                "--virtual-time-budget=3000", "--window-size=1280,1150"};
  if (!screenshot.empty()) {
    std::filesystem::create_directories(screenshot.parent_path());
    argv.push_back("--screenshot=" + screenshot.string());
  } else {
    argv.push_back("--dump-dom");
  }
  argv.push_back(url);
  child_process browser(argv);
  EXPECT_EQ(browser.wait(std::chrono::seconds(60)), 0) << browser.stderr_text();
  return browser.stdout_text();
}

// The number a card of the page shows (its <b id=...>), or -1.
long long card(const std::string& dom, const std::string& id) {
  std::smatch found;
  if (!std::regex_search(dom, found, std::regex("<b id=\"" + id + "\">(\\d+)</b>"))) return -1;
  return std::stoll(found[1]);
}

// A fleet of two workers, one killed with SIGKILL mid-crawl: the page's figures show both
// workers, the live one alive and the killed one dead with the leases it held, the queue and
// the readings of the charts as they grow; /metrics passes promtool while the crawl runs; / is
// the page with its script inside.
TEST(fleet_serve, shows_a_running_fleet_and_a_killed_worker_and_its_metrics_pass_promtool) {
  http_server site({.site_pages = 1000, .page_delay_ms = 30});
  redis_server redis;
  temp_dir dir;
  served serve(redis, "site");
  auto first = fleet_worker(site, redis, dir.path() / "first.jsonl", "redis_set",
                            {"-s", "SCHEDULER_LEASE_TIME=30", "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.5"});
  auto second = fleet_worker(site, redis, dir.path() / "second.jsonl", "redis_set",
                             {"-s", "SCHEDULER_LEASE_TIME=30", "-s", "SCHEDULER_HEARTBEAT_INTERVAL=0.5"});
  wait_until(
      [&] {
        auto fleet = serve.fleet();
        int live = 0;
        for (const auto& worker : fleet["workers"]) live += worker["live"].get<bool>();
        return live == 2 && fleet["leased"].get<long long>() > 0;
      },
      "two live workers with leases on the page", 60s);

  auto metrics = get(serve.base + "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("crawler_fleet_workers_alive{spider=\"site\"} 2"), std::string::npos)
      << metrics.body;
  auto exposition = dir.path() / "metrics.txt";
  std::ofstream(exposition) << metrics.body;
  child_process promtool({"/usr/bin/promtool", "check", "metrics"}, exposition);
  EXPECT_EQ(promtool.wait(), 0) << promtool.stdout_text() << promtool.stderr_text();
  EXPECT_EQ(promtool.stdout_text() + promtool.stderr_text(), "");

  auto page = get(serve.base + "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<canvas id=\"rates\""), std::string::npos);
  EXPECT_NE(page.body.find("fetch(\"api/fleet\""), std::string::npos);
  EXPECT_EQ(page.body.find("src=\"http"), std::string::npos);  // nothing from elsewhere
  EXPECT_EQ(get(serve.base + "/other").status, 404);

  // Killed while it holds leases: dead by its heartbeat's age (three intervals: 1.5 s), with
  // them until they expire (30 s).
  auto killed = first->pid();
  ASSERT_GT(killed, 0);
  first->signal(SIGKILL);
  first->wait();
  nlohmann::json seen;
  wait_until(
      [&] {
        seen = serve.fleet();
        for (const auto& worker : seen["workers"]) {
          if (!worker["live"].get<bool>() && worker["leases"].get<long long>() > 0) return true;
        }
        return false;
      },
      "the killed worker shown dead with its leases", 25s);
  bool live_one = false;
  for (const auto& worker : seen["workers"]) {
    if (worker["live"].get<bool>()) live_one = true;
    if (!worker["live"].get<bool>()) {
      EXPECT_LE(worker["leases_back_in"].get<double>(), 30.0) << worker.dump();
    }
  }
  EXPECT_TRUE(live_one) << seen.dump();
  EXPECT_EQ(seen["queue"], "site:requests");
  ASSERT_GE(seen["history"].size(), 2u);
  auto history = seen["history"];
  for (std::size_t i = 1; i < history.size(); ++i) {
    EXPECT_GT(history[i]["t"].get<double>(), history[i - 1]["t"].get<double>());
  }
  ASSERT_EQ(second->wait(std::chrono::seconds(240)), 0) << second->stderr_text();
}

// What anyone who can write Redis puts there reaches the page as data: a spider's name that holds
// markup comes back as the same text in the JSON, and records set aside are counted by reason
// (digits read as N), dead letters apart.
TEST(fleet_serve, counts_records_set_aside_by_reason_and_returns_names_as_text) {
  redis_server redis;
  const std::string spider = "<script>alert(1)</script>";
  auto record = [](const std::string& reason, const std::string& value) {
    return nlohmann::json{{"key", "k"}, {"reason", reason}}.dump() + "\n" + value;
  };
  redis_run(redis.port(), {"RPUSH", spider + ":requests:bad",
                           record("entry 12: forged signature", "a"),
                           record("entry 345: forged signature", "b"),
                           record("an entry of 2000000 bytes, over SCHEDULER_MAX_ENTRY_SIZE", "c"),
                           "not a record at all"});
  redis_run(redis.port(), {"RPUSH", spider + ":requests:dead",
                           record("taken 3 times by workers that stopped", "d")});
  served serve(redis, spider);
  auto fleet = serve.fleet();
  EXPECT_EQ(fleet["spider"], spider);
  EXPECT_EQ(fleet["set_aside"], 4);
  EXPECT_EQ(fleet["dead_letters"], 1);
  EXPECT_EQ(fleet["reasons"]["set aside"],
            (nlohmann::json{{"entry N: forged signature", 2},
                            {"an entry of N bytes, over SCHEDULER_MAX_ENTRY_SIZE", 1},
                            {"a record no worker wrote", 1}}));
  EXPECT_EQ(fleet["reasons"]["dead letters"],
            (nlohmann::json{{"taken N times by workers that stopped", 1}}));
  EXPECT_EQ(fleet["error"], "");
}

// With CRAWLER_SERVE_AUTH every request needs those credentials, and without it the page is
// kept to loopback unless --no-auth says otherwise.
TEST(fleet_serve, asks_for_its_credentials_and_refuses_an_open_address_without_them) {
  redis_server redis;
  {
    served serve(redis, "site", {}, {"CRAWLER_SERVE_AUTH=operator:s3cret pass"});
    auto refused = get(serve.base + "/api/fleet");
    EXPECT_EQ(refused.status, 401);
    EXPECT_EQ(get(serve.base + "/metrics", "Basic b3BlcmF0b3I6d3Jvbmc=").status, 401);
    // base64("operator:s3cret pass")
    EXPECT_EQ(get(serve.base + "/api/fleet", "Basic b3BlcmF0b3I6czNjcmV0IHBhc3M=").status, 200);
  }
  // By default on loopback at Scrapyd's port, as README says.
  {
    child_process by_default({crawler_binary(), "serve", "site", "-s", "REDIS_URL=" + redis.url()});
    wait_until([&] { return by_default.stdout_text().find("Serving fleet") != std::string::npos ||
                            by_default.stderr_text().find("serve") != std::string::npos; },
               "crawler serve to start or say why not", 30s);
    EXPECT_NE(by_default.stdout_text().find("at http://127.0.0.1:6800/ "), std::string::npos)
        << by_default.stdout_text() << by_default.stderr_text();
    EXPECT_EQ(get("http://127.0.0.1:6800/api/fleet").status, 200);
    by_default.signal(SIGTERM);
    EXPECT_EQ(by_default.wait(), 0);
  }
  child_process open({crawler_binary(), "serve", "site", "-s", "REDIS_URL=" + redis.url(),
                      "--bind", "0.0.0.0", "--port", "0"});
  EXPECT_EQ(open.wait(), 2);
  EXPECT_NE(open.stderr_text().find("--bind 0.0.0.0: the fleet's page would be open to anyone"),
            std::string::npos)
      << open.stderr_text();
  child_process malformed(with_environment(
      {crawler_binary(), "serve", "site", "-s", "REDIS_URL=" + redis.url(), "--port", "0"},
      {"CRAWLER_SERVE_AUTH=no-colon-here"}));
  EXPECT_EQ(malformed.wait(), 2);
  EXPECT_NE(malformed.stderr_text().find("CRAWLER_SERVE_AUTH: not \"user:password\""),
            std::string::npos)
      << malformed.stderr_text();
  EXPECT_EQ(malformed.stderr_text().find("no-colon-here"), std::string::npos);
}

// The page in a real browser during a fleet crawl: the worker rows and the counts appear and
// change as the crawl goes, a worker killed mid-crawl shows as dead, and a picture of the page
// is kept (build/test-artifacts/fleet-page.png).
TEST(fleet_serve, the_page_in_a_real_browser_follows_the_crawl_and_shows_a_killed_worker_dead) {
  http_server site({.site_pages = 1000, .page_delay_ms = 30});
  redis_server redis;
  temp_dir dir;
  served serve(redis, "site");
  // One page at a time each (15 s for the site): the crawl outlasts the browser's visits.
  std::vector<std::string> quick{"-s", "SCHEDULER_LEASE_TIME=5", "-s",
                                 "SCHEDULER_HEARTBEAT_INTERVAL=0.5", "-s",
                                 "CONCURRENT_REQUESTS=1"};
  auto first = fleet_worker(site, redis, dir.path() / "first.jsonl", "redis_set", quick);
  auto second = fleet_worker(site, redis, dir.path() / "second.jsonl", "redis_set", quick);
  wait_until([&] { return serve.fleet()["pages"].get<long long>() > 20; },
             "the fleet's first pages", 60s);
  auto early = rendered(serve.base + "/");
  EXPECT_EQ(card(early, "alive"), 2) << early;
  EXPECT_EQ(std::regex_search(early, std::regex("<td>alive</td>")), true) << early;
  auto pages_early = card(early, "pages");
  EXPECT_GT(pages_early, 20) << early;
  wait_until([&] { return serve.fleet()["pages"].get<long long>() > pages_early + 50; },
             "the fleet's pages to grow", 60s);
  auto later = rendered(serve.base + "/");
  EXPECT_GT(card(later, "pages"), pages_early) << later;

  first->signal(SIGKILL);
  first->wait();
  nlohmann::json seen;
  auto one_dead = [&] {
    seen = serve.fleet();
    for (const auto& worker : seen["workers"]) {
      if (!worker["live"].get<bool>()) return true;
    }
    return false;
  };
  try {
    wait_until(one_dead, "the killed worker dead in the figures", 25s);
  } catch (const std::exception&) {
    FAIL() << "no worker is dead in " << seen.dump();
  }
  auto after = rendered(serve.base + "/");
  EXPECT_EQ(card(after, "dead"), 1) << after;
  EXPECT_TRUE(std::regex_search(after, std::regex("<tr class=\"dead\"><td>[^<]+</td><td>dead</td>")))
      << after;
  auto picture = crawler::fixtures::binary_dir() / "test-artifacts" / "fleet-page.png";
  rendered(serve.base + "/", picture);
  EXPECT_GT(std::filesystem::file_size(picture), 10000u);
  ASSERT_EQ(second->wait(std::chrono::seconds(240)), 0) << second->stderr_text();
}

// Whatever Redis holds reaches the page as text: a spider's and a worker's name that hold
// markup (an <img> whose onerror would mark the page) are shown as the characters they are, in
// a real browser, and run nothing.
TEST(fleet_serve, names_holding_markup_are_shown_as_text_in_a_real_browser) {
  redis_server redis;
  const std::string spider = "<img src=x onerror=document.body.setAttribute('data-pwned','1')>";
  auto now = std::stod(redis_run(redis.port(), {"TIME"}).at(0));
  redis_run(redis.port(),
            {"HSET", spider + ":workers", "w<img src=y onerror=document.title='pwned'>",
             nlohmann::json{{"heartbeat", now}, {"started", now - 100}, {"interval", 10},
                            {"pages", 250}}
                 .dump()});
  served serve(redis, spider);
  auto dom = rendered(serve.base + "/");
  EXPECT_EQ(dom.find("data-pwned=\"1\""), std::string::npos) << dom;
  EXPECT_EQ(dom.find("<title>pwned"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<h1 id=\"title\">Fleet &lt;img src=x onerror=document.body.setAttribute("
                     "'data-pwned','1')&gt;</h1>"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("<td>w&lt;img src=y onerror=document.title='pwned'&gt;</td>"),
            std::string::npos)
      << dom;
}

}  // namespace
