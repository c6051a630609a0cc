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

#include "request/request.h"

namespace crawler {

/// "Missing scheme in request url: URL" when `url` has no scheme (Scrapy's words), else "".
std::string missing_scheme_problem(std::string_view url);

/// Why `request`, read from a shared queue, may not run, or "" when it may: a sentence that names
/// the URL and what is wrong, for the entry's :bad record and the log. Its URL must be http(s)
/// with a host whatever its origin; the rest applies to request_origin::shared, which the reader
/// sets unless the entry was signed with the fleet's key (entry_signature.h).
std::string shared_request_problem(const request& request);

}  // namespace crawler
