// Where a Redis server (or a Redis Cluster) is and how to talk to it, from REDIS_URL or
// REDIS_HOST/REDIS_PORT/REDIS_PARAMS, or REDIS_CLUSTER_NODES.
//
//   auto where = crawler::redis::endpoint_from(settings);   // REDIS_URL wins, as in scrapy-redis
//   auto where = crawler::redis::parse_redis_url("redis://:secret@10.0.0.5:6380/2");
//
// With REDIS_CLUSTER_NODES (seed nodes, "host:port" each) the endpoint names a cluster: the client
// learns the other nodes from the seeds, and host/port are the first seed's. A cluster has only
// database 0; a password (REDIS_URL's or REDIS_PARAMS's) is sent to every node.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
  /// REDIS_CLUSTER_NODES, parsed: the seed nodes of a Redis Cluster; empty for one server.
  struct node {
    std::string host;
    std::uint16_t port = 0;
  };
  std::vector<node> cluster_nodes;

  /// "redis://host:port/db", or "redis cluster host:port,host:port", for error messages and logs.
  std::string address() const;
};

/// Parses redis://[[user]:password@]host[:port][/db]. Throws redis_error naming the URL and the
/// part that is wrong.
endpoint parse_redis_url(std::string_view url);

/// One REDIS_CLUSTER_NODES entry, "host:port" ("[::1]:7000" for IPv6). Throws redis_error naming
/// the entry and what is wrong.
endpoint::node parse_cluster_node(std::string_view text);

/// REDIS_URL when set, else REDIS_HOST and REDIS_PORT; REDIS_PARAMS adds socket_timeout and
/// socket_connect_timeout (seconds), password and db; REDIS_CLUSTER_NODES, when not empty, makes
/// it a cluster's. Throws settings_error naming the key.
endpoint endpoint_from(const crawler::settings& settings);

}  // namespace crawler::redis
