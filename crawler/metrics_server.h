// METRICS_PORT: a crawl's stats for Prometheus to scrape, served on the crawl's own event loop.
// `GET /metrics` answers the text exposition format (config/prometheus_text.h), as rendered at
// that moment; anything else is a 404. `crawler serve` uses the same server with more routes
// (its page, its JSON) and, when asked, Basic authentication. One request per connection; a
// client that sends nothing for 10 seconds, or a request head over 8 KiB, is disconnected.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <string>

namespace crawler {

/// What a GET of one path answers: its Content-Type, and the body rendered at that moment.
struct http_route {
  std::string content_type;
  std::function<std::string()> render;
};

class metrics_server {
 public:
  /// Listens on `host`:`port` (0: a free port) and serves `render` at /metrics. Throws
  /// std::runtime_error naming the address when it cannot (a port in use, a host that is not an
  /// address of this machine).
  metrics_server(boost::asio::io_context& io, const std::string& host, unsigned short port,
                 std::function<std::string()> render);
  /// How the server is named in its errors, and who may ask it.
  struct service {
    std::string host_option = "METRICS_HOST";  // what set the host: a setting or an option
    std::string port_option = "METRICS_PORT";
    std::string what = "metrics";  // "cannot serve <what> on HOST:PORT"
    /// The whole value of the Authorization header a request must carry (e.g. "Basic
    /// dXNlcjpwYXNz"), or "" for none; a request without it is answered 401.
    std::string authorization;
    std::string not_found = "Not found: the metrics are at /metrics\n";  // a 404's body
  };
  /// Serves `routes` by path (the query is not part of it).
  metrics_server(boost::asio::io_context& io, const std::string& host, unsigned short port,
                 std::map<std::string, http_route> routes, service named);
  ~metrics_server();
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;

  /// The address scrapers use: http://HOST:PORT/metrics.
  std::string url() const;
  /// The port it listens on.
  unsigned short port() const;

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer pause_;  // between a failed accept and the next
  std::map<std::string, http_route> routes_;
  std::string authorization_, not_found_;
};

}  // namespace crawler
