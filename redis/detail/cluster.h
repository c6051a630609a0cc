// The Redis Cluster half of redis::client (client.h): a slot map learned with CLUSTER SLOTS, one
// single-server client per master, and the routing of each command of a pipeline to the master
// of its key's slot. Internal to the client.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <vector>

#include "redis/endpoint.h"
#include "redis/reply.h"

namespace crawler::redis::detail {

namespace asio = boost::asio;

struct cluster_state;

std::shared_ptr<cluster_state> make_cluster(asio::any_io_executor executor, endpoint where);
const endpoint& cluster_endpoint(const cluster_state& cluster);
/// The strand completions without an executor of their own run on.
asio::any_io_executor cluster_executor(const cluster_state& cluster);
void cluster_submit(const std::shared_ptr<cluster_state>& cluster, std::vector<command> commands,
                    asio::any_completion_handler<pipeline_signature> handler);
void cluster_close(const std::shared_ptr<cluster_state>& cluster);

}  // namespace crawler::redis::detail
