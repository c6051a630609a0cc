#include "crawler/cli/detail/bench_site.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <memory>

namespace crawler::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A page's links: a fixed pseudo-random choice per page (splitmix64), so revisits agree.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::string_view filler =
    "A benchmark page: the words here stand in for the text a real page carries, so that "
    "parsing and link extraction do work of the usual size. ";

}  // namespace

// One keep-alive connection: read a request, answer it, read the next.
struct bench_site::connection : std::enable_shared_from_this<connection> {
  connection(tcp::socket socket, const bench_site& site) : socket(std::move(socket)), site(site) {}

  void read() {
    request = {};
    http::async_read(socket, buffer, request,
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       if (!error) self->answer();
                     });
  }

  void answer() {
    auto target = std::string_view(request.target());
    std::size_t number = 0;
    bool found = target.starts_with("/page/");
    if (found) {
      auto digits = target.substr(6);
      auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
      found = error == std::errc() && end == digits.data() + digits.size() && number < site.pages_;
    }
    response = {found ? http::status::ok : http::status::not_found, request.version()};
    response.set(http::field::content_type, "text/html; charset=utf-8");
    response.body() = found ? site.page(number) : "not found";
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    http::async_write(socket, response,
                      [self = shared_from_this()](beast::error_code error, std::size_t) {
                        if (!error && self->response.keep_alive()) self->read();
                      });
  }

  tcp::socket socket;
  const bench_site& site;
  beast::flat_buffer buffer;
  http::request<http::empty_body> request;
  http::response<http::string_body> response;
};

bench_site::bench_site(std::size_t pages, std::size_t links_per_page)
    : pages_(pages),
      links_per_page_(links_per_page),
      acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)),
      port_(acceptor_.local_endpoint().port()) {
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

bench_site::~bench_site() {
  asio::post(io_, [this] { io_.stop(); });
  thread_.join();
}

std::string bench_site::start_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/page/0";
}

void bench_site::accept() {
  acceptor_.async_accept([this](beast::error_code error, tcp::socket socket) {
    if (error) return;
    std::make_shared<connection>(std::move(socket), *this)->read();
    accept();
  });
}

std::string bench_site::page(std::size_t number) const {
  std::string body = "<!DOCTYPE html><html><head><title>Page " + std::to_string(number) +
                     "</title></head><body><h1>Page " + std::to_string(number) + "</h1>\n<ul>\n";
  for (std::size_t i = 0; i < links_per_page_; ++i) {
    auto to = std::to_string(mix(number * links_per_page_ + i) % pages_);
    body += "<li><a href=\"/page/" + to + "\">page " + to + "</a></li>\n";
  }
  body += "</ul>\n";
  for (int paragraph = 0; paragraph < 24; ++paragraph) {
    body += "<p>";
    body += filler;
    body += "</p>\n";
  }
  return body + "</body></html>\n";
}

}  // namespace crawler::cli
