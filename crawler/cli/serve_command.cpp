// `crawler serve NAME [-s K=V]... [--port N] [--bind ADDRESS]`: one process that watches a fleet
// through its Redis and serves what it sees: a live page at / (detail/fleet_page.h), the same
// figures as JSON at /api/fleet, and the fleet's metrics for Prometheus at /metrics. It reads
// Redis only, every --interval seconds on a thread of its own, and keeps the last hour of
// readings in memory for the page's charts. It listens on loopback unless told otherwise; with
// CRAWLER_SERVE_AUTH=user:password in its environment every request must carry those
// credentials (HTTP Basic), and listening beyond loopback without them is refused unless
// --no-auth says so.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "crawler/basic_auth.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/cli/detail/fleet_page.h"
#include "crawler/cli/detail/fleet_session.h"
#include "crawler/metrics_server.h"
#include "scheduler/fleet/fleet_view.h"

namespace crawler::cli {
namespace {

namespace asio = boost::asio;

struct serve_options {
  std::string spider;
  std::vector<std::string> overrides;
  unsigned short port = 6800;  // Scrapyd's, where operators of scrapy-redis fleets look
  std::string bind = "127.0.0.1";
  double interval = 2;
  bool no_auth = false;
};

// One reading's figures for the charts.
struct reading {
  double t;  // Redis's clock, s
  long long pages, items, queued, leased, alive;
};

long long as_count(const std::string& stored) {
  char* end = nullptr;
  long long value = std::strtoll(stored.c_str(), &end, 10);
  return end && *end == '\0' && !stored.empty() ? value : 0;
}

// The stats that say something went wrong, by kind (Scrapy's names).
nlohmann::json errors_of(const nlohmann::json& stats) {
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [name, value] : stats.items()) {
    bool status_error = name.starts_with("downloader/response_status_count/") &&
                        name.size() > 33 && name[33] >= '4';
    if (name.starts_with("downloader/exception_type_count/") ||
        name.starts_with("spider_exceptions/") || name == "log_count/ERROR" ||
        name == "log_count/CRITICAL" || name == "retry/max_reached" || status_error) {
      errors[name] = value;
    }
  }
  return errors;
}

// The fleet as last read, and its last hour, read on a thread of its own so that a slow or
// unreachable Redis never holds a request to the page.
class fleet_watch {
 public:
  fleet_watch(crawler::settings settings, std::string spider, double interval)
      : settings_(std::move(settings)),
        spider_(std::move(spider)),
        interval_(std::chrono::duration<double>(interval)),
        session_(settings_),
        thread_([this] { watch(); }) {}
  ~fleet_watch() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  fleet_watch(const fleet_watch&) = delete;
  fleet_watch& operator=(const fleet_watch&) = delete;

  std::string json() const {
    std::lock_guard lock(mutex_);
    nlohmann::json out{{"spider", spider_}, {"error", error_}, {"reasons", reasons_},
                       {"history", nlohmann::json::array()}};
    for (const auto& r : history_) {
      out["history"].push_back({{"t", r.t}, {"pages", r.pages}, {"items", r.items},
                                {"queued", r.queued}, {"leased", r.leased}, {"alive", r.alive}});
    }
    fleet_state fleet = state_.value_or(fleet_state{});
    out.update({{"redis", fleet.redis_address},
                {"queue", fleet.queue},
                {"now", fleet.now},
                {"queued", fleet.queued},
                {"leased", fleet.leased},
                {"start_urls_waiting", fleet.start_urls_waiting},
                {"dead_letters", fleet.dead_letters},
                {"set_aside", fleet.set_aside},
                {"start_urls_set_aside", fleet.start_urls_set_aside},
                {"pages", as_count(fleet.pages)},
                {"items", as_count(fleet.items)},
                {"errors", errors_of(fleet.stats)},
                {"partial", fleet.partial},
                {"workers", nlohmann::json::array()}});
    for (const auto& worker : fleet.workers) {
      double up = worker.field("heartbeat") - worker.field("started");
      double pages = worker.field("pages");
      out["workers"].push_back({{"id", worker.id},
                                {"readable", worker.readable},
                                {"live", worker.live},
                                {"up", up},
                                {"pages", pages},
                                {"items", worker.field("items")},
                                {"in_flight", worker.field("in_flight")},
                                {"pages_per_second", up > 0 ? pages / up : 0.0},
                                {"heartbeat_age", worker.heartbeat_age},
                                {"leases", worker.leases},
                                {"leases_back_in", worker.leases_back_in}});
    }
    // Whatever Redis holds goes out as JSON text, never as markup: a name may hold "<script>".
    return out.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  }

  std::string metrics() const {
    std::lock_guard lock(mutex_);
    return state_ ? fleet_metrics(*state_) : std::string();
  }

 private:
  void watch() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      std::optional<fleet_state> fleet;
      std::map<std::string, std::map<std::string, long long>> reasons;
      std::string error;
      try {
        fleet = read_fleet(session_.client(), settings_, spider_);
        reasons = read_fleet_reasons(session_.client(), settings_, spider_);
      } catch (const std::exception& failed) {
        error = redact(failed.what());
      }
      lock.lock();
      error_ = error;
      if (fleet) {
        reasons_ = std::move(reasons);
        long long alive = std::count_if(fleet->workers.begin(), fleet->workers.end(),
                                        [](const auto& w) { return w.readable && w.live; });
        history_.push_back({fleet->now, as_count(fleet->pages), as_count(fleet->items),
                            fleet->queued, fleet->leased, alive});
        while (!history_.empty() && history_.front().t < fleet->now - 3600) history_.pop_front();
        state_ = std::move(fleet);
      }
      wake_.wait_for(lock, interval_, [this] { return stopping_; });
    }
  }

  const crawler::settings settings_;
  const std::string spider_;
  const std::chrono::duration<double> interval_;
  redis_session session_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::optional<fleet_state> state_;
  std::string error_;
  std::map<std::string, std::map<std::string, long long>> reasons_;
  std::deque<reading> history_;
  std::thread thread_;  // last: started once everything it reads is built
};

int serve(const serve_options& options) {
  if (!(options.interval >= 0.1 && options.interval <= 3600)) {
    throw std::invalid_argument("--interval: " + std::to_string(options.interval) +
                                " is not a number of seconds from 0.1 to 3600");
  }
  std::string authorization;
  if (const char* credentials = std::getenv("CRAWLER_SERVE_AUTH"); credentials && *credentials) {
    std::string_view given(credentials);
    auto colon = given.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      throw std::invalid_argument(
          "CRAWLER_SERVE_AUTH: not \"user:password\" (the value is not shown)");
    }
    authorization = basic_authorization(given.substr(0, colon), given.substr(colon + 1));
  }
  boost::system::error_code not_an_address;
  auto address = asio::ip::make_address(options.bind, not_an_address);
  if (!not_an_address && !address.is_loopback() && authorization.empty() && !options.no_auth) {
    throw std::invalid_argument(
        "--bind " + options.bind +
        ": the fleet's page would be open to anyone who reaches this address; set "
        "CRAWLER_SERVE_AUTH=user:password in the environment, or say --no-auth");
  }
  auto settings = fleet_settings(options.overrides);
  fleet_watch watch(settings, options.spider, options.interval);
  asio::io_context io;
  crawler::metrics_server server(
      io, options.bind, options.port,
      {{"/", {"text/html; charset=utf-8", [] { return std::string(detail::fleet_page_html); }}},
       {"/api/fleet", {"application/json", [&watch] { return watch.json(); }}},
       {"/metrics",
        {"text/plain; version=0.0.4; charset=utf-8", [&watch] { return watch.metrics(); }}}},
      {.host_option = "--bind",
       .port_option = "--port",
       .what = "the fleet's page",
       .authorization = authorization,
       .not_found = "Not found: the fleet's page is at /, its figures at /api/fleet and its "
                    "metrics at /metrics\n"});
  auto host = address.is_v6() ? "[" + options.bind + "]" : options.bind;
  std::cout << "Serving fleet \"" << options.spider << "\" at http://" << host << ":"
            << server.port() << "/ (metrics at /metrics); Ctrl-C stops" << std::endl;
  asio::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&io](boost::system::error_code, int) { io.stop(); });
  io.run();
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_status) {
  auto given = std::make_shared<serve_options>();
  CLI::App* command = app.add_subcommand(
      "serve", "Serve a live page on a fleet, its figures as JSON and its Prometheus metrics");
  command->add_option("spider", given->spider, "the spider's name, as in its Redis keys")
      ->required();
  command->add_option("--port", given->port, "the port to listen on (0: a free one)")
      ->capture_default_str();
  command->add_option("--bind", given->bind, "the address to listen on")->capture_default_str();
  command->add_option("--interval", given->interval, "seconds between two readings of Redis")
      ->capture_default_str();
  command->add_flag("--no-auth", given->no_auth,
                    "listen beyond loopback without CRAWLER_SERVE_AUTH credentials");
  command->add_option("-s,--set", given->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->callback([given, &exit_status] {
    exit_status = run_command("serve", [&] { return serve(*given); });
  });
}

}  // namespace crawler::cli
