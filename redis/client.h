// An asynchronous Redis client on a Boost.Asio executor: hiredis's async API, driven by the same
// event loop as the crawl, with pipelining, timeouts, AUTH/SELECT and reconnects with backoff.
//
//   auto redis = crawler::redis::client::create(io.get_executor(), endpoint_from(settings));
//   redis->async_command({"SADD", "books:dupefilter", fp.hex()},
//       [](std::exception_ptr error, crawler::redis::reply reply) { ... });
//   auto replies = redis->async_pipeline(commands, boost::asio::use_future).get();
//
// Completions take `(std::exception_ptr, result)`, so the same call works with callbacks,
// use_future and use_awaitable. A Redis error reply (`-ERR ...`) is a reply, not an exception;
// the exception is for the failures around it: no server, connection lost, timeout. Its message is
// a redis_error naming the address. Commands never block the calling thread; commands of one
// pipeline go out in one write and the pipeline completes when every reply is in.
//
// Connection: opened on the first command (DNS through Asio's resolver, so no blocking lookup on
// the loop). After a failed attempt the next waits 100 ms, doubling to 5 s; commands issued in the
// meantime wait for that attempt and fail if it fails, so nothing waits forever.
// Thread-safety: any thread may issue commands; the client serialises them on its own strand.
//
// A Redis Cluster (an endpoint with cluster_nodes, REDIS_CLUSTER_NODES): the client asks a seed
// for the slot map (CLUSTER SLOTS), sends each command to the master of its key's slot
// (cluster_slots.h; a command without a key goes with the pipeline's first keyed command, or to
// any master), and keeps one connection per master, each as above. A pipeline whose commands
// fall on several masters goes out as one write per master, at once, and completes with the
// replies in the order of its commands. A MOVED answer updates the map and sends the command to
// the node named (and the map is read again); ASK sends ASKING and the command to the node named,
// once; after five redirects the last answer is the reply. A lost connection to a master fails
// the pipelines it carried, as for one server, and has the map read again before the next.
// Commands of one pipeline that land on different masters are not ordered between them: a
// multi-key step belongs in one script whose keys share a hash tag.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "redis/endpoint.h"
#include "redis/reply.h"

namespace crawler::redis {

namespace asio = boost::asio;

namespace detail {
struct client_state;   // the connection state machine, in client.cpp
struct cluster_state;  // the slot map and the masters' clients, in cluster_client.cpp
}

class client : public std::enable_shared_from_this<client> {
 public:
  static std::shared_ptr<client> create(asio::any_io_executor executor, endpoint where);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  const endpoint& where() const;
  /// Where completions run (a strand of the executor it was created with).
  asio::any_io_executor get_executor() const;

  /// Sends `commands` in one write; completes with their replies in order.
  template <asio::completion_token_for<pipeline_signature> Token>
  auto async_pipeline(std::vector<command> commands, Token&& token) {
    return asio::async_initiate<Token, pipeline_signature>(
        [self = shared_from_this()](auto handler, std::vector<command> commands) {
          self->start(std::move(commands), std::move(handler));
        },
        token, std::move(commands));
  }

  /// One command; completes with its reply.
  template <asio::completion_token_for<command_signature> Token>
  auto async_command(command args, Token&& token) {
    return asio::async_initiate<Token, command_signature>(
        [self = shared_from_this()](auto handler, command args) {
          self->start_one(std::move(args), std::move(handler));
        },
        token, std::move(args));
  }

  /// Fails every pending command with redis_error("... closed") and disconnects. Idempotent.
  void close();

 private:
  using state = detail::client_state;
  client(std::shared_ptr<state> state, std::shared_ptr<detail::cluster_state> cluster);
  void start(std::vector<command> commands,
             asio::any_completion_handler<pipeline_signature> handler);
  void start_one(command args, asio::any_completion_handler<command_signature> handler);

  std::shared_ptr<state> state_;                      // one server, or
  std::shared_ptr<detail::cluster_state> cluster_;  // a cluster's masters
};

}  // namespace crawler::redis
