#include "config/redact.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

#include "config/ascii.h"
#include "config/settings.h"

namespace crawler {
namespace {

constexpr std::size_t min_remembered_length = 4;

std::mutex secrets_mutex;
std::vector<std::string>& secrets() {
  static std::vector<std::string> list;
  return list;
}

// Names whose values are credentials wherever they appear: REDIS_PARAMS.password, an
// Authorization header in DEFAULT_REQUEST_HEADERS, a token in FEEDS options.
bool is_secret_name(std::string_view name) {
  static const std::set<std::string, std::less<>> names = {
      "password", "passwd",        "pass",
      "secret",   "token",         "api_key",
      "apikey",   "authorization", "proxy-authorization",
      "cookie",   "x-api-key"};
  return names.contains(ascii_lower(name));
}

// Where the userinfo of the URL starting at `start` ends, with its password span; npos when
// the text from `start` is not "scheme://user:password@".
struct password_span {
  std::size_t begin = std::string_view::npos, end = 0;
};

password_span find_password(std::string_view text, std::size_t scheme_end) {
  // scheme_end points at "://"; the authority runs to the next '/', '?', '#' or whitespace.
  std::size_t authority = scheme_end + 3;
  std::size_t stop = authority;
  while (stop < text.size() &&
         std::string_view("/?#\"' \t\r\n<>").find(text[stop]) == std::string_view::npos) {
    ++stop;
  }
  auto at = text.substr(authority, stop - authority).rfind('@');
  if (at == std::string_view::npos) return {};
  auto userinfo = text.substr(authority, at);
  auto colon = userinfo.find(':');
  if (colon == std::string_view::npos) return {};
  return {authority + colon + 1, authority + at};
}

// Every "scheme://user:password@" password in `text`, as spans, in order.
std::vector<password_span> url_passwords(std::string_view text) {
  std::vector<password_span> spans;
  for (std::size_t found = text.find("://"); found != std::string_view::npos;
       found = text.find("://", found + 3)) {
    auto span = find_password(text, found);
    if (span.begin != std::string_view::npos && span.end > span.begin) spans.push_back(span);
  }
  return spans;
}

// Replaces, in place, secret-named members and URL passwords; `collect` receives each secret.
template <typename Collect>
void walk(nlohmann::json& value, bool secret, Collect&& collect) {
  if (value.is_string()) {
    auto text = value.get<std::string>();
    if (secret) {
      collect(text);
      value = std::string(redaction);
      return;
    }
    auto spans = url_passwords(text);
    for (auto span : spans) collect(text.substr(span.begin, span.end - span.begin));
    if (!spans.empty()) value = redact_url(text);
  } else if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [key, member] : value.items()) {
      walk(member, secret || is_secret_name(key), collect);
      // A key may be a URL too (FEEDS: "ftp://user:pass@host/items.jl").
      for (auto span : url_passwords(key)) collect(key.substr(span.begin, span.end - span.begin));
      out[redact_url(key)] = std::move(member);
    }
    value = std::move(out);
  } else if (value.is_array()) {
    for (auto& member : value) walk(member, secret, collect);
  }
}

}  // namespace

std::string redact_url(std::string_view url) {
  std::string out;
  std::size_t copied = 0;
  for (auto span : url_passwords(url)) {
    out.append(url.substr(copied, span.begin - copied));
    out.append(redaction);
    copied = span.end;
  }
  out.append(url.substr(copied));
  return out;
}

nlohmann::json redacted_settings(const nlohmann::json& settings) {
  auto copy = settings;
  walk(copy, false, [](const std::string&) {});
  return copy;
}

// "p%40ss" as a client sends it: "p@ss".
static std::string percent_decode(std::string_view text) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += char(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

void remember_secret(std::string_view secret) {
  if (secret.empty() || secret == redaction) return;
  if (secret.find('%') != std::string_view::npos) {
    if (auto decoded = percent_decode(secret); decoded != secret) remember_secret(decoded);
  }
  std::lock_guard lock(secrets_mutex);
  auto& list = secrets();
  if (std::find(list.begin(), list.end(), secret) != list.end()) return;
  list.emplace_back(secret);
  // Longest first, so a secret that contains another is replaced whole.
  std::sort(list.begin(), list.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
}

void remember_url_secrets(std::string_view text) {
  for (auto span : url_passwords(text))
    remember_secret(text.substr(span.begin, span.end - span.begin));
}

void remember_secrets(const settings& settings) {
  auto all = settings.to_json();
  walk(all, false, [](const std::string& secret) { remember_secret(secret); });
  for (const char* name :
       {"http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"}) {
    if (const char* value = std::getenv(name)) remember_url_secrets(value);
  }
}

std::string redact(std::string_view text) {
  std::string out = redact_url(text);
  std::lock_guard lock(secrets_mutex);
  for (const auto& secret : secrets()) {
    // A secret of a few characters would blank every word that holds them; URL passwords,
    // whatever their length, are already gone (redact_url).
    if (secret.size() < min_remembered_length) continue;
    for (auto at = out.find(secret); at != std::string::npos;
         at = out.find(secret, at + redaction.size())) {
      out.replace(at, secret.size(), redaction);
    }
  }
  return out;
}

}  // namespace crawler
