#include "crawler/metrics_server.h"

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <chrono>
#include <istream>
#include <memory>
#include <stdexcept>

namespace crawler {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr std::size_t max_request_head = 8192;

// One request: read its head, answer, close.
class exchange : public std::enable_shared_from_this<exchange> {
 public:
  exchange(tcp::socket socket, const std::map<std::string, http_route>& routes,
           const std::string& authorization, const std::string& not_found)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        head_(max_request_head),
        routes_(routes),
        authorization_(authorization),
        not_found_(not_found) {}

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
  // The value of the request's Authorization header ("" without one).
  static std::string authorization_of(std::istream& head) {
    std::string line;
    while (std::getline(head, line) && line != "\r") {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
      if (name != "authorization") continue;
      auto value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
      return value;
    }
    return {};
  }

  // Whether the request's credentials are the expected ones, in a time that does not say how
  // many of their first bytes were right.
  static bool same_secret(const std::string& given, const std::string& expected) {
    unsigned char differ = given.size() == expected.size() ? 0 : 1;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      differ |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
    }
    return differ == 0;
  }

  void answer(boost::system::error_code error) {
    if (error) return close();
    std::istream in(&head_);
    std::string method, target, rest_of_line;
    in >> method >> target;
    std::getline(in, rest_of_line);
    std::string status = "200 OK", body, type = "text/plain; charset=utf-8", extra;
    auto route = routes_.find(target.substr(0, target.find('?')));
    if (!authorization_.empty() && !same_secret(authorization_of(in), authorization_)) {
      status = "401 Unauthorized";
      body = "This server asks for a user name and password\n";
      extra = "WWW-Authenticate: Basic realm=\"crawler\", charset=\"UTF-8\"\r\n";
    } else if (method == "GET" && route != routes_.end()) {
      body = route->second.render();
      type = route->second.content_type;
    } else {
      status = "404 Not Found";
      body = not_found_;
    }
    reply_ = "HTTP/1.1 " + status + "\r\nContent-Type: " + type + "\r\n" + extra +
             "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nContent-Length: " +
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
  const std::map<std::string, http_route>& routes_;
  const std::string& authorization_;
  const std::string& not_found_;
  std::string reply_;
};

}  // namespace

metrics_server::metrics_server(asio::io_context& io, const std::string& host, unsigned short port,
                               std::function<std::string()> render)
    : metrics_server(io, host, port,
                     {{"/metrics", {"text/plain; version=0.0.4; charset=utf-8", std::move(render)}}},
                     service{}) {}

metrics_server::metrics_server(asio::io_context& io, const std::string& host, unsigned short port,
                               std::map<std::string, http_route> routes, service named)
    : acceptor_(io),
      pause_(io),
      routes_(std::move(routes)),
      authorization_(std::move(named.authorization)),
      not_found_(std::move(named.not_found)) {
  boost::system::error_code error;
  auto address = asio::ip::make_address(host, error);
  auto where = host + ":" + std::to_string(port);
  if (error) {
    throw std::runtime_error(named.host_option + ": \"" + host + "\" is not an IP address");
  }
  tcp::endpoint endpoint(address, port);
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(tcp::acceptor::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    throw std::runtime_error(named.port_option + ": cannot serve " + named.what + " on " +
                             where + ": " + error.message());
  }
  accept();
}

metrics_server::~metrics_server() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  pause_.cancel();
}

unsigned short metrics_server::port() const { return acceptor_.local_endpoint().port(); }

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
      std::make_shared<exchange>(std::move(socket), routes_, authorization_, not_found_)
          ->start();
      return accept();
    }
    // Out of file descriptors, say: try again in a while rather than at once, forever.
    pause_.expires_after(std::chrono::milliseconds(100));
    pause_.async_wait([this](boost::system::error_code waited) {
      if (!waited) accept();
    });
  });
}

}  // namespace crawler
