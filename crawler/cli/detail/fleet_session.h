// What every fleet command starts with: its settings (the defaults and each -s, their secrets
// kept out of whatever the command prints) and a Redis client whose loop runs on a thread of its
// own while the command waits on futures. Private to the cli target.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/prometheus_text.h"
#include "config/redact.h"
#include "config/settings.h"
#include "redis/client.h"
#include "scheduler/fleet/fleet_view.h"

namespace crawler::cli {

inline crawler::settings fleet_settings(const std::vector<std::string>& overrides) {
  crawler::settings settings;
  for (const auto& override : overrides) settings.set_from_string(override);
  remember_secrets(settings);
  return settings;
}

/// The fleet's summed stats and its gauges in Prometheus' text format (`crawler status
/// --metrics`, `crawler serve`'s /metrics).
inline std::string fleet_metrics(const fleet_state& fleet) {
  double live = 0;
  for (const auto& worker : fleet.workers) live += worker.readable && worker.live;
  return prometheus_text(
      fleet.stats, fleet.spider,
      {{"fleet_workers_alive", "Workers whose heartbeat is recent", live},
       {"fleet_queued_requests", "Requests in the fleet's queue", double(fleet.queued)},
       {"fleet_leased_requests", "Requests leased to workers (in flight)", double(fleet.leased)},
       {"fleet_start_urls_waiting", "Start URLs not yet taken", double(fleet.start_urls_waiting)},
       {"fleet_dead_letters", "Requests in <queue>:dead", double(fleet.dead_letters)},
       {"fleet_set_aside", "Records in <queue>:bad and the start URLs' :bad",
        double(fleet.set_aside + fleet.start_urls_set_aside)}});
}

class redis_session {
 public:
  explicit redis_session(const settings& settings)
      : work_(io_.get_executor()),
        thread_([this] { io_.run(); }),
        client_(redis::client::create(io_.get_executor(), redis::endpoint_from(settings))) {}
  ~redis_session() {
    client_->close();
    work_.reset();
    io_.stop();
    thread_.join();
  }
  redis_session(const redis_session&) = delete;
  redis_session& operator=(const redis_session&) = delete;

  redis::client& client() { return *client_; }
  const std::shared_ptr<redis::client>& shared_client() const { return client_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
  std::shared_ptr<redis::client> client_;
};

}  // namespace crawler::cli
