// How long an answer asks its host to be left alone, for a scheduler that paces hosts
// (host_pace.h): a 429 (Too Many Requests) or 503 (Service Unavailable) asks for its Retry-After,
// in seconds or as an HTTP date, and for 1 s without a readable one. A site cannot hold a crawl
// longer than an hour this way.
#pragma once

#include <string_view>

namespace crawler::detail {

/// Seconds the host of an answer with `status` and this Retry-After header ("" when absent) asks
/// to be left alone: 0 unless the status is 429 or 503, else 1 to 3600.
double hold_asked(int status, std::string_view retry_after);

}  // namespace crawler::detail
