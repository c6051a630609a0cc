// libcurl's multi socket interface driven by an Asio loop: the socket and timer callback pair of
// curl's docs/examples/multi-uv.c, with Asio descriptors in place of libuv polls.
//
// curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to call it back
// (CURLMOPT_TIMERFUNCTION); we wait with Asio and call curl_multi_socket_action. Every wait keeps
// the state alive through a shared_ptr and re-checks it when it fires, because curl may have
// dropped or even reopened the socket in between. Descriptors are released, never closed: curl
// owns its sockets (closed through our CURLOPT_CLOSESOCKETFUNCTION, which drops the watch first).
// No exception crosses a curl callback.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/stats.h"
#include "crawler/download_result.h"

namespace crawler::detail {

/// Per-transfer choices the downloader makes from settings and meta.
struct transfer_options {
  double timeout_seconds = 180;
  /// DNS_TIMEOUT: the connection phase (name lookup, TCP and TLS handshakes) ends by then, or
  /// the transfer fails; libcurl times the lookup only as part of that phase.
  double connect_timeout_seconds = 60;
  std::size_t maxsize = 0;   // 0: no limit
  std::size_t warnsize = 0;  // 0: no warning
  /// The most body bytes anything will read (0: all): a body that grows past it is cut there and
  /// its response, otherwise whole, carries the flag "truncated".
  std::size_t body_limit = 0;
  bool compression = true;
  bool proxy_enabled = true;
  /// CURLOPT_PROTOCOLS_STR: the schemes curl may fetch (scheme_policy::curl_protocols()).
  std::string protocols = "http,https";
};

/// A completed transfer: the result and the time to the first response byte (for AUTOTHROTTLE).
using transfer_done = std::function<void(download_result, double latency_seconds)>;

class curl_transfers {
 public:
  /// `cookies`: a cookie jar for the crawl, and one more for each meta "cookiejar" key, at most
  /// `max_jars` of those (COOKIES_ENABLED, COOKIES_MAX_JARS); or none. Up to `kept_connections`
  /// idle connections are kept open for reuse, the least recently used closed first.
  curl_transfers(boost::asio::any_io_executor executor, stats& stats, bool cookies,
                 std::size_t max_jars, std::size_t kept_connections);
  /// Releases every socket and curl handle; pending waits complete as cancelled and do nothing.
  ~curl_transfers();
  curl_transfers(const curl_transfers&) = delete;
  curl_transfers& operator=(const curl_transfers&) = delete;

  /// Starts fetching `request` now. `done` runs on the loop, once, unless abort_all() came first.
  void start(request request, const transfer_options& options, transfer_done done);
  /// Removes every transfer and returns their requests; their callbacks never run.
  std::vector<request> abort_all();

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace crawler::detail
