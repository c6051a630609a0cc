#include "crawler/detail/log_stats.h"

#include <chrono>

namespace crawler::detail {

log_stats::log_stats(boost::asio::io_context& io, stats& stats, double interval)
    : timer_(io), stats_(stats), interval_(interval), logger_(get_logger("logstats")) {}

void log_stats::start() {
  if (interval_ > 0) log();
}

void log_stats::log() {
  auto pages = stats_.get_int("response_received_count");
  auto items = stats_.get_int("item_scraped_count");
  double per_minute = 60.0 / interval_;
  logger_->info("Crawled {} pages (at {} pages/min), scraped {} items (at {} items/min)", pages,
                std::int64_t((pages - last_pages_) * per_minute), items,
                std::int64_t((items - last_items_) * per_minute));
  last_pages_ = pages;
  last_items_ = items;
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(interval_)));
  timer_.async_wait([this](boost::system::error_code error) {
    if (!error) log();
  });
}

}  // namespace crawler::detail
