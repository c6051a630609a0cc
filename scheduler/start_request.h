// Start URL entries, as `crawler push` writes them to <spider>:start_urls and as scrapy-redis
// users push them:
//
//   https://books.example/                                    a plain URL
//   {"url": "https://books.example/s", "q": "dune", "meta": {"from": "push"}}
//
// A JSON entry is read as scrapy-redis's RedisSpider reads it: "url", "method" (upper-cased,
// GET when absent) and "meta", and every other key is form data, as in Scrapy's FormRequest: it
// replaces the URL's query for GET (`?q=dune`), or becomes a form-encoded body for POST. Keys of
// this framework are read first and are not form data: "priority", "callback", "errback" and
// "dont_filter".
#pragma once

#include <string_view>

#include "scheduler/request.h"

namespace crawler {

/// The request an entry stands for, of request_origin::shared: start URLs come from a key anyone
/// who reaches the fleet's Redis can write, so the entry must pass shared_request_problem (http or
/// https, no meta "proxy"). Throws std::invalid_argument saying what is wrong.
request start_request_from(std::string_view entry);

}  // namespace crawler
