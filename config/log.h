// Logging in Scrapy's shape: "2026-11-22 16:52:31 [dupefilter] INFO: message", to standard error.
//
//   auto log = crawler::get_logger("dupefilter");
//   log->debug("Filtered duplicate request: <GET {}>", url);
//
// Every logger shares one sink and the level set by configure_logging() from LOG_LEVEL
// (DEBUG, INFO, WARNING, ERROR, CRITICAL; Scrapy's default DEBUG) and LOG_ENABLED. The sink writes
// to LOG_FILE when set (appending unless LOG_FILE_APPEND is false), lines shaped by LOG_FORMAT
// (Python logging's %(asctime)s, %(name)s, %(levelname)s, %(message)s, %(process)d, %(thread)d),
// LOG_DATEFORMAT and LOG_SHORT_NAMES, as Scrapy's.
#pragma once

#include <spdlog/spdlog.h>

#include <exception>
#include <memory>
#include <string>
#include <string_view>

namespace crawler {

class settings;
class stats;

/// Applies the LOG_* settings to every logger, present and future. Throws settings_error naming
/// the setting: an unknown level, a LOG_FORMAT field it cannot print, a LOG_FILE it cannot open.
void configure_logging(const settings& settings);

/// Draws `line` as the last line of a terminal on standard error, replacing the previous one, with
/// log lines written above it (redacted as they are). An empty `line` erases it. Only for a
/// standard error that is a terminal.
void show_status_line(std::string line);

/// Counts every message logged from now on as `log_count/<LEVEL>` in `stats` (Scrapy's stats);
/// null stops counting. `stats` must outlive the counting.
void count_log_messages(stats* stats);

/// The logger named `component`, created on first use.
std::shared_ptr<spdlog::logger> get_logger(std::string_view component);

/// What an exception carried to a completion handler says, for a log line: its what(), or
/// "unknown error".
std::string describe_error(std::exception_ptr error);

}  // namespace crawler
