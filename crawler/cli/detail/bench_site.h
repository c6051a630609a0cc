// The site `crawler bench` crawls: Scrapy's bench server in spirit (every page links to others
// picked at random from a large set, so a crawl never runs dry), served from a thread of the
// process on a free loopback port.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <string>
#include <thread>

namespace crawler::cli {

class bench_site {
 public:
  /// Starts serving /page/0 ... /page/<pages - 1>: each an HTML page of about 5 KB with
  /// `links_per_page` links to other pages (the same ones on every visit).
  explicit bench_site(std::size_t pages = 100000, std::size_t links_per_page = 20);
  /// Stops the server and waits for its thread.
  ~bench_site();
  bench_site(const bench_site&) = delete;
  bench_site& operator=(const bench_site&) = delete;

  /// "http://127.0.0.1:<port>/page/0".
  std::string start_url() const;

 private:
  struct connection;
  void accept();
  std::string page(std::size_t number) const;

  std::size_t pages_;
  std::size_t links_per_page_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_;  // read once, so start_url() never asks the acceptor the server uses
  std::thread thread_;
};

}  // namespace crawler::cli
