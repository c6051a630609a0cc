#include "scheduler/shared_request.h"

#include <boost/url/parse.hpp>

#include <algorithm>

#include "config/ascii.h"
#include "request/url_bytes.h"

namespace crawler {

std::string missing_scheme_problem(std::string_view url) {
  if (!dedup::url_scheme(url).empty()) return {};
  return "Missing scheme in request url: " + quoted_for_log(url);
}

entry_fields entry_fields::from(const settings& settings) {
  entry_fields allowed{false, false, false, false};
  for (const auto& name : settings.get_list("SCHEDULER_ENTRY_FIELDS")) {
    if (name == "method") {
      allowed.method = true;
    } else if (name == "body") {
      allowed.body = true;
    } else if (name == "headers") {
      allowed.headers = true;
    } else if (name == "cookies") {
      allowed.cookies = true;
    } else {
      throw settings_error("SCHEDULER_ENTRY_FIELDS: \"" + name +
                           "\" is not a part of a request an entry may set (method, body, "
                           "headers, cookies)");
    }
  }
  return allowed;
}

std::string shared_request_problem(const request& request, const entry_fields& allowed) {
  if (auto missing = missing_scheme_problem(request.url); !missing.empty()) return missing;
  auto scheme = dedup::url_scheme(request.url);
  if (scheme != "http" && scheme != "https") {
    return "scheme \"" + quoted_for_log(scheme, 30) + "\" of " + quoted_for_log(request.url) +
           ": a shared queue carries only http and https URLs";
  }
  auto parsed = boost::urls::parse_uri(request.url);
  if (!parsed) return quoted_for_log(request.url) + " is not a valid URL";
  if (parsed->host().empty()) return quoted_for_log(request.url) + " has no host";
  if (request.origin == request_origin::shared && request.meta.contains("proxy")) {
    return "meta \"proxy\" in " + request.describe() +
           ": a request read from a shared queue may not choose its proxy (unless signed with "
           "SCHEDULER_SIGNING_KEY)";
  }
  if (request.origin != request_origin::shared) return {};
  auto refused = [&request](const std::string& what) {
    return request.describe() + " sets " + what +
           ", which SCHEDULER_ENTRY_FIELDS does not let an unsigned entry set";
  };
  if (!allowed.method && request.method != "GET") {
    return refused("its method (" + quoted_for_log(request.method, 20) + ")");
  }
  if (!allowed.body && !request.body.empty()) return refused("a body");
  // A Referer is what the crawl itself sends with every link it follows, its own entries'
  // included: it names a page, and chooses nothing about the site's answer.
  bool custom_headers = std::any_of(request.headers.begin(), request.headers.end(),
                                    [](const auto& header) {
                                      return ascii_lower(header.first) != "referer";
                                    });
  if (!allowed.headers && custom_headers) return refused("headers");
  if (!allowed.cookies && !request.cookies.empty()) return refused("cookies");
  return {};
}

}  // namespace crawler
