#include "crawler/detail/progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "config/log.h"

namespace crawler::detail {

std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

bool progress_line::wanted(const settings& settings) {
  return settings.get_bool("PROGRESS") && isatty(STDERR_FILENO) == 1;
}

progress_line::progress_line(boost::asio::io_context& io, const settings& settings, stats& stats,
                             crawl_gauges gauges)
    : timer_(io),
      stats_(stats),
      gauges_(std::move(gauges)),
      started_(std::chrono::steady_clock::now()),
      page_limit_(settings.get_int("CLOSESPIDER_PAGECOUNT")),
      item_limit_(settings.get_int("CLOSESPIDER_ITEMCOUNT")) {
  draw();
}

progress_line::~progress_line() {
  show_status_line("");
}

void progress_line::draw() {
  show_status_line(text());
  timer_.expires_after(std::chrono::milliseconds(250));
  timer_.async_wait([this](boost::system::error_code error) {
    if (!error) draw();
  });
}

std::string progress_line::text() const {
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  auto pages = stats_.get_int("response_received_count");
  auto items = stats_.get_int("item_scraped_count");
  auto dupes = stats_.get_int("dupefilter/filtered") + stats_.get_int("bloomfilter/filtered");
  auto errors = stats_.get_int("log_count/ERROR");
  char clock[32];
  auto whole = std::int64_t(seconds);
  if (whole >= 3600) {
    std::snprintf(clock, sizeof clock, "%lld:%02lld:%02lld", (long long)(whole / 3600),
                  (long long)(whole / 60 % 60), (long long)(whole % 60));
  } else {
    std::snprintf(clock, sizeof clock, "%lld:%02lld", (long long)(whole / 60),
                  (long long)(whole % 60));
  }
  std::string line = std::string(clock) + " | " + with_commas(pages) + " pages " +
                     with_commas(std::int64_t(seconds > 0 ? pages / seconds : 0)) + "/s | " +
                     with_commas(items) + " items | " +
                     with_commas(std::int64_t(gauges_.queued())) + " queued | " +
                     with_commas(std::int64_t(gauges_.in_flight())) + " in flight | " +
                     with_commas(dupes) + " dupes | " + with_commas(errors) + " errors";
  // Toward whichever CLOSESPIDER limit is nearer.
  double done = -1;
  if (page_limit_ > 0) done = std::max(done, double(pages) / double(page_limit_));
  if (item_limit_ > 0) done = std::max(done, double(items) / double(item_limit_));
  if (done >= 0) {
    done = std::min(done, 1.0);
    constexpr int width = 20;
    int filled = int(done * width);
    line += " [" + std::string(filled, '#') + std::string(width - filled, '.') + "] " +
            std::to_string(int(done * 100)) + "%";
  }
  return line;
}

}  // namespace crawler::detail
