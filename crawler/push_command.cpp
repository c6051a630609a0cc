// `crawler push NAME URL... | -`: start URLs for a fleet (REDIS_START_URLS_KEY), which its workers
// move into the shared queue through the shared dupefilter.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <iostream>
#include <thread>

#include "config/redact.h"
#include "config/settings.h"
#include "crawler/commands.h"
#include "redis/client.h"
#include "scheduler/redis_queue.h"

namespace crawler::cli {
namespace {

namespace asio = boost::asio;

struct push_options {
  std::string spider;
  std::vector<std::string> urls;
  std::vector<std::string> overrides;
};

constexpr std::size_t batch_size = 1000;  // entries per round trip

std::string key_for(const settings& settings, const std::string& spider) {
  auto key = settings.get_string("REDIS_START_URLS_KEY");
  for (std::string_view placeholder : {"%(spider)s", "%(name)s"}) {
    for (std::size_t at; (at = key.find(placeholder)) != std::string::npos;)
      key.replace(at, placeholder.size(), spider);
  }
  return key;
}

int run(const push_options& options) {
  crawler::settings settings;
  for (const auto& override : options.overrides) settings.set_from_string(override);
  remember_secrets(settings);
  auto key = key_for(settings, options.spider);
  bool as_set = settings.get_bool("REDIS_START_URLS_AS_SET");

  // Every entry is checked before anything is sent: a typo stops the push, naming its line.
  std::vector<std::string> entries;
  auto add = [&](const std::string& entry, const std::string& where) {
    try {
      start_request_from(entry);
    } catch (const std::exception& error) {
      throw std::invalid_argument(where + ": " + error.what());
    }
    entries.push_back(entry);
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

  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread loop([&io] { io.run(); });
  struct stop_loop {
    asio::io_context& io;
    std::thread& thread;
    decltype(work)& guard;
    ~stop_loop() {
      guard.reset();
      io.stop();
      thread.join();
    }
  } stopper{io, loop, work};
  auto client = redis::client::create(io.get_executor(), redis::endpoint_from(settings));
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
  client->close();
  std::cout << "Pushed " << entries.size() << " start URLs to " << key << '\n';
  return 0;
}

}  // namespace

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
