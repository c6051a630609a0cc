#include "scheduler/host_pace.h"

#include <boost/url/parse.hpp>
#include <optional>
#include <string_view>

namespace crawler {

namespace {

// The host of "scheme://host[:port][/?#...]" read off the string, or nullopt for anything else
// (user info, an IP literal, percent-escapes, no "://"), which Boost.URL reads: a settled page
// names a host for each of its links, and most are plain.
std::optional<std::string_view> plain_host(std::string_view url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return std::nullopt;
  auto authority = url.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (authority.find_first_of("@[%") != std::string_view::npos) return std::nullopt;
  return authority.substr(0, authority.find(':'));
}

}  // namespace

std::string pacing_host(const request& request) {
  std::string host;
  if (auto slot = request.meta.find("download_slot");
      slot != request.meta.end() && slot->is_string()) {
    host = slot->get<std::string>();
  } else {
    if (auto plain = plain_host(request.url)) {
      host = std::string(*plain);
    } else if (auto url = boost::urls::parse_uri(request.url)) {
      host = std::string(url->host());
    }
    for (auto& c : host) {
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    }
  }
  std::string escaped;
  escaped.reserve(host.size());
  for (char c : host) {
    if (c == '|') {
      escaped += "%7C";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

}  // namespace crawler
