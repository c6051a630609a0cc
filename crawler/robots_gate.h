// ROBOTSTXT_OBEY: the gate an http(s) request passes before it is downloaded, as Scrapy's
// RobotsTxtMiddleware (the first downloader middleware).
//
//   crawler::robots_gate robots{settings, stats, fetch_without_scheduling, set_slot_delay};
//   robots.check(std::move(request), [](crawler::request request, bool allowed) { ... });
//
// The first request to a scheme://host:port makes the gate fetch that origin's /robots.txt (through
// the downloader middlewares, never the scheduler or the spider) and hold every request to it
// until the answer is in; later requests are answered at once from the cache. The answer, as RFC
// 9309 section 2.3.1 reads it:
//   2xx             the file's rules (see robots_txt.h), kept for 24 hours;
//   3xx, 4xx        "unavailable": everything is allowed, kept for 24 hours (after redirects,
//                   which the redirect middleware follows);
//   5xx, no answer  "unreachable": nothing is allowed for 10 minutes, then it is fetched again.
// A Crawl-delay in the rules becomes the least delay of the host's download slot.
//
// Rules are matched against ROBOTSTXT_USER_AGENT, else the request's User-Agent header, else
// USER_AGENT. Requests with meta `dont_obey_robotstxt` and other schemes pass straight through.
// Stats: robotstxt/request_count, robotstxt/response_count, robotstxt/response_status_count/<code>,
// robotstxt/exception_count/<error>, robotstxt/forbidden. A forbidden request fails with
// IgnoreRequest "Forbidden by robots.txt".
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/crawl_clock.h"
#include "config/settings.h"
#include "config/stats.h"
#include "crawler/downloader.h"
#include "crawler/parse/robots_txt.h"

namespace spdlog {
class logger;
}

namespace crawler {

class robots_gate {
 public:
  /// Downloads a request outside the crawl's queue; `done` gets what the middlewares made of it.
  using fetch_function =
      std::function<void(request request, std::function<void(download_result)> done)>;
  /// Makes `seconds` the least delay between downloads from `host`.
  using crawl_delay_function = std::function<void(const std::string& host, double seconds)>;
  using verdict = std::function<void(request request, bool allowed)>;

  robots_gate(const settings& settings, stats& stats, fetch_function fetch,
              crawl_delay_function set_crawl_delay);
  ~robots_gate();

  /// Whether `request` waits for a robots.txt: http and https requests without meta
  /// dont_obey_robotstxt.
  static bool applies_to(const request& request);
  /// Whether `request` is a robots.txt download of the gate's own (it belongs to no spider).
  static bool is_robots_request(const request& request);

  /// Calls `done` once the rules of the request's origin are known: at once when they are
  /// cached, else when its robots.txt has been fetched.
  void check(request request, verdict done);

  /// Requests held until their robots.txt arrives.
  std::size_t waiting() const { return waiting_; }
  /// Takes every held request back, for a forced shutdown; their verdicts never run.
  std::vector<request> take_waiting();

 private:
  // The crawl's clock: a day of cached rules is a step of a test, not a wait.
  using clock = crawl_clock;
  struct origin {
    std::optional<robots_txt> rules;
    clock::time_point expires;
    bool fetching = false;
    // The rules are RFC 9309's "disallow all" for a robots.txt that could not be fetched.
    bool unreachable = false;
    std::vector<std::pair<request, verdict>> held;
  };

  void fetch(const std::string& key, const std::string& host);
  void on_fetched(const std::string& key, const std::string& host, download_result result);
  void decide(const origin& entry, request request, const verdict& done);
  std::string_view user_agent_for(const request& request) const;

  stats& stats_;
  fetch_function fetch_;
  crawl_delay_function set_crawl_delay_;
  std::string robots_user_agent_;
  std::string default_user_agent_;
  std::unordered_map<std::string, origin> origins_;
  std::size_t waiting_ = 0;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace crawler
