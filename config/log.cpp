#include "config/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <mutex>

#include "config/redact.h"
#include "config/settings.h"
#include "config/stats.h"

namespace crawler {
namespace {

std::mutex registry_mutex;
spdlog::level::level_enum current_level = spdlog::level::debug;

// Scrapy prints upper-case level names ("WARNING"); spdlog's own flag prints "warning".
class scrapy_level_flag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr std::string_view names[] = {"TRACE", "DEBUG",    "INFO", "WARNING",
                                                 "ERROR", "CRITICAL", "OFF"};
    std::string_view name = names[msg.level];
    dest.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<scrapy_level_flag>();
  }
};

// Standard error, with every credential redacted (redact.h) after the line is formatted, so
// neither a message nor its arguments can leak one.
class redacting_stderr_sink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    auto line = redact(std::string_view(formatted.data(), formatted.size()));
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

spdlog::sink_ptr shared_sink() {
  static spdlog::sink_ptr sink = [] {
    auto s = std::make_shared<redacting_stderr_sink>();
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<scrapy_level_flag>('*').set_pattern("%Y-%m-%d %H:%M:%S [%n] %*: %v");
    s->set_formatter(std::move(formatter));
    return s;
  }();
  return sink;
}

// Scrapy's log_count/<LEVEL> stats: every message that passed the level, counted by level.
class counting_sink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_stats(crawler::stats* stats) {
    std::lock_guard lock(mutex_);
    stats_ = stats;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    static constexpr std::string_view keys[] = {
        "log_count/TRACE", "log_count/DEBUG",    "log_count/INFO", "log_count/WARNING",
        "log_count/ERROR", "log_count/CRITICAL", "log_count/OFF"};
    if (stats_) stats_->inc_value(keys[msg.level]);
  }
  void flush_() override {}

 private:
  crawler::stats* stats_ = nullptr;
};

std::shared_ptr<counting_sink> counter() {
  static auto sink = std::make_shared<counting_sink>();
  return sink;
}

}  // namespace

void count_log_messages(stats* stats) {
  counter()->set_stats(stats);
}

void configure_logging(const settings& settings) {
  std::string name = settings.get_string("LOG_LEVEL");
  spdlog::level::level_enum level;
  if (name == "DEBUG")
    level = spdlog::level::debug;
  else if (name == "INFO")
    level = spdlog::level::info;
  else if (name == "WARNING" || name == "WARN")
    level = spdlog::level::warn;
  else if (name == "ERROR")
    level = spdlog::level::err;
  else if (name == "CRITICAL")
    level = spdlog::level::critical;
  else
    throw settings_error("LOG_LEVEL: unknown level '" + name +
                         "' (DEBUG, INFO, WARNING, ERROR, CRITICAL)");
  std::lock_guard lock(registry_mutex);
  current_level = level;
  spdlog::apply_all([level](const std::shared_ptr<spdlog::logger>& l) { l->set_level(level); });
}

std::shared_ptr<spdlog::logger> get_logger(std::string_view component) {
  std::lock_guard lock(registry_mutex);
  std::string name(component);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger =
      std::make_shared<spdlog::logger>(name, spdlog::sinks_init_list{shared_sink(), counter()});
  logger->set_level(current_level);
  spdlog::register_logger(logger);
  return logger;
}

std::string describe_error(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace crawler
