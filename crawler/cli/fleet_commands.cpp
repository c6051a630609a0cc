// The commands that talk to a fleet's Redis: `crawler push NAME URL... | -` (start URLs, which
// the workers move into the shared queue through the shared dupefilter), `crawler stats NAME`
// (the fleet's summed counters), `crawler status NAME` (one screen on the fleet) and `crawler
// requeue NAME [--bad]` (dead letters, or what workers set aside, back where they were).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>

#include "config/redact.h"
#include "config/settings.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/cli/detail/fleet_session.h"
#include "redis/client.h"
#include "redis/set_aside.h"
#include "scheduler/fleet/fleet_view.h"
#include "scheduler/fleet/redis_queue.h"
#include "scheduler/fleet/start_url_push.h"

namespace crawler::cli {
namespace {

struct push_options {
  std::string spider;
  std::vector<std::string> urls;
  std::vector<std::string> overrides;
};

int run(const push_options& options) {
  auto settings = fleet_settings(options.overrides);
  start_url_push push(settings, options.spider);
  // Every entry is checked before anything is sent: a typo stops the push, naming its line.
  for (std::size_t i = 0; i < options.urls.size(); ++i) {
    if (options.urls[i] != "-") {
      push.add(options.urls[i], "argument " + std::to_string(i + 1));
      continue;
    }
    std::string line;
    for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (line.back() == '\r') line.pop_back();
      push.add(line, "stdin:" + std::to_string(number));
    }
  }
  redis_session session(settings);
  auto pushed = push.send(session.client());
  std::cout << "Pushed " << pushed << " start URLs to " << push.key() << '\n';
  return 0;
}

int print_stats(const std::string& name, const std::vector<std::string>& overrides) {
  auto settings = fleet_settings(overrides);
  redis_session session(settings);
  auto fleet = read_fleet_stats(session.client(), settings, name);
  std::cout << fleet.stats.dump(2) << '\n';
  for (const auto& reason : fleet.partial) {
    std::cerr << "crawler stats: these figures may be partial: " << reason << '\n';
  }
  return 0;
}

// `metrics`: the fleet's summed stats and its gauges in Prometheus' text format, instead of the
// screen.
int print_status(const std::string& spider, const std::vector<std::string>& overrides,
                 bool metrics) {
  auto settings = fleet_settings(overrides);
  redis_session session(settings);
  auto fleet = read_fleet(session.client(), settings, spider);
  // A count another program overwrote is shown as it is, not read as a number.
  auto number = [](const std::string& stored) {
    if (stored.empty()) return std::string("0");
    if (stored.find_first_not_of("-0123456789") == std::string::npos) return stored;
    return quoted_for_log(stored, 40) + " (not a count)";
  };
  if (metrics) {
    std::cout << fleet_metrics(fleet);
    return 0;
  }
  std::cout << "Fleet \"" << spider << "\" at " << fleet.redis_address << "\n";
  std::size_t alive = 0;
  double rate = 0;
  std::string lines;
  for (const auto& worker : fleet.workers) {
    if (!worker.readable) continue;
    auto pages = std::int64_t(worker.field("pages"));
    double up = worker.field("heartbeat") - worker.field("started");
    if (worker.live) {
      ++alive;
      if (up > 0) rate += double(pages) / up;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "  %-36s %s  up %6.0f s  pages %8lld  items %8lld  in flight %4lld  "
                  "heartbeat %.0f s ago",
                  quoted_for_log(worker.id, 36).c_str(), worker.live ? "alive" : "DEAD ", up,
                  static_cast<long long>(pages), static_cast<long long>(worker.field("items")),
                  static_cast<long long>(worker.field("in_flight")), worker.heartbeat_age);
    lines += line;
    if (worker.live) {
      std::snprintf(line, sizeof line, "  %.1f pages/s", up > 0 ? double(pages) / up : 0.0);
      lines += line;
    } else if (worker.leases > 0) {
      // What a dead worker held waits for its leases: the live ones take it when they expire.
      std::snprintf(line, sizeof line, "  holds %lld leases: ", worker.leases);
      lines += line;
      if (worker.leases_back_in > 0) {
        std::snprintf(line, sizeof line, "back in the queue in %.0f s",
                      std::ceil(worker.leases_back_in));
        lines += line;
      } else {
        lines += "expired, back in the queue at the next take";
      }
    }
    lines += '\n';
  }
  std::cout << "workers: " << alive << " alive\n" << lines;
  std::cout << "queued: " << fleet.queued << "  in flight (leased): " << fleet.leased
            << "  start URLs waiting: " << fleet.start_urls_waiting << "\n";
  std::cout << "pages: " << number(fleet.pages) << "  items: " << number(fleet.items)
            << "  (as settled)\n";
  char line[128];
  std::snprintf(line, sizeof line, "pages/s: %.1f (live workers, each since it started)\n", rate);
  std::cout << line;
  std::cout << "dead letters: " << fleet.dead_letters << " in " << fleet.dead_letters_at
            << (fleet.dead_letters ? " (`crawler requeue " + spider + "` puts them back)" : "")
            << "  set aside: " << fleet.set_aside << " in " << fleet.set_aside_at << ", "
            << fleet.start_urls_set_aside << " in " << fleet.start_urls_set_aside_at << "\n";
  // The first few, so an operator sees why without redis-cli.
  for (const auto& stored : fleet.first_set_aside) {
    auto record = redis::decode_set_aside(stored);
    auto reason = record ? record->header.value("reason", std::string()) : std::string();
    std::cout << "  set aside: "
              << (record
                      ? quoted_for_log(reason, 200) + " (" + quoted_for_log(record->value, 60) + ")"
                      : "a record no worker wrote: " + quoted_for_log(stored, 60))
              << '\n';
  }
  if (fleet.set_aside > 0) {
    std::cout << "  (`crawler requeue " << spider << " --bad` puts them back once fixed)\n";
  }
  for (const auto& reason : fleet.partial) {
    std::cout << "figures may be partial: " << reason << '\n';
  }
  return 0;
}

// `crawler requeue NAME [--bad]`: the dead letters (or the set-aside entries) back where they
// were, byte for byte, once what stopped them is dealt with: the page that killed its workers, a
// missing callback, the serializer setting.
int requeue(const std::string& spider, const std::vector<std::string>& overrides, bool bad) {
  auto settings = fleet_settings(overrides);
  redis_session session(settings);
  auto result = requeue_fleet(session.shared_client(), settings, spider,
                              bad ? set_aside_list::bad : set_aside_list::dead);
  std::cout << "Put " << result.requeued << (bad ? " set-aside entries" : " dead letters")
            << " back where they were\n";
  if (result.unreadable.empty()) return 0;
  std::cout << "Left " << result.unreadable.size() << " records of " << result.where
            << " that are not entries of the queue or its start URLs:\n";
  for (const auto& record : result.unreadable) std::cout << "  " << record << '\n';
  return 1;
}

// `crawler NAME SPIDER [-s KEY=VALUE]...`: a command that reads a fleet and prints it.
void add_fleet_view(CLI::App& app, int& exit_status, const std::string& name,
                    const std::string& description,
                    int (*print)(const std::string&, const std::vector<std::string>&)) {
  auto spider = std::make_shared<std::string>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  CLI::App* command = app.add_subcommand(name, description);
  command->add_option("spider", *spider, "the spider's name, as in its Redis keys")->required();
  command->add_option("-s,--set", *overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([spider, overrides, &exit_status, name, print] {
    exit_status = run_command(name, [&] { return print(*spider, *overrides); });
  });
}

}  // namespace

void add_status_command(CLI::App& app, int& exit_status) {
  struct options {
    std::string spider;
    std::vector<std::string> overrides;
    bool metrics = false;
  };
  auto given = std::make_shared<options>();
  CLI::App* command = app.add_subcommand(
      "status", "One screen on a fleet: workers alive, queued, in flight, pages, items, pages/s");
  command->add_option("spider", given->spider, "the spider's name, as in its Redis keys")
      ->required();
  command->add_flag("--metrics", given->metrics,
                    "print the fleet's summed stats and gauges in Prometheus' text format");
  command->add_option("-s,--set", given->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([given, &exit_status] {
    exit_status = run_command(
        "status", [&] { return print_status(given->spider, given->overrides, given->metrics); });
  });
}

void add_requeue_command(CLI::App& app, int& exit_status) {
  struct options {
    std::string spider;
    std::vector<std::string> overrides;
    bool bad = false;
  };
  auto given = std::make_shared<options>();
  CLI::App* command = app.add_subcommand(
      "requeue",
      "Put a fleet's dead letters (<queue>:dead: requests whose workers kept dying) back in its "
      "queue; with --bad, what workers set aside (<queue>:bad) instead");
  command->add_option("spider", given->spider, "the spider's name, as in its Redis keys")
      ->required();
  command->add_flag("--bad", given->bad,
                    "put back <queue>:bad's entries and start URLs, byte for byte");
  command->add_option("-s,--set", given->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([given, &exit_status] {
    exit_status = run_command("requeue",
                              [&] { return requeue(given->spider, given->overrides, given->bad); });
  });
}

void add_stats_command(CLI::App& app, int& exit_status) {
  add_fleet_view(app, exit_status, "stats", "Print a fleet's summed stats (<spider>:stats) as JSON",
                 print_stats);
}

void add_push_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<push_options>();
  CLI::App* command = app.add_subcommand(
      "push", "Push start URLs (or JSON requests) for a fleet's workers to REDIS_START_URLS_KEY");
  command->add_option("spider", options->spider, "the spider's name, as in its Redis keys")
      ->required();
  command->add_option("urls", options->urls, "URLs or JSON requests; - reads them, one per line")
      ->required();
  // One value per -s: `-s K=V URL` leaves URL to the positional arguments.
  command->add_option("-s,--set", options->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([options, &exit_status] {
    exit_status = run_command("push", [&] { return run(*options); });
  });
}

}  // namespace crawler::cli
