// What a request read from a queue that other programs can write may ask for.
//
//   auto problem = crawler::shared_request_problem(taken);   // "" when it may run
//   if (!problem.empty()) set_aside(entry, problem);          // never run, kept with its reason
//
// A fleet's Redis is written by more than this crawl's workers: a producer script, an older
// release, a Python scrapy-redis fleet, an operator with redis-cli, anyone who reaches its port.
// What it holds is input, as untrusted as a crawled page, so a request read from it
// (request_origin::shared) may not ask for what only the crawl's own operator may:
//   - a URL that is not http or https with a host. A file:// URL in a queue entry would put the
//     workers' local files into the feed; gopher:// and the like talk to services on their
//     network. A URL without a scheme is refused as Scrapy refuses it ("Missing scheme in
//     request url"), never guessed at.
//   - meta "proxy": the writer would route the crawl, and the proxy credentials, through a host
//     of its choosing.
// And neither dont_filter nor meta "allow_offsite" takes a shared request past the offsite
// filter (the offsite downloader middleware reads request::origin). An entry signed with the
// fleet's SCHEDULER_SIGNING_KEY is the fleet's own and keeps its writer's origin, though it too
// is http(s) only: nothing read from Redis names a local file.
#pragma once

#include <string>
#include <string_view>

#include "config/settings.h"
#include "request/request.h"

namespace crawler {

/// "Missing scheme in request url: URL" when `url` has no scheme (Scrapy's words), else "".
std::string missing_scheme_problem(std::string_view url);

/// What of an HTTP request besides its URL a shared (unsigned) entry may set
/// (SCHEDULER_ENTRY_FIELDS): a method other than GET, a body, headers (besides a Referer, which
/// the crawl's own entries carry), cookies. Without a signing
/// key, whoever writes the fleet's Redis chooses them for every worker (a POST with an
/// Authorization header reaches the site as the crawl's own); an operator who wants none of it
/// sets SCHEDULER_ENTRY_FIELDS = [], and unsigned entries are plain GETs of their URL.
struct entry_fields {
  bool method = true, body = true, headers = true, cookies = true;
  /// SCHEDULER_ENTRY_FIELDS' values; throws settings_error naming one that is none of the four.
  static entry_fields from(const settings& settings);
};

/// Why `request`, read from a shared queue, may not run, or "" when it may: a sentence that names
/// the URL and what is wrong, for the entry's :bad record and the log. Its URL must be http(s)
/// with a host whatever its origin; the rest applies to request_origin::shared, which the reader
/// sets unless the entry was signed with the fleet's key (entry_signature.h): no meta "proxy",
/// and nothing `allowed` does not allow.
std::string shared_request_problem(const request& request, const entry_fields& allowed = {});

}  // namespace crawler
