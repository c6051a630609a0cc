// Which URL schemes a crawl fetches, and which pages may lead to them (DOWNLOAD_SCHEMES).
//
//   crawler::scheme_policy schemes{settings};                  // ["http", "https", "file"]
//   schemes.fetches("gopher://127.0.0.1:6379/_SET");           // false: not in the list
//   schemes.may_follow("https://a.example/", "file:///etc/passwd");  // false: file is local
//   schemes.may_follow("file:///site/index.html", "file:///site/b.html");  // true
//
// A crawled page is untrusted input. Left to libcurl, a link or a redirect to gopher:// or dict://
// talks to services on the crawler's own network (a local Redis takes gopher's bytes as commands),
// and one to file:// puts the machine's files into the feed. So the crawler fetches only the
// schemes DOWNLOAD_SCHEMES lists, and file:// (the offline examples' scheme) is local: a start
// request or a file:// page may lead to it, an http(s) page never can, whatever the list says.
// The list may be widened explicitly (e.g. "ftp"); every name must be a protocol libcurl has.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "request/url_bytes.h"

namespace crawler {

/// The scheme of `url`, lower-case, or "" when it has none ("example.org/a", "/a").
using dedup::url_scheme;

class scheme_policy {
 public:
  /// Reads DOWNLOAD_SCHEMES. Throws settings_error for a name libcurl cannot fetch.
  explicit scheme_policy(const settings& settings);

  /// True when `url`'s scheme is one the crawl fetches.
  bool fetches(std::string_view url) const;
  /// True when the crawl fetches `url` and it is not local: what a URL a page's content names may
  /// be when the page it came from is not known (an item's file_urls).
  bool fetches_remote(std::string_view url) const;
  /// True when a page at `from` may lead, by a link or a redirect, to `to`.
  bool may_follow(std::string_view from, std::string_view to) const;
  /// The list as libcurl's CURLOPT_PROTOCOLS_STR spells it: "http,https,file".
  const std::string& curl_protocols() const { return curl_protocols_; }

 private:
  std::vector<std::string> schemes_;
  std::string curl_protocols_;
};

}  // namespace crawler
