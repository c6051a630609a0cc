#include "config/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "config/file_writes.h"
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

// Standard error or LOG_FILE, with every credential redacted (redact.h) after the line is
// formatted, so neither a message nor its arguments can leak one.
class redacting_sink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ~redacting_sink() override {
    if (file_) std::fclose(file_);
  }
  /// Where lines go from now on: `file` (taken over), or standard error when null.
  void write_to(std::FILE* file) {
    std::lock_guard lock(mutex_);
    if (file_) std::fclose(file_);
    file_ = file;
  }

  /// Draws `line` at the bottom of the terminal on standard error, in place of the last one; log
  /// lines to standard error are written above it. Empty: the line is erased.
  void show_status(std::string line) {
    std::lock_guard lock(mutex_);
    status_ = redact(line);
    std::string drawn = "\r" + status_ + "\x1b[K";
    std::fwrite(drawn.data(), 1, drawn.size(), stderr);
    std::fflush(stderr);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    auto line = redact(std::string_view(formatted.data(), formatted.size()));
    if (!file_ && !status_.empty()) line = "\r\x1b[K" + line + status_ + "\x1b[K";
    std::fwrite(line.data(), 1, line.size(), file_ ? file_ : stderr);
    // A LOG_FILE line is in the file when it is logged, as Python's FileHandler flushes each
    // record: `tail -f` shows a running crawl, and a killed one leaves its last words.
    if (file_) std::fflush(file_);
  }
  void flush_() override { std::fflush(file_ ? file_ : stderr); }

 private:
  std::FILE* file_ = nullptr;
  std::string status_;  // the status line drawn under the log, if any
};

std::unique_ptr<spdlog::formatter> formatter_for(const std::string& pattern) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<scrapy_level_flag>('*').set_pattern(pattern);
  return formatter;
}

std::shared_ptr<redacting_sink> shared_sink() {
  static auto sink = [] {
    auto made = std::make_shared<redacting_sink>();
    made->set_formatter(formatter_for("%Y-%m-%d %H:%M:%S [%n] %*: %v"));  // before any settings
    return made;
  }();
  return sink;
}

// LOG_FORMAT's Python logging fields and LOG_DATEFORMAT's strftime directives as an spdlog
// pattern. Throws settings_error naming a field it does not know.
std::string log_pattern(const settings& settings) {
  const std::string format = settings.get_string("LOG_FORMAT");
  const std::string date = settings.get_string("LOG_DATEFORMAT");  // spdlog takes %Y, %H, ...
  std::string name = settings.get_bool("LOG_SHORT_NAMES") ? "crawler" : "%n";
  std::string pattern;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format.compare(i, 2, "%%") == 0) {
      pattern += "%%";
      ++i;
    } else if (format.compare(i, 2, "%(") == 0) {
      auto close = format.find(')', i);
      if (close == std::string::npos || close + 1 >= format.size()) {
        throw settings_error("LOG_FORMAT: unterminated field at " + std::to_string(i) + ": " +
                             format);
      }
      auto field = format.substr(i + 2, close - i - 2);
      if (field == "asctime")
        pattern += date;
      else if (field == "name")
        pattern += name;
      else if (field == "levelname")
        pattern += "%*";
      else if (field == "message")
        pattern += "%v";
      else if (field == "process")
        pattern += "%P";
      else if (field == "thread")
        pattern += "%t";
      else {
        throw settings_error("LOG_FORMAT: unsupported field %(" + field +
                             ") (asctime, name, levelname, message, process, thread)");
      }
      i = close + 1;  // past the conversion letter: s, d
    } else if (format[i] == '%') {
      pattern += "%%";
    } else {
      pattern += format[i];
    }
  }
  return pattern;
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

void show_status_line(std::string line) {
  shared_sink()->show_status(std::move(line));
}

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
  if (!settings.get_bool("LOG_ENABLED")) level = spdlog::level::off;
  auto formatter = formatter_for(log_pattern(settings));
  std::FILE* file = nullptr;
  if (auto path = settings.get_string("LOG_FILE"); !path.empty()) {
    // Not through a link planted at the name (file_writes.h): a log in a shared folder would
    // otherwise append to, or cut, whatever file the link points at.
    bool append = settings.get_bool("LOG_FILE_APPEND");
    int fd = open_destination(path, 0666, !append);
    if (fd >= 0) file = ::fdopen(fd, append ? "a" : "w");
    if (!file) {
      int error = errno;
      if (fd >= 0) ::close(fd);
      throw settings_error("LOG_FILE: cannot open " + path + ": " +
                           (error == ELOOP ? std::string("a symbolic link to a file (a log is "
                                                         "written to a file itself, or to a "
                                                         "device or pipe)")
                                           : std::strerror(error)));
    }
  }
  shared_sink()->set_formatter(std::move(formatter));
  shared_sink()->write_to(file);
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
