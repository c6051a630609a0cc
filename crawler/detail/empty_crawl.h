// Why a crawl scraped no item, said once at its end: a crawl of nothing that says only
// "finished" leaves the user reading DEBUG lines to learn that robots.txt could not be fetched.
//
//   WARNING: No item was scraped: robots.txt forbade 1 request, 1 of them on hosts whose
//   robots.txt could not be fetched (SSLError: 1) and RFC 9309 allows nothing until it is fetched
//   again (ROBOTSTXT_OBEY=false skips robots.txt; check the start URL's scheme)
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace crawler::detail {

/// The reasons the stats of a crawl give for its having scraped no item, in one sentence; "" when
/// it scraped some.
std::string why_no_items(const nlohmann::json& stats);

}  // namespace crawler::detail
