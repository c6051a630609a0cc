// METRICS_PORT: a crawl's stats for Prometheus to scrape, served on the crawl's own event loop.
// `GET /metrics` answers the text exposition format (config/prometheus_text.h), as rendered at
// that moment; anything else is a 404. One request per connection; a client that sends nothing
// for 10 seconds, or a request head over 8 KiB, is disconnected.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <string>

namespace crawler::detail {

class metrics_server {
 public:
  /// Listens on `host`:`port` (0: a free port). Throws std::runtime_error naming the address
  /// when it cannot (a port in use, a host that is not an address of this machine).
  metrics_server(boost::asio::io_context& io, const std::string& host, unsigned short port,
                 std::function<std::string()> render);
  ~metrics_server();
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;

  /// The address scrapers use: http://HOST:PORT/metrics.
  std::string url() const;

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer pause_;  // between a failed accept and the next
  std::function<std::string()> render_;
};

}  // namespace crawler::detail
