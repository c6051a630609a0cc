#include "crawler/robots_gate.h"

#include <boost/url/parse.hpp>

#include "config/log.h"
#include "crawler/parse/plain_url.h"

namespace crawler {
namespace {

constexpr auto rules_lifetime = std::chrono::hours(24);          // RFC 9309 section 2.4
constexpr auto unreachable_lifetime = std::chrono::minutes(10);  // then ask again
constexpr const char* robots_meta_key = "robotstxt_request";

}  // namespace

robots_gate::robots_gate(const settings& settings, stats& stats, fetch_function fetch,
                         crawl_delay_function set_crawl_delay)
    : stats_(stats),
      fetch_(std::move(fetch)),
      set_crawl_delay_(std::move(set_crawl_delay)),
      robots_user_agent_(settings.get_string("ROBOTSTXT_USER_AGENT")),
      default_user_agent_(settings.get_string("USER_AGENT")),
      logger_(get_logger("robotstxt")) {}

robots_gate::~robots_gate() = default;

bool robots_gate::applies_to(const request& request) {
  auto flag = request.meta.find("dont_obey_robotstxt");
  if (flag != request.meta.end() && flag->is_boolean() && flag->get<bool>()) return false;
  std::string_view url = request.url;
  return url.starts_with("http://") || url.starts_with("https://");
}

bool robots_gate::is_robots_request(const request& request) {
  return request.meta.contains(robots_meta_key);
}

void robots_gate::check(request request, verdict done) {
  // Every request passes here: a plain URL (most are) is taken apart without the parser.
  std::string key, host;
  if (auto plain = split_plain_url(request.url); plain && !plain->authority.empty()) {
    auto host_and_port = plain->authority.substr(plain->authority.rfind('@') + 1);
    key.reserve(plain->scheme.size() + 3 + host_and_port.size());
    key.append(plain->scheme).append("://").append(host_and_port);
    host = plain->host;
  } else if (auto url = boost::urls::parse_uri(request.url); url && url->has_authority()) {
    key = std::string(url->scheme()) + "://" + std::string(url->encoded_host_and_port());
    host = url->host();
  } else {
    // Not a URL the downloader can fetch either; let it fail there with its own error.
    return done(std::move(request), true);
  }
  auto& entry = origins_[key];
  if (entry.rules && clock::now() < entry.expires) {
    return decide(entry, std::move(request), done);
  }
  entry.held.emplace_back(std::move(request), std::move(done));
  ++waiting_;
  if (!entry.fetching) {
    entry.fetching = true;
    fetch(key, host);
  }
}

void robots_gate::fetch(const std::string& key, const std::string& host) {
  crawler::request robots{key + "/robots.txt"};
  robots.meta["dont_obey_robotstxt"] = true;
  robots.meta[robots_meta_key] = true;
  stats_.inc_value("robotstxt/request_count");
  fetch_(std::move(robots),
         [this, key, host](download_result result) { on_fetched(key, host, std::move(result)); });
}

void robots_gate::on_fetched(const std::string& key, const std::string& host,
                             download_result result) {
  auto& entry = origins_[key];
  entry.fetching = false;
  entry.unreachable = false;
  std::chrono::minutes lifetime = rules_lifetime;
  if (result.response) {
    int status = result.response->status;
    stats_.inc_value("robotstxt/response_count");
    stats_.inc_value("robotstxt/response_status_count/" + std::to_string(status));
    if (status >= 200 && status < 300) {
      entry.rules.emplace(result.response->body);
    } else if (status >= 500) {
      logger_->warn("{} answered {}: nothing is allowed on {} for the next {} minutes (RFC 9309)",
                    result.request.url, status, key,
                    std::chrono::duration_cast<std::chrono::minutes>(unreachable_lifetime).count());
      entry.rules = robots_txt::disallow_all();
      entry.unreachable = true;
      lifetime = unreachable_lifetime;
    } else {
      entry.rules = robots_txt::allow_all();
    }
  } else if (result.error_type == "IgnoreRequest") {
    // Redirected where the crawl does not go (another host, another scheme): as a 3xx that
    // leads nowhere, no robots.txt applies.
    stats_.inc_value("robotstxt/exception_count/" + result.error_type);
    logger_->info("Not following {} ({}): everything is allowed on {}", result.request.describe(),
                  result.error_message, key);
    entry.rules = robots_txt::allow_all();
  } else {
    stats_.inc_value("robotstxt/exception_count/" + result.error_type);
    logger_->error(
        "Error downloading {}: {}: {}; nothing is allowed on {} for the next {} minutes "
        "(RFC 9309)",
        result.request.describe(), result.error_type, result.error_message, key,
        std::chrono::duration_cast<std::chrono::minutes>(unreachable_lifetime).count());
    entry.rules = robots_txt::disallow_all();
    entry.unreachable = true;
    lifetime = unreachable_lifetime;
  }
  entry.expires = clock::now() + lifetime;
  auto held = std::move(entry.held);
  entry.held.clear();
  if (!held.empty()) {
    if (auto delay = entry.rules->crawl_delay(user_agent_for(held.front().first))) {
      set_crawl_delay_(host, *delay);
    }
  }
  // origins_ keeps its elements in place, so `entry` survives verdicts that check new origins.
  // Each request stops counting as held only as its verdict runs: until the last one, the
  // engine must not find the crawl idle.
  for (auto& [request, done] : held) {
    --waiting_;
    decide(entry, std::move(request), done);
  }
}

void robots_gate::decide(const origin& entry, request request, const verdict& done) {
  bool allowed = entry.rules->allowed(request.url, user_agent_for(request));
  if (!allowed) {
    stats_.inc_value("robotstxt/forbidden");
    // Not the site's wish but a failure to learn it: the end-of-crawl summary tells them apart.
    if (entry.unreachable) stats_.inc_value("robotstxt/forbidden/unreachable");
    logger_->debug("Forbidden by robots.txt: {}", request.describe());
  }
  done(std::move(request), allowed);
}

std::string_view robots_gate::user_agent_for(const request& request) const {
  if (!robots_user_agent_.empty()) return robots_user_agent_;
  if (auto header = find_header(request.headers, "User-Agent"); !header.empty()) return header;
  return default_user_agent_;
}

std::vector<request> robots_gate::take_waiting() {
  std::vector<request> requests;
  for (auto& [key, entry] : origins_) {
    for (auto& [request, done] : entry.held) requests.push_back(std::move(request));
    entry.held.clear();
  }
  waiting_ = 0;
  return requests;
}

}  // namespace crawler
