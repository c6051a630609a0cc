#include "redis/endpoint.h"

#include <charconv>

#include "config/redact.h"
#include "config/settings.h"

namespace crawler::redis {
namespace {

template <typename Number>
bool parse_number(std::string_view text, Number& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

std::chrono::milliseconds seconds_setting(const nlohmann::json& value, const std::string& key) {
  if (!value.is_number() || value.get<double>() <= 0) {
    throw crawler::settings_error("settings.REDIS_PARAMS." + key +
                                  ": expected a positive number of seconds, got " + value.dump());
  }
  return std::chrono::milliseconds(static_cast<long long>(value.get<double>() * 1000));
}

}  // namespace

std::string endpoint::address() const {
  if (!cluster_nodes.empty()) {
    std::string out = "redis cluster ";
    for (std::size_t i = 0; i < cluster_nodes.size(); ++i) {
      const auto& seed = cluster_nodes[i];
      bool bracket = seed.host.find(':') != std::string::npos;
      out += (i ? "," : "") + (bracket ? "[" + seed.host + "]" : seed.host) + ":" +
             std::to_string(seed.port);
    }
    return out;
  }
  bool ipv6 = host.find(':') != std::string::npos;
  return "redis://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/" +
         std::to_string(db);
}

endpoint parse_redis_url(std::string_view url) {
  auto fail = [&](const std::string& what) {
    return redis_error("REDIS_URL '" + redact_url(url) + "': " + what +
                       " (expected redis://[:password@]host[:port][/db])");
  };
  constexpr std::string_view scheme = "redis://";
  if (!url.starts_with(scheme)) throw fail("unsupported scheme");
  std::string_view rest = url.substr(scheme.size());
  endpoint result;
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (std::size_t query = path.find('?'); query != std::string_view::npos)
    path = path.substr(0, query);
  if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    std::size_t colon = userinfo.find(':');
    result.password =
        std::string(colon == std::string_view::npos ? userinfo : userinfo.substr(colon + 1));
    authority = authority.substr(at + 1);
  }
  std::string_view port_text;
  if (authority.starts_with("[")) {
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw fail("unbalanced '[' in the host");
    result.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (after.starts_with(":"))
      port_text = after.substr(1);
    else if (!after.empty())
      throw fail("unexpected text after the host");
  } else {
    std::size_t colon = authority.rfind(':');
    result.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (result.host.empty()) throw fail("missing host");
  if (!port_text.empty()) {
    unsigned port = 0;
    if (!parse_number(port_text, port) || port == 0 || port > 65535)
      throw fail("bad port '" + std::string(port_text) + "'");
    result.port = static_cast<std::uint16_t>(port);
  }
  if (!path.empty() && !parse_number(path, result.db))
    throw fail("bad database number '" + std::string(path) + "'");
  return result;
}

endpoint::node parse_cluster_node(std::string_view text) {
  if (text.empty() || text.find_first_of("/@") != std::string_view::npos ||
      text.starts_with("redis://")) {
    throw redis_error("REDIS_CLUSTER_NODES entry '" + redact_url(text) +
                      "': expected host:port, as redis-cli --cluster takes them");
  }
  endpoint parsed;
  try {
    parsed = parse_redis_url("redis://" + std::string(text));
  } catch (const redis_error&) {
    throw redis_error("REDIS_CLUSTER_NODES entry '" + std::string(text) +
                      "': expected host:port, as redis-cli --cluster takes them");
  }
  bool has_port = text.ends_with("]") ? false : text.rfind(':') != std::string_view::npos;
  if (!has_port) {
    throw redis_error("REDIS_CLUSTER_NODES entry '" + std::string(text) +
                      "': no port (a cluster node has no default one)");
  }
  return {parsed.host, parsed.port};
}

endpoint endpoint_from(const crawler::settings& settings) {
  endpoint result;
  auto encoding = settings.get_string("REDIS_ENCODING");
  for (auto& c : encoding) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (encoding != "utf-8" && encoding != "utf8") {
    throw crawler::settings_error(
        "settings.REDIS_ENCODING: \"" + settings.get_string("REDIS_ENCODING") +
        "\": this crawler reads and writes Redis strings as UTF-8 (scrapy-redis's default), so "
        "a fleet that decodes them otherwise cannot share them with it");
  }
  if (settings.has("REDIS_URL")) {
    try {
      result = parse_redis_url(settings.get_string("REDIS_URL"));
    } catch (const redis_error& error) {
      throw crawler::settings_error(std::string("settings.") + error.what());
    }
  } else {
    result.host = settings.get_string("REDIS_HOST");
    std::int64_t port = settings.get_int("REDIS_PORT");
    if (port <= 0 || port > 65535) {
      throw crawler::settings_error(
          "settings.REDIS_PORT: expected a port between 1 and 65535, got " + std::to_string(port));
    }
    result.port = static_cast<std::uint16_t>(port);
  }
  for (const auto& [key, value] : settings.get("REDIS_PARAMS").items()) {
    if (key == "socket_timeout") {
      result.command_timeout = seconds_setting(value, key);
    } else if (key == "socket_connect_timeout") {
      result.connect_timeout = seconds_setting(value, key);
    } else if (key == "password" && value.is_string()) {
      result.password = value.get<std::string>();
    } else if (key == "db" && value.is_number_integer()) {
      result.db = value.get<int>();
    } else {
      throw crawler::settings_error(
          "settings.REDIS_PARAMS." + key +
          ": unknown or mistyped option (socket_timeout, socket_connect_timeout, password, db)");
    }
  }
  auto seeds = settings.get_list("REDIS_CLUSTER_NODES");
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    try {
      result.cluster_nodes.push_back(parse_cluster_node(seeds[i]));
    } catch (const redis_error& error) {
      throw crawler::settings_error("settings.REDIS_CLUSTER_NODES[" + std::to_string(i) +
                                    "]: " + error.what());
    }
  }
  if (!result.cluster_nodes.empty()) {
    if (result.db != 0) {
      throw crawler::settings_error(
          "settings.REDIS_CLUSTER_NODES: a Redis Cluster has only database 0, but " +
          std::string(settings.has("REDIS_URL") ? "REDIS_URL" : "REDIS_PARAMS.db") +
          " asks for database " + std::to_string(result.db));
    }
    result.host = result.cluster_nodes.front().host;
    result.port = result.cluster_nodes.front().port;
  }
  return result;
}

}  // namespace crawler::redis
