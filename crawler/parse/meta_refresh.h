// <meta http-equiv="refresh" content="5; url=/next">: the redirect a page asks for in its markup,
// found as w3lib's get_meta_refresh finds it (what Scrapy's MetaRefreshMiddleware follows).
//
//   if (auto refresh = crawler::find_meta_refresh(response.body, response.url)) {
//     refresh->delay;   // 5.0 (seconds)
//     refresh->url;     // "http://example.com/next", resolved against the page's URL
//   }
//
// Only the first 4096 bytes are read, comments and the content of `ignore_tags` elements
// (METAREFRESH_IGNORE_TAGS, e.g. "noscript") left out, entities decoded. A refresh without a
// url= part reloads the page itself and is no redirect: none is returned for it. Regular
// expressions over the text, not a parse: a page too broken to parse still redirects as in Scrapy.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crawler {

struct meta_refresh {
  double delay = 0;
  std::string url;
};

/// The page's meta refresh, or nothing (none, or a url= that does not resolve against `page_url`).
std::optional<meta_refresh> find_meta_refresh(std::string_view html, std::string_view page_url,
                                              const std::vector<std::string>& ignore_tags = {});

}  // namespace crawler
