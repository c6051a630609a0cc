#include "crawler/detail/memory_usage.h"

#include <sys/resource.h>

#include <chrono>

namespace crawler::detail {

std::int64_t peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return std::int64_t(usage.ru_maxrss) * 1024;
}

memory_usage::memory_usage(boost::asio::io_context& io, const settings& settings, stats& stats,
                           std::function<void(std::string)> close)
    : timer_(io),
      stats_(stats),
      close_(std::move(close)),
      interval_(settings.get_double("MEMUSAGE_CHECK_INTERVAL_SECONDS")),
      limit_bytes_(settings.get_int("MEMUSAGE_LIMIT_MB") * 1024 * 1024),
      warning_bytes_(settings.get_int("MEMUSAGE_WARNING_MB") * 1024 * 1024),
      logger_(get_logger("memusage")) {
  if (!settings.get_bool("MEMUSAGE_ENABLED")) return;
  stats_.set_value("memusage/startup", peak_resident_bytes());
  check();  // at once, as Scrapy's looping calls start
}

void memory_usage::check() {
  auto used = peak_resident_bytes();
  stats_.max_value("memusage/max", used);
  auto mib = used / (1024 * 1024);
  if (limit_bytes_ > 0 && used > limit_bytes_ && !closed_) {
    closed_ = true;
    stats_.set_value("memusage/limit_reached", 1);
    logger_->error("Memory usage exceeded {}MiB. Shutting down the crawl (MEMUSAGE_LIMIT_MB={})",
                   mib, limit_bytes_ / (1024 * 1024));
    close_("memusage_exceeded");
  }
  if (warning_bytes_ > 0 && used > warning_bytes_ && !warned_) {
    warned_ = true;
    stats_.set_value("memusage/warning_reached", 1);
    logger_->warn("Memory usage reached {}MiB (MEMUSAGE_WARNING_MB={})", mib,
                  warning_bytes_ / (1024 * 1024));
  }
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(interval_)));
  timer_.async_wait([this](boost::system::error_code error) {
    if (!error) check();
  });
}

}  // namespace crawler::detail
