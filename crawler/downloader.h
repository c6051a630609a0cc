// The downloader: per-host slots (politeness) in front of libcurl's multi interface on the
// engine's Asio loop.
//
//   crawler::downloader downloader{io.get_executor(), settings, stats};
//   downloader.fetch(std::move(request), [](crawler::download_result result) {
//     if (result.response) ...; else log(result.error_type, result.error_message);
//   });
//
// A request first waits in its slot (keyed by host name, or meta "download_slot"; with
// CONCURRENT_REQUESTS_PER_IP, by the host's IP address, so host names that share a server share its
// limit): at most CONCURRENT_REQUESTS_PER_DOMAIN (or _PER_IP) transfers per slot, DOWNLOAD_DELAY
// seconds between starts (0.5x-1.5x with RANDOMIZE_DOWNLOAD_DELAY), adapted to the server's latency
// with AUTOTHROTTLE_ENABLED (Scrapy's formula). Then libcurl fetches it: connections are reused,
// HTTP/2 is negotiated over TLS, bodies are decoded (gzip, deflate, br) and cut off past
// DOWNLOAD_MAXSIZE while they arrive, so a decompression bomb never fills memory. Redirects are not
// followed here: the redirect middleware sends them back through the scheduler.
//
// The engine keeps at most CONCURRENT_REQUESTS requests in the downloader (needs_backout()).
// Completions run on the loop. Not thread-safe: the engine's loop owns it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/crawl_clock.h"
#include "config/settings.h"
#include "config/stats.h"
#include "crawler/download_result.h"
#include "crawler/parse/response.h"
#include "request/request.h"

namespace spdlog {
class logger;
}

namespace crawler {

namespace detail {
class curl_transfers;
struct transfer_options;
}  // namespace detail

class downloader {
 public:
  using completion = std::function<void(download_result)>;

  /// Reads the download settings once. Throws settings_error for a value it cannot use.
  downloader(boost::asio::any_io_executor executor, const settings& settings, stats& stats);
  ~downloader();
  downloader(const downloader&) = delete;
  downloader& operator=(const downloader&) = delete;

  /// Queues `request` in its slot; `done` runs once, on the loop, when it has been fetched or
  /// has failed. `body_limit`: the most bytes of the body anything will read (0: all of it); a
  /// body that grows past it is cut there, as it is decompressed, and the response comes with the
  /// flag "truncated" (where DOWNLOAD_MAXSIZE would cancel the download).
  void fetch(request request, completion done, std::size_t body_limit = 0);

  /// Requests accepted and not yet completed (waiting in slots or transferring).
  std::size_t active() const { return active_; }
  /// CONCURRENT_REQUESTS.
  std::size_t concurrency() const { return total_concurrency_; }
  /// True when the engine should not hand over more requests: CONCURRENT_REQUESTS reached,
  /// counting `held_elsewhere` requests the engine holds on their way here (robots.txt waits).
  bool needs_backout(std::size_t held_elsewhere = 0) const {
    return active_ + held_elsewhere >= total_concurrency_;
  }

  /// Makes `seconds` the least delay between downloads in the slot of `host` (a robots.txt
  /// Crawl-delay): DOWNLOAD_DELAY and AutoThrottle never go below it.
  void set_crawl_delay(const std::string& host, double seconds);

  /// The scheduler paces hosts (scheduler::paces_hosts()): slots start downloads without waiting
  /// a delay, though they keep the delay DOWNLOAD_DELAY, AutoThrottle and Crawl-delay make, for
  /// delay_of() to report. With CONCURRENT_REQUESTS_PER_IP, only when it paces `by_address`
  /// too: else the slots, one per address, keep waiting their delay, which no host's pace
  /// covers.
  void leave_delays_to_scheduler(bool by_address) {
    scheduler_paces_ = !slots_per_ip_ || by_address;
  }
  /// The delay the slot of `request` keeps now, when it is not DOWNLOAD_DELAY (a Crawl-delay,
  /// AutoThrottle's); nullopt when it is.
  std::optional<double> delay_of(const request& request) const;
  /// With CONCURRENT_REQUESTS_PER_IP, the server address `request`'s slot is keyed by: the host
  /// itself when it is an address, else once it was looked up; "" otherwise (without the
  /// setting, a meta "download_slot", before the lookup, a host whose lookup failed).
  std::string address_of(const request& request) const;

  /// Returns the requests still waiting in their slots (for a delay or a free transfer), which
  /// a graceful close puts back in the queue instead of waiting out DOWNLOAD_DELAY. Their
  /// completions never run; transfers under way go on.
  std::vector<request> take_waiting();

  /// Stops every transfer and returns every accepted request whose completion has not run, so a
  /// forced shutdown can put them back in the queue. Their completions never run.
  std::vector<request> abort_all();

 private:
  struct slot;
  struct waiting {
    crawler::request request;
    completion done;
    std::size_t body_limit = 0;
  };

  std::string slot_key(const request& request) const;
  void enter_slot(const std::string& key, waiting next);
  void resolve(const std::string& host);
  void process_queue(const std::string& key, slot& slot);
  void start_transfer(const std::string& key, slot& slot);
  void adjust_throttle(slot& slot, const download_result& result, double latency);
  void sweep_idle_slots();

  boost::asio::any_io_executor executor_;
  stats& stats_;
  std::size_t total_concurrency_;
  std::size_t per_slot_concurrency_;
  double delay_;
  bool randomize_delay_;
  bool scheduler_paces_ = false;
  bool autothrottle_;
  double autothrottle_start_delay_, autothrottle_max_delay_, autothrottle_target_;
  bool autothrottle_debug_;
  std::size_t active_ = 0;
  std::unique_ptr<detail::transfer_options> options_;
  std::unique_ptr<detail::curl_transfers> transfers_;
  std::map<std::string, std::unique_ptr<slot>, std::less<>> slots_;
  std::map<std::string, double, std::less<>> crawl_delays_;  // outlive idle slots
  // CONCURRENT_REQUESTS_PER_IP: each host's address, and the requests waiting for it.
  bool slots_per_ip_ = false;
  std::map<std::string, std::string, std::less<>> addresses_;
  std::map<std::string, std::vector<waiting>, std::less<>> resolving_;
  std::unique_ptr<boost::asio::ip::tcp::resolver> resolver_;
  std::unique_ptr<crawl_timer> sweep_timer_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace crawler
