// robots.txt as RFC 9309 reads it: which URLs a crawler may fetch, its Crawl-delay, the sitemaps.
//
//   crawler::robots_txt robots{body};
//   robots.allowed("https://example.com/private/x", "mybot/1.0 (+https://example.com)");
//   robots.crawl_delay("mybot/1.0");            // std::optional<double>, seconds
//   robots.sitemaps();                          // the Sitemap: lines, for every crawler
//
// Groups start with one or more `User-agent:` lines. A crawler obeys the group whose product token
// is the longest one found in its User-Agent string (case-insensitively, as Scrapy's Protego
// parser matches), with every group of that token merged; with none, the `*` groups; with none
// of those either, everything is allowed. Within a group the longest matching Allow/Disallow
// pattern wins and Allow wins a tie; `*` matches any run of octets and a final `$` anchors the
// pattern to the end of the path. Paths and patterns are compared percent-encoded, with escapes
// of unreserved characters decoded (`/%62az` is `/baz`). `/robots.txt` itself is always allowed.
//
// Parsing never fails: a line it cannot read is skipped, and only the first 500 KiB are read
// (the least RFC 9309 lets a crawler read).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crawler {

class robots_txt {
 public:
  explicit robots_txt(std::string_view body);

  /// The rules of an unavailable robots.txt (a 4xx answer): everything is allowed.
  static robots_txt allow_all();
  /// The rules of an unreachable robots.txt (a 5xx answer, a network error): nothing is allowed.
  static robots_txt disallow_all();

  /// Whether `user_agent` may fetch `url` (an absolute URL, or a path with its query).
  bool allowed(std::string_view url, std::string_view user_agent) const;
  /// The Crawl-delay of the group `user_agent` obeys, in seconds.
  std::optional<double> crawl_delay(std::string_view user_agent) const;
  /// The absolute URLs of the `Sitemap:` lines.
  const std::vector<std::string>& sitemaps() const { return sitemaps_; }

 private:
  struct rule {
    std::string pattern;  // normalised; may contain '*' and a final '$'
    bool allow;
  };
  struct group {
    std::vector<std::string> agents;  // lower-case product tokens, "*" for every crawler
    std::vector<rule> rules;
    std::optional<double> crawl_delay;
  };

  robots_txt() = default;
  std::vector<const group*> groups_for(std::string_view user_agent) const;

  std::vector<group> groups_;
  std::vector<std::string> sitemaps_;
  bool disallow_all_ = false;
};

}  // namespace crawler
