// Where a Redis server is and how to talk to it, from REDIS_URL or
// REDIS_HOST/REDIS_PORT/REDIS_PARAMS.
//
//   auto where = crawler::redis::endpoint_from(settings);   // REDIS_URL wins, as in scrapy-redis
//   auto where = crawler::redis::parse_redis_url("redis://:secret@10.0.0.5:6380/2");
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crawler {
class settings;
}

namespace crawler::redis {

/// A Redis failure that is not a reply: unreachable server, lost connection, timeout, bad URL.
/// what() always names the server's address (never its password).
class redis_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct endpoint {
  std::string host = "localhost";
  std::uint16_t port = 6379;
  std::string password;  // sent with AUTH after connecting when not empty
  int db = 0;            // sent with SELECT after connecting when not 0
  std::chrono::milliseconds connect_timeout{5000};   // REDIS_PARAMS.socket_connect_timeout
  std::chrono::milliseconds command_timeout{30000};  // REDIS_PARAMS.socket_timeout

  /// "redis://host:port/db", for error messages and logs.
  std::string address() const;
};

/// Parses redis://[[user]:password@]host[:port][/db]. Throws redis_error naming the URL and the
/// part that is wrong.
endpoint parse_redis_url(std::string_view url);

/// REDIS_URL when set, else REDIS_HOST and REDIS_PORT; REDIS_PARAMS adds socket_timeout and
/// socket_connect_timeout (seconds), password and db. Throws settings_error naming the key.
endpoint endpoint_from(const crawler::settings& settings);

}  // namespace crawler::redis
