#include "crawler/parse/robots_txt.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "config/ascii.h"
#include "request/url_bytes.h"

namespace crawler {
namespace {

constexpr std::size_t parse_limit = 500 * 1024;  // RFC 9309 section 2.5

bool unreserved(unsigned char c) {
  return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

// One spelling for paths and patterns (RFC 9309 section 2.2.2): escapes of unreserved characters
// decoded, other escapes in upper case, raw UTF-8 and unsafe octets escaped.
std::string normalise(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (dedup::is_escape(text, i)) {
      auto decoded = dedup::escaped_byte(text, i);
      if (unreserved(decoded)) {
        out += char(decoded);
      } else {
        dedup::append_escaped(out, decoded);
      }
      i += 2;
    } else if (c <= 0x20 || c >= 0x7f) {
      dedup::append_escaped(out, c);
    } else {
      out += char(c);
    }
  }
  return out;
}

// The path and query of an absolute URL, or `url` itself when it is already a path.
std::string_view path_of(std::string_view url) {
  if (auto fragment = url.find('#'); fragment != std::string_view::npos) {
    url = url.substr(0, fragment);
  }
  if (auto scheme = url.find("://"); scheme != std::string_view::npos && !url.starts_with('/')) {
    auto path = url.find_first_of("/?", scheme + 3);
    return path == std::string_view::npos ? std::string_view() : url.substr(path);
  }
  return url;
}

// Whether `pattern` ('*' for any run of octets, a final '$' for the end) matches the start of
// `path`, or all of it when anchored. Placing each literal piece at its leftmost fit is enough:
// an earlier fit never leaves less room for the pieces after it.
bool pattern_matches(std::string_view pattern, std::string_view path) {
  bool anchored = pattern.ends_with('$');
  if (anchored) pattern.remove_suffix(1);
  auto star = pattern.find('*');
  if (star == std::string_view::npos) {
    return anchored ? path == pattern : path.starts_with(pattern);
  }
  auto head = pattern.substr(0, star);
  if (!path.starts_with(head)) return false;
  std::size_t at = head.size();
  pattern.remove_prefix(star + 1);
  while (true) {
    star = pattern.find('*');
    auto piece = pattern.substr(0, star);
    if (star == std::string_view::npos) {
      // The last piece: anywhere after `at`, or exactly at the end when anchored.
      if (!anchored) return path.find(piece, at) != std::string_view::npos;
      return path.size() >= at + piece.size() && path.ends_with(piece);
    }
    auto found = path.find(piece, at);
    if (found == std::string_view::npos) return false;
    at = found + piece.size();
    pattern.remove_prefix(star + 1);
  }
}

// The product token of a User-agent line: "Googlebot/2.1" names "googlebot".
std::string product_token(std::string_view value) {
  auto end = value.find_first_of(" \t/");
  return ascii_lower(value.substr(0, end));
}

}  // namespace

robots_txt::robots_txt(std::string_view body) {
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  if (body.size() > parse_limit) body = body.substr(0, parse_limit);

  bool reading_agents = false;  // the previous line was a User-agent line
  std::size_t start = 0;
  while (start < body.size()) {
    auto end = body.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = body.size();
    auto line = body.substr(start, end - start);
    start = end + 1;
    if (auto comment = line.find('#'); comment != std::string_view::npos) {
      line = line.substr(0, comment);
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = ascii_lower(trim_ascii_space(line.substr(0, colon)));
    auto value = trim_ascii_space(line.substr(colon + 1));

    if (key == "user-agent" || key == "useragent" || key == "user agent") {
      if (!reading_agents) groups_.emplace_back();
      reading_agents = true;
      if (auto token = product_token(value); !token.empty()) {
        groups_.back().agents.push_back(std::move(token));
      }
      continue;
    }
    if (key == "sitemap" || key == "site-map") {
      if (!value.empty()) sitemaps_.emplace_back(value);
      continue;
    }
    if (groups_.empty()) continue;  // a rule before any User-agent line belongs to no group
    auto& group = groups_.back();
    if (key == "allow" || key == "disallow") {
      reading_agents = false;
      // An empty Disallow allows everything, which is what no rule at all means.
      if (!value.empty()) group.rules.push_back({normalise(value), key == "allow"});
    } else if (key == "crawl-delay") {
      reading_agents = false;
      double delay = 0;
      auto [end_of_number, error] =
          std::from_chars(value.data(), value.data() + value.size(), delay);
      if (error == std::errc() && end_of_number == value.data() + value.size() &&
          std::isfinite(delay) && delay >= 0) {
        group.crawl_delay = delay;
      }
    }
  }
}

robots_txt robots_txt::allow_all() {
  return robots_txt();
}

robots_txt robots_txt::disallow_all() {
  robots_txt robots;
  robots.disallow_all_ = true;
  return robots;
}

std::vector<const robots_txt::group*> robots_txt::groups_for(std::string_view user_agent) const {
  auto agent = ascii_lower(user_agent);
  std::string best;
  for (const auto& group : groups_) {
    for (const auto& token : group.agents) {
      if (token != "*" && token.size() > best.size() && agent.find(token) != std::string::npos) {
        best = token;
      }
    }
  }
  if (best.empty()) best = "*";
  std::vector<const group*> chosen;
  for (const auto& group : groups_) {
    if (std::find(group.agents.begin(), group.agents.end(), best) != group.agents.end()) {
      chosen.push_back(&group);
    }
  }
  return chosen;
}

bool robots_txt::allowed(std::string_view url, std::string_view user_agent) const {
  auto path = normalise(path_of(url));
  if (path.empty() || path.front() == '?') path.insert(0, "/");
  if (path == "/robots.txt") return true;
  if (disallow_all_) return false;
  const rule* best = nullptr;
  for (const auto* group : groups_for(user_agent)) {
    for (const auto& rule : group->rules) {
      if (!pattern_matches(rule.pattern, path)) continue;
      if (!best || rule.pattern.size() > best->pattern.size() ||
          (rule.pattern.size() == best->pattern.size() && rule.allow)) {
        best = &rule;
      }
    }
  }
  return !best || best->allow;
}

std::optional<double> robots_txt::crawl_delay(std::string_view user_agent) const {
  for (const auto* group : groups_for(user_agent)) {
    if (group->crawl_delay) return group->crawl_delay;
  }
  return std::nullopt;
}

}  // namespace crawler
