#include "crawler/run_crawl.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <functional>
#include <optional>

#include "config/file_writes.h"
#include "config/log.h"
#include "config/prometheus_text.h"
#include "config/redact.h"
#include "config/stats.h"
#include "crawler/detail/empty_crawl.h"
#include "crawler/detail/log_stats.h"
#include "crawler/detail/memory_usage.h"
#include "crawler/detail/periodic_log.h"
#include "crawler/detail/progress_line.h"
#include "crawler/engine.h"
#include "crawler/metrics_server.h"

namespace crawler {
namespace {

namespace asio = boost::asio;

// The stats as Scrapy's pprint shows them: one "'key': value" per line, sorted.
std::string dump_stats(const nlohmann::json& stats) {
  std::string text = "{";
  bool first = true;
  for (const auto& [key, value] : stats.items()) {
    text += first ? "'" : ",\n '";
    first = false;
    text += key + "': ";
    text += value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump();
  }
  return text + "}";
}

nlohmann::json overridden(const settings& settings) {
  auto defaults = crawler::settings{}.to_json();
  auto current = settings.to_json();
  nlohmann::json changed = nlohmann::json::object();
  for (const auto& [key, value] : current.items()) {
    if (defaults[key] != value) changed[key] = value;
  }
  return changed;
}

}  // namespace

settings settings_for(const spider& spider, const std::vector<std::string>& overrides,
                      const nlohmann::json& file_settings) {
  crawler::settings settings;
  for (const auto& [name, value] : spider.user_settings.items()) {
    settings.declare(name, value, "user_settings");
  }
  settings.merge_json(file_settings, "settings");
  settings.merge_json(spider.custom_settings, spider.name() + ".custom_settings");
  for (const auto& override : overrides) settings.set_from_string(override);
  return settings;
}

crawl_result run_crawl(spider& spider, const settings& settings, crawl_options options) {
  remember_secrets(settings);
  configure_logging(settings);
  stats stats;
  count_log_messages(&stats);
  struct stop_counting {
    ~stop_counting() { count_log_messages(nullptr); }
  } stop_counting;
  auto logger = get_logger("crawler");
  logger->info("crawler {} started (bot: {})", CRAWLER_VERSION, settings.get_string("BOT_NAME"));
  logger->info("Overridden settings:\n{}", redacted_settings(overridden(settings)).dump(1));
  for (const auto& warning : settings.warnings()) logger->warn("{}", warning);

  asio::io_context io(1);
  engine engine{io, settings, stats, spider};
  for (auto& pipeline : options.pipelines) engine.add_pipeline(std::move(pipeline));
  for (auto& middleware : options.downloader_middlewares) {
    engine.add_downloader_middleware(std::move(middleware));
  }
  for (auto& middleware : options.spider_middlewares) {
    engine.add_spider_middleware(std::move(middleware));
  }

  asio::signal_set signals(io);
  int signals_seen = 0;
  std::function<void()> wait_for_signal = [&] {
    signals.async_wait([&](boost::system::error_code error, int number) {
      if (error) return;
      auto name = number == SIGINT ? "SIGINT" : "SIGTERM";
      if (++signals_seen == 1) {
        logger->info("Received {}, shutting down gracefully. Send again to force", name);
        engine.close("shutdown");
      } else {
        logger->info("Received {} twice, forcing unclean shutdown", name);
        engine.force_close("shutdown");
      }
      wait_for_signal();
    });
  };
  if (options.handle_signals) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
    wait_for_signal();
  }
  detail::log_stats progress{io, stats, settings.get_double("LOGSTATS_INTERVAL")};
  engine.when_opened([&progress] { progress.start(); });
  detail::periodic_log periodic{io, settings, stats};
  detail::memory_usage memory{io, settings, stats,
                              [&engine](std::string reason) { engine.close(std::move(reason)); }};
  std::optional<metrics_server> metrics;
  if (auto port = settings.get_int("METRICS_PORT"); port > 0) {
    metrics.emplace(
        io, settings.get_string("METRICS_HOST"), static_cast<unsigned short>(port),
        [&stats, &engine, name = spider.name()] {
          return prometheus_text(
              stats.to_json(), name,
              {{"queued_requests", "Requests queued (a fleet worker: the fleet's queue)",
                double(engine.queued())},
               {"requests_in_flight", "Requests between the queue and their outcome",
                double(engine.in_flight())}});
        });
    logger->info("Metrics for Prometheus at {}", metrics->url());
  }
  std::optional<detail::progress_line> status;
  if (detail::progress_line::wanted(settings)) {
    status.emplace(io, settings, stats,
                   detail::crawl_gauges{.queued = [&engine] { return engine.queued(); },
                                        .in_flight = [&engine] { return engine.in_flight(); }});
  }

  crawl_result result;
  result.finish_reason = engine.run();
  if (status) status->erase();  // before the stats are dumped
  periodic.close();
  signals.clear();

  stats.max_value("memusage/max", detail::peak_resident_bytes());
  result.stats = stats.to_json();
  logger->info("Dumping crawler stats:\n{}", dump_stats(result.stats));
  if (options.expects_items) {
    if (auto why = detail::why_no_items(result.stats); !why.empty()) logger->warn("{}", why);
  }
  logger->info("Spider closed ({})", result.finish_reason);
  if (status) status->finish(result.finish_reason);  // the last line on the terminal
  if (auto path = settings.get_string("STATS_FILE"); !path.empty()) {
    try {
      write_destination(path, stats.to_json().dump(2) + '\n');
    } catch (const std::exception& error) {
      logger->error("STATS_FILE: {}", error.what());
    }
  }
  return result;
}

}  // namespace crawler
