// The cluster side of redis::client: see client.h for what it promises.
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <array>
#include <charconv>
#include <deque>
#include <map>
#include <optional>

#include "redis/client.h"
#include "redis/cluster_slots.h"
#include "redis/detail/cluster.h"
#include "redis/detail/completion.h"

namespace crawler::redis::detail {
namespace {

// Redirects one command may follow before its last answer counts as its reply: a map that keeps
// moving under a command is a cluster being rebuilt, not one to chase forever.
constexpr int max_redirects = 5;

struct cluster_batch {
  // Built in one step: any_completion_handler is only ever move-constructed (see client.cpp).
  cluster_batch(std::vector<command> commands,
                asio::any_completion_handler<pipeline_signature> handler)
      : commands(std::move(commands)), handler(std::move(handler)) {}

  std::vector<command> commands;
  asio::any_completion_handler<pipeline_signature> handler;
  std::vector<reply> replies;
  std::vector<int> redirects;  // per command
  std::size_t remaining = 0;
  bool done = false;
};

// A MOVED or ASK answer: "MOVED 3999 127.0.0.1:6381".
struct redirect {
  bool ask = false;
  std::uint16_t slot = 0;
  std::string node;
};

std::optional<redirect> read_redirect(const reply& answer) {
  if (!answer.is_error()) return std::nullopt;
  std::string_view text = answer.str;
  redirect out;
  if (text.starts_with("ASK ")) {
    out.ask = true;
    text.remove_prefix(4);
  } else if (text.starts_with("MOVED ")) {
    text.remove_prefix(6);
  } else {
    return std::nullopt;
  }
  auto space = text.find(' ');
  unsigned slot = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + std::min(space, text.size()), slot);
  if (space == std::string_view::npos || ec != std::errc() || slot >= cluster_slot_count)
    return std::nullopt;
  out.slot = static_cast<std::uint16_t>(slot);
  out.node = std::string(text.substr(space + 1));
  // A reply is input: a node named without a port that is one is no redirect to follow.
  auto colon = out.node.rfind(':');
  unsigned port = 0;
  auto port_text = std::string_view(out.node).substr(colon == std::string::npos ? 0 : colon + 1);
  auto [port_end, port_ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (colon == std::string::npos || port_ec != std::errc() ||
      port_end != port_text.data() + port_text.size() || port == 0 || port > 65535)
    return std::nullopt;
  return out;
}

std::string node_name(const std::string& host, long long port) {
  return host + ":" + std::to_string(port);
}

}  // namespace

struct cluster_state : std::enable_shared_from_this<cluster_state> {
  asio::any_io_executor executor;
  asio::strand<asio::any_io_executor> strand;
  endpoint where;
  std::array<std::int32_t, cluster_slot_count> owner;  // index into node_names; -1: unserved
  std::vector<std::string> node_names;                  // "host:port" of each master known
  std::map<std::string, std::shared_ptr<client>> nodes;
  std::deque<std::shared_ptr<cluster_batch>> waiting;  // for the first map
  bool map_known = false, refreshing = false, refresh_again = false, closed = false;

  cluster_state(asio::any_io_executor executor, endpoint where)
      : executor(executor), strand(asio::make_strand(executor)), where(std::move(where)) {
    owner.fill(-1);
  }

  std::exception_ptr error(const std::string& message) const {
    return std::make_exception_ptr(redis_error(message));
  }

  const std::shared_ptr<client>& client_for(const std::string& name) {
    auto found = nodes.find(name);
    if (found != nodes.end()) return found->second;
    endpoint node = where;
    node.cluster_nodes.clear();
    auto colon = name.rfind(':');
    node.host = name.substr(0, colon);
    if (node.host.starts_with("[") && node.host.ends_with("]"))
      node.host = node.host.substr(1, node.host.size() - 2);
    node.port = static_cast<std::uint16_t>(std::stoi(name.substr(colon + 1)));
    return nodes.emplace(name, client::create(executor, std::move(node))).first->second;
  }

  std::int32_t index_of(const std::string& name) {
    for (std::size_t i = 0; i < node_names.size(); ++i)
      if (node_names[i] == name) return static_cast<std::int32_t>(i);
    node_names.push_back(name);
    return static_cast<std::int32_t>(node_names.size() - 1);
  }

  // The nodes to ask for the map, best first: the masters known, then the seeds.
  std::vector<std::string> map_sources() const {
    std::vector<std::string> out = node_names;
    for (const auto& seed : where.cluster_nodes) {
      auto name = node_name(seed.host, seed.port);
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
  }

  void submit(std::shared_ptr<cluster_batch> b) {
    if (closed) return complete(b, error("Redis client for " + where.address() + " is closed"), strand);
    if (b->commands.empty()) return complete(b, nullptr, strand);
    b->replies.resize(b->commands.size());
    b->redirects.assign(b->commands.size(), 0);
    b->remaining = b->commands.size();
    if (!map_known) {
      waiting.push_back(std::move(b));
      return refresh();
    }
    std::vector<std::size_t> all(b->commands.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    route(b, all);
  }

  // Reads the slot map again (one reading at a time; a request meanwhile reads once more after).
  void refresh() {
    if (closed) return;
    if (refreshing) {
      refresh_again = true;
      return;
    }
    refreshing = true;
    ask_for_map(map_sources(), 0, "");
  }

  void ask_for_map(std::vector<std::string> sources, std::size_t next, std::string last_error) {
    if (closed) return;
    if (next == sources.size()) {
      refreshing = false;
      refresh_again = false;
      auto batches = std::move(waiting);
      waiting.clear();
      for (auto& b : batches)
        complete(b, error("no node of " + where.address() + " gave its slot map: " + last_error),
                 strand);
      return;
    }
    std::string source = sources[next];
    client_for(source)->async_command(
        {"CLUSTER", "SLOTS"},
        asio::bind_executor(strand, [self = shared_from_this(), sources = std::move(sources), next,
                                     source](std::exception_ptr failed, reply answer) mutable {
          std::string problem;
          if (failed) {
            try {
              std::rethrow_exception(failed);
            } catch (const std::exception& e) {
              problem = e.what();
            }
          } else {
            problem = self->read_map(source, answer);
          }
          if (!problem.empty()) return self->ask_for_map(std::move(sources), next + 1, problem);
          self->map_read();
        }));
  }

  // Takes CLUSTER SLOTS's answer from `source`: [[first, last, [ip, port, id...], replicas...]...].
  // Returns what is wrong with it, or "".
  std::string read_map(const std::string& source, const reply& answer) {
    if (answer.is_error())
      return source + " answered CLUSTER SLOTS with " + answer.describe() +
             " (is it a cluster node? REDIS_CLUSTER_NODES names only cluster nodes)";
    if (answer.type != reply::kind::array || answer.elements.empty())
      return source + " answered CLUSTER SLOTS with no slots: the cluster is not set up yet";
    std::array<std::int32_t, cluster_slot_count> next;
    next.fill(-1);
    std::string source_host = source.substr(0, source.rfind(':'));
    for (const auto& range : answer.elements) {
      if (range.elements.size() < 3 || range.elements[0].type != reply::kind::integer ||
          range.elements[1].type != reply::kind::integer ||
          range.elements[2].elements.size() < 2 ||
          range.elements[2].elements[1].type != reply::kind::integer)
        return source + " answered CLUSTER SLOTS with an entry not [first, last, [ip, port...]]: " +
               range.describe();
      long long first = range.elements[0].integer, last = range.elements[1].integer;
      if (first < 0 || last < first || last >= cluster_slot_count)
        return source + " answered CLUSTER SLOTS with slots " + std::to_string(first) + "-" +
               std::to_string(last) + ", outside 0-16383";
      long long port = range.elements[2].elements[1].integer;
      if (port <= 0 || port > 65535)
        return source + " answered CLUSTER SLOTS with port " + std::to_string(port) +
               " for slots " + std::to_string(first) + "-" + std::to_string(last);
      std::string host = range.elements[2].elements[0].str;
      if (host.empty() || host == "?") host = source_host;  // a node that does not know its IP
      if (host.find(':') != std::string::npos && !host.starts_with("[")) host = "[" + host + "]";
      auto index = index_of(node_name(host, port));
      for (long long slot = first; slot <= last; ++slot) next[slot] = index;
    }
    owner = next;
    return "";
  }

  void map_read() {
    map_known = true;
    refreshing = false;
    auto batches = std::move(waiting);
    waiting.clear();
    for (auto& b : batches) {
      std::vector<std::size_t> all(b->commands.size());
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
      route(b, all);
    }
    if (std::exchange(refresh_again, false)) refresh();
  }

  // Sends `indices` of `b` to the masters of their slots, one pipeline per master.
  void route(const std::shared_ptr<cluster_batch>& b, const std::vector<std::size_t>& indices) {
    // A command without a key goes with the pipeline's first keyed one (TIME beside the reads it
    // dates), else to the first master known.
    std::int32_t keyless_node = node_names.empty() ? -1 : 0;
    for (const auto& args : b->commands) {
      if (auto key = routing_key(args)) {
        if (auto n = owner[key_slot(*key)]; n >= 0) keyless_node = n;
        break;
      }
    }
    std::map<std::int32_t, std::vector<std::size_t>> by_node;
    for (auto i : indices) {
      auto key = routing_key(b->commands[i]);
      std::int32_t n = key ? owner[key_slot(*key)] : keyless_node;
      if (n < 0) {
        reply unserved;
        unserved.type = reply::kind::error;
        unserved.str = "CLUSTERDOWN Hash slot not served (no master of " + where.address() +
                       " holds slot " + (key ? std::to_string(key_slot(*key)) : "?") + ")";
        finish(b, i, std::move(unserved));
        continue;
      }
      by_node[n].push_back(i);
    }
    for (auto& [n, sent] : by_node) send(b, node_names[n], std::move(sent), false);
  }

  void send(const std::shared_ptr<cluster_batch>& b, const std::string& node,
            std::vector<std::size_t> indices, bool asking) {
    std::vector<command> commands;
    commands.reserve(indices.size() * (asking ? 2 : 1));
    for (auto i : indices) {
      if (asking) commands.push_back({"ASKING"});
      commands.push_back(b->commands[i]);
    }
    client_for(node)->async_pipeline(
        std::move(commands),
        asio::bind_executor(strand, [self = shared_from_this(), b, node,
                                     indices = std::move(indices),
                                     asking](std::exception_ptr failed, std::vector<reply> replies) {
          self->answered(b, node, indices, asking, failed, std::move(replies));
        }));
  }

  void answered(const std::shared_ptr<cluster_batch>& b, const std::string& node,
                const std::vector<std::size_t>& indices, bool asking, std::exception_ptr failed,
                std::vector<reply> replies) {
    if (b->done) return;
    if (failed) {
      refresh();  // the master may have failed over, or left the cluster
      return complete(b, failed, strand);
    }
    std::vector<std::size_t> moved;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      auto i = indices[k];
      reply& answer = replies[asking ? 2 * k + 1 : k];
      auto redirected = read_redirect(answer);
      if (!redirected || b->redirects[i] >= max_redirects) {
        finish(b, i, std::move(answer));
        continue;
      }
      ++b->redirects[i];
      if (redirected->node.starts_with(":"))  // the node knows no address of its own
        redirected->node = node.substr(0, node.rfind(':')) + redirected->node;
      if (redirected->ask) {
        send(b, redirected->node, {i}, true);
      } else {
        owner[redirected->slot] = index_of(redirected->node);
        moved.push_back(i);
      }
    }
    if (!moved.empty()) {
      route(b, moved);
      refresh();  // one slot moved: others may have moved with it
    }
  }

  void finish(const std::shared_ptr<cluster_batch>& b, std::size_t i, reply answer) {
    b->replies[i] = std::move(answer);
    if (--b->remaining == 0) complete(b, nullptr, strand);
  }

  void close() {
    if (closed) return;
    closed = true;
    auto batches = std::move(waiting);
    waiting.clear();
    for (auto& b : batches)
      complete(b, error("Redis client for " + where.address() + " was closed"), strand);
    for (auto& [name, node] : nodes) node->close();
  }
};

std::shared_ptr<cluster_state> make_cluster(asio::any_io_executor executor, endpoint where) {
  return std::make_shared<cluster_state>(std::move(executor), std::move(where));
}

const endpoint& cluster_endpoint(const cluster_state& cluster) {
  return cluster.where;
}

asio::any_io_executor cluster_executor(const cluster_state& cluster) {
  return cluster.strand;
}

void cluster_submit(const std::shared_ptr<cluster_state>& cluster, std::vector<command> commands,
                    asio::any_completion_handler<pipeline_signature> handler) {
  auto b = std::make_shared<cluster_batch>(std::move(commands), std::move(handler));
  asio::dispatch(cluster->strand, [cluster, b] { cluster->submit(b); });
}

void cluster_close(const std::shared_ptr<cluster_state>& cluster) {
  asio::dispatch(cluster->strand, [cluster] { cluster->close(); });
}

}  // namespace crawler::redis::detail
