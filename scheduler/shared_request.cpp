#include "scheduler/shared_request.h"

#include <boost/url/parse.hpp>

#include "request/url_bytes.h"

namespace crawler {

std::string missing_scheme_problem(std::string_view url) {
  if (!dedup::url_scheme(url).empty()) return {};
  return "Missing scheme in request url: " + quoted_for_log(url);
}

std::string shared_request_problem(const request& request) {
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
  return {};
}

}  // namespace crawler
