// The commands that talk to a fleet's Redis: `crawler push NAME URL... | -` (start URLs, which
// the workers move into the shared queue through the shared dupefilter) and `crawler stats NAME`
// (the fleet's summed counters).
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/redact.h"
#include "config/settings.h"
#include "crawler/cli/detail/commands.h"
#include "redis/client.h"
#include "scheduler/start_request.h"

namespace crawler::cli {
namespace {

namespace asio = boost::asio;

struct push_options {
  std::string spider;
  std::vector<std::string> urls;
  std::vector<std::string> overrides;
};

constexpr std::size_t batch_size = 1000;  // entries per round trip

// The settings of a fleet command: the defaults and each -s, with their secrets kept out of
// whatever the command prints.
crawler::settings fleet_settings(const std::vector<std::string>& overrides) {
  crawler::settings settings;
  for (const auto& override : overrides) settings.set_from_string(override);
  remember_secrets(settings);
  return settings;
}

// A loop on its own thread for the Redis client, while the command waits on futures.
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
  redis::client& client() { return *client_; }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::shared_ptr<redis::client> client_;
};

int run(const push_options& options) {
  auto settings = fleet_settings(options.overrides);
  auto key = spider_key(settings.get_string("REDIS_START_URLS_KEY"), options.spider);
  bool as_set = settings.get_bool("REDIS_START_URLS_AS_SET");

  // With the fleet's key, every entry is signed (as JSON, a plain URL as {"url": ...}), so the
  // workers take it as the operator's own rather than as anyone's.
  auto signer = entry_signer::from_environment();
  // Every entry is checked before anything is sent: a typo stops the push, naming its line.
  std::vector<std::string> entries;
  auto add = [&](std::string entry, const std::string& where) {
    try {
      if (signer && entry.find_first_not_of(" \t") != std::string::npos) {
        auto text = std::string_view(entry).substr(entry.find_first_not_of(" \t"));
        entry = signer->sign(text.starts_with('{') ? std::string(text)
                                                   : nlohmann::json{{"url", text}}.dump());
      }
      start_request_from(entry, signer ? &*signer : nullptr);
    } catch (const std::exception& error) {
      throw std::invalid_argument(where + ": " + error.what());
    }
    entries.push_back(std::move(entry));
  };
  for (std::size_t i = 0; i < options.urls.size(); ++i) {
    if (options.urls[i] != "-") {
      add(options.urls[i], "argument " + std::to_string(i + 1));
      continue;
    }
    std::string line;
    for (std::size_t number = 1; std::getline(std::cin, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (line.back() == '\r') line.pop_back();
      add(line, "stdin:" + std::to_string(number));
    }
  }

  redis_session session(settings);
  auto* client = &session.client();
  for (std::size_t start = 0; start < entries.size(); start += batch_size) {
    redis::command command{as_set ? "SADD" : "RPUSH", key};
    auto end = std::min(entries.size(), start + batch_size);
    command.insert(command.end(), entries.begin() + std::ptrdiff_t(start),
                   entries.begin() + std::ptrdiff_t(end));
    auto reply = client->async_command(std::move(command), asio::use_future).get();
    if (reply.is_error()) {
      throw std::runtime_error("pushing to " + key + " at " + client->where().address() +
                               " failed: " + reply.str);
    }
  }
  std::cout << "Pushed " << entries.size() << " start URLs to " << key << '\n';
  return 0;
}

int print_stats(const std::string& spider, const std::vector<std::string>& overrides) {
  auto settings = fleet_settings(overrides);
  redis_session session(settings);
  auto key = spider + ":stats";
  auto reply = session.client().async_command({"HGETALL", key}, asio::use_future).get();
  if (reply.is_error()) {
    throw std::runtime_error("reading " + key + " at " + session.client().where().address() +
                             " failed: " + reply.str);
  }
  nlohmann::json stats = nlohmann::json::object();
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    const auto& value = reply.elements[i + 1].str;
    char* end = nullptr;
    long long number = std::strtoll(value.c_str(), &end, 10);
    if (end && *end == '\0' && !value.empty()) {
      stats[reply.elements[i].str] = number;
    } else {
      stats[reply.elements[i].str] = value;
    }
  }
  std::cout << stats.dump(2) << '\n';
  return 0;
}

// The number of entries of `key` whatever its type (a priority queue is a sorted set, fifo and
// lifo are lists, start URLs a list or a set).
constexpr const char* size_script = R"lua(
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'zset' then return redis.call('ZCARD', KEYS[1]) end
if kind == 'list' then return redis.call('LLEN', KEYS[1]) end
if kind == 'set' then return redis.call('SCARD', KEYS[1]) end
if kind == 'hash' then return redis.call('HLEN', KEYS[1]) end
return 0
)lua";

int print_status(const std::string& spider, const std::vector<std::string>& overrides) {
  auto settings = fleet_settings(overrides);
  redis_session session(settings);
  auto& client = session.client();
  auto key_of = [&](const char* setting) {
    return spider_key(settings.get_string(setting), spider);
  };
  auto queue = key_of("SCHEDULER_QUEUE_KEY");
  auto replies =
      client
          .async_pipeline(
              {{"HGETALL", spider + ":workers"},
               {"EVAL", size_script, "1", queue},
               {"HLEN", queue + ":leased"},
               {"EVAL", size_script, "1", key_of("REDIS_START_URLS_KEY")},
               {"HMGET", spider + ":stats", "response_received_count", "item_scraped_count"},
               {"TIME"}},
              asio::use_future)
          .get();
  for (const auto& reply : replies) {
    if (reply.is_error()) {
      throw std::runtime_error("reading the fleet at " + client.where().address() + ": " +
                               reply.str);
    }
  }
  double now = std::stod(replies[5].elements[0].str) + std::stod(replies[5].elements[1].str) / 1e6;
  auto number = [](const redis::reply& reply) {
    return reply.type == redis::reply::kind::string ? std::stoll(reply.str) : 0LL;
  };
  std::cout << "Fleet \"" << spider << "\" at " << client.where().address() << "\n";
  std::size_t alive = 0;
  double rate = 0;
  std::string lines;
  for (std::size_t i = 0; i + 1 < replies[0].elements.size(); i += 2) {
    auto worker = nlohmann::json::parse(replies[0].elements[i + 1].str, nullptr, false);
    if (!worker.is_object()) continue;
    double heartbeat = worker.value("heartbeat", 0.0), started = worker.value("started", 0.0);
    double interval = worker.value("interval", 10.0);
    bool live = now - heartbeat < 3 * interval;
    std::int64_t pages = worker.value("pages", std::int64_t{0});
    double up = heartbeat - started;
    if (live) {
      ++alive;
      if (up > 0) rate += double(pages) / up;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "  %-36s %s  up %6.0f s  pages %8lld  items %8lld  in flight %4lld  "
                  "heartbeat %.0f s ago\n",
                  replies[0].elements[i].str.c_str(), live ? "alive" : "DEAD ", up,
                  static_cast<long long>(pages),
                  static_cast<long long>(worker.value("items", std::int64_t{0})),
                  static_cast<long long>(worker.value("in_flight", std::int64_t{0})),
                  now - heartbeat);
    lines += line;
  }
  std::cout << "workers: " << alive << " alive\n" << lines;
  std::cout << "queued: " << replies[1].integer << "  in flight (leased): " << replies[2].integer
            << "  start URLs waiting: " << replies[3].integer << "\n";
  std::cout << "pages: " << number(replies[4].elements[0])
            << "  items: " << number(replies[4].elements[1]) << "  (as of the last heartbeats)\n";
  char line[128];
  std::snprintf(line, sizeof line, "pages/s: %.1f (live workers, each since it started)\n", rate);
  std::cout << line;
  return 0;
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
    try {
      exit_status = print(*spider, *overrides);
    } catch (const std::exception& error) {
      std::cerr << "crawler " << name << ": " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });
}

}  // namespace

void add_status_command(CLI::App& app, int& exit_status) {
  add_fleet_view(app, exit_status, "status",
                 "One screen on a fleet: workers alive, queued, in flight, pages, items, pages/s",
                 print_status);
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
    try {
      exit_status = run(*options);
    } catch (const std::exception& error) {
      std::cerr << "crawler push: " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });
}

}  // namespace crawler::cli
