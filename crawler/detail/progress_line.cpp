#include "crawler/detail/progress_line.h"

#include <sys/ioctl.h>
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
  erase();
}

void progress_line::erase() {
  if (erased_) return;
  erased_ = true;
  timer_.cancel();
  show_status_line("");
}

void progress_line::draw() {
  show_status_line(text(terminal_columns()));
  timer_.expires_after(std::chrono::milliseconds(250));
  timer_.async_wait([this](boost::system::error_code error) {
    if (!error) draw();
  });
}

namespace {

std::string clock_text(double seconds) {
  char clock[32];
  auto whole = std::int64_t(seconds);
  if (whole >= 3600) {
    std::snprintf(clock, sizeof clock, "%lld:%02lld:%02lld", (long long)(whole / 3600),
                  (long long)(whole / 60 % 60), (long long)(whole % 60));
  } else {
    std::snprintf(clock, sizeof clock, "%lld:%02lld", (long long)(whole / 60),
                  (long long)(whole % 60));
  }
  return clock;
}

// Columns kept free at the right: a character in the last column leaves some terminals about to
// wrap, and the next redraw would start on a new row.
std::size_t usable(std::size_t columns) {
  return columns > 1 ? columns - 1 : 1;
}

}  // namespace

std::size_t terminal_columns() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

std::string fit_line(const std::vector<line_part>& parts, std::string_view separator,
                     std::size_t width) {
  int highest = 0;
  for (const auto& part : parts) highest = std::max(highest, part.rank);
  std::string line;
  for (int rank = highest; rank >= 0; --rank) {
    line.clear();
    for (const auto& part : parts) {
      if (part.rank > rank) continue;
      if (!line.empty()) line += separator;
      line += part.text;
    }
    if (line.size() <= width) return line;
  }
  line.resize(width);
  return line;
}

std::string progress_line::text(std::size_t columns) const {
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  auto pages = stats_.get_int("response_received_count");
  auto items = stats_.get_int("item_scraped_count");
  auto dupes = stats_.get_int("dupefilter/filtered") + stats_.get_int("bloomfilter/filtered");
  auto errors = stats_.get_int("log_count/ERROR");
  std::vector<line_part> parts{
      {clock_text(seconds), 0},
      {with_commas(pages) + " pages " +
           with_commas(std::int64_t(seconds > 0 ? pages / seconds : 0)) + "/s",
       0},
      {with_commas(items) + " items", 1},
      {with_commas(std::int64_t(gauges_.queued())) + " queued", 3},
      {with_commas(std::int64_t(gauges_.in_flight())) + " in flight", 5},
      {with_commas(dupes) + " dupes", 6},
      {with_commas(errors) + " errors", 4},
  };
  // Toward whichever CLOSESPIDER limit is nearer.
  double done = -1;
  if (page_limit_ > 0) done = std::max(done, double(pages) / double(page_limit_));
  if (item_limit_ > 0) done = std::max(done, double(items) / double(item_limit_));
  if (done >= 0) {
    done = std::min(done, 1.0);
    constexpr int width = 20;
    int filled = int(done * width);
    parts.push_back({"[" + std::string(filled, '#') + std::string(width - filled, '.') + "] " +
                         std::to_string(int(done * 100)) + "%",
                     2});
  }
  return fit_line(parts, " | ", usable(columns));
}

void progress_line::finish(const std::string& finish_reason) {
  erase();
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  auto pages = stats_.get_int("response_received_count");
  std::vector<line_part> parts{
      {"Done in " + clock_text(seconds) + " (" + finish_reason + "): " + with_commas(pages) +
           " pages (" + with_commas(std::int64_t(seconds > 0 ? pages / seconds : 0)) + "/s)",
       0},
      {with_commas(stats_.get_int("item_scraped_count")) + " items", 1},
      {with_commas(stats_.get_int("dupefilter/filtered") + stats_.get_int("bloomfilter/filtered")) +
           " dupes",
       3},
      {with_commas(stats_.get_int("log_count/ERROR")) + " errors", 2},
  };
  auto line = fit_line(parts, ", ", usable(terminal_columns())) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace crawler::detail
