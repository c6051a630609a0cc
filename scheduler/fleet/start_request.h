// Start URL entries, as `crawler push` writes them to <spider>:start_urls and as scrapy-redis
// users push them:
//
//   https://books.example/                                    a plain URL
//   {"url": "https://books.example/s", "q": "dune", "meta": {"from": "push"}}
//   0000001795000012|{"hmac":"<64 hex>","url":"https://books.example/"}
//                                                             signed (entry_signature.h) and
//                                                             numbered: it is read once
//
// A JSON entry is read as scrapy-redis's RedisSpider reads it: "url", "method" (upper-cased,
// GET when absent) and "meta", and every other key is form data, as in Scrapy's FormRequest: it
// replaces the URL's query for GET (`?q=dune`), or becomes a form-encoded body for POST. Keys of
// this framework are read first and are not form data: "priority", "callback", "errback",
// "dont_filter" and "hmac".
#pragma once

#include <string_view>

#include "scheduler/fleet/entry_signature.h"
#include "scheduler/shared_request.h"
#include "request/request.h"

namespace crawler {

/// The request an entry stands for. Start URLs come from a key anyone who reaches the fleet's
/// Redis can write, so the request is of request_origin::shared and must pass
/// shared_request_problem (http or https, no meta "proxy"), unless `signer` is given and the
/// entry is signed with its key (`crawler push` with SCHEDULER_SIGNING_KEY): then it is the
/// operator's own, and still http(s) only. Throws std::invalid_argument saying what is wrong,
/// a forged signature included.
request start_request_from(std::string_view entry, const entry_signer* signer = nullptr,
                           const entry_fields& allowed = {});

/// A signed start URL's number (its first 16 digits, before '|'), or "" for an entry without.
/// `crawler push` numbers the start URLs it signs from <start key>:seq; a worker records each
/// number it reads in <start key>:settled, so a copy of a signed start URL is read once.
std::string_view start_url_number(std::string_view entry);

}  // namespace crawler
