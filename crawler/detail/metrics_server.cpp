#include "crawler/detail/metrics_server.h"

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <istream>
#include <memory>
#include <stdexcept>

namespace crawler::detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr std::size_t max_request_head = 8192;

// One scrape: read the request head, answer, close.
class exchange : public std::enable_shared_from_this<exchange> {
 public:
  exchange(tcp::socket socket, const std::function<std::string()>& render)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        head_(max_request_head),
        render_(render) {}

  void start() {
    timer_.expires_after(std::chrono::seconds(10));
    timer_.async_wait([self = shared_from_this()](boost::system::error_code error) {
      if (!error) self->socket_.close();
    });
    asio::async_read_until(socket_, head_, "\r\n\r\n",
                           [self = shared_from_this()](boost::system::error_code error,
                                                       std::size_t) { self->answer(error); });
  }

 private:
  void answer(boost::system::error_code error) {
    if (error) return close();
    std::istream in(&head_);
    std::string method, target;
    in >> method >> target;
    std::string status = "200 OK", body;
    if (method == "GET" && (target == "/metrics" || target.starts_with("/metrics?"))) {
      body = render_();
    } else {
      status = "404 Not Found";
      body = "Not found: the metrics are at /metrics\n";
    }
    reply_ = "HTTP/1.1 " + status +
             "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    asio::async_write(
        socket_, asio::buffer(reply_),
        [self = shared_from_this()](boost::system::error_code, std::size_t) { self->close(); });
  }

  void close() {
    timer_.cancel();
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  asio::streambuf head_;
  const std::function<std::string()>& render_;
  std::string reply_;
};

}  // namespace

metrics_server::metrics_server(asio::io_context& io, const std::string& host, unsigned short port,
                               std::function<std::string()> render)
    : acceptor_(io), pause_(io), render_(std::move(render)) {
  boost::system::error_code error;
  auto address = asio::ip::make_address(host, error);
  auto where = host + ":" + std::to_string(port);
  if (error) throw std::runtime_error("METRICS_HOST: \"" + host + "\" is not an IP address");
  tcp::endpoint endpoint(address, port);
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(tcp::acceptor::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    throw std::runtime_error("METRICS_PORT: cannot serve metrics on " + where + ": " +
                             error.message());
  }
  accept();
}

metrics_server::~metrics_server() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  pause_.cancel();
}

std::string metrics_server::url() const {
  auto endpoint = acceptor_.local_endpoint();
  auto host = endpoint.address().to_string();
  if (endpoint.address().is_v6()) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(endpoint.port()) + "/metrics";
}

void metrics_server::accept() {
  acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted) return;
    if (!error) {
      std::make_shared<exchange>(std::move(socket), render_)->start();
      return accept();
    }
    // Out of file descriptors, say: try again in a while rather than at once, forever.
    pause_.expires_after(std::chrono::milliseconds(100));
    pause_.async_wait([this](boost::system::error_code waited) {
      if (!waited) accept();
    });
  });
}

}  // namespace crawler::detail
