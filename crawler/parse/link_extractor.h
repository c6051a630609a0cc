// Scrapy's LinkExtractor: the links of a page, filtered by regexes, domains, page regions and
// file extensions.
//
//   crawler::link_extractor books{{.allow = {R"(/catalogue/[^/]+/index\.html)"},
//                                  .restrict_css = {"article.product_pod"}}};
//   for (const auto& link : books.extract_links(response)) out.follow(response, link.url, "book");
//
// Options keep Scrapy's names and defaults: tags {a, area}, attrs {href}, unique true,
// canonicalize false, strip true, deny_extensions Scrapy's IGNORED_EXTENSIONS (images, audio,
// video, archives, office documents, ...). allow/deny are regexes searched anywhere in the
// absolute URL (Python's re.search), run by RE2: Python's syntax without lookaround or
// backreferences, in time linear in the URL. allow_domains/deny_domains match the host or any
// subdomain. Only http, https, file and ftp links are kept. Relative links resolve against the
// page's <base href> or URL.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crawler/parse/response.h"

namespace re2 {
class RE2;
}

namespace crawler {

struct link {
  std::string url;
  std::string text;  // the element's text, whitespace collapsed
  bool nofollow = false;
  friend bool operator==(const link&, const link&) = default;
};

struct link_extractor_options {
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  std::vector<std::string> allow_domains;
  std::vector<std::string> deny_domains;
  std::vector<std::string> restrict_css;
  /// XPath expressions for the regions links are taken from, as Scrapy's restrict_xpaths (with
  /// restrict_css, the regions of both).
  std::vector<std::string> restrict_xpaths;
  std::vector<std::string> tags = {"a", "area"};
  std::vector<std::string> attrs = {"href"};
  bool canonicalize = false;
  bool unique = true;
  bool strip = true;
  /// Extensions (without the dot) whose links are dropped; nullopt means Scrapy's list.
  std::optional<std::vector<std::string>> deny_extensions;
};

/// Whether `host` is one of `domains` or a subdomain of one (all lower-case): "a.b.example" is
/// in {"b.example"}, "notexample" is not in {"example"}.
bool host_in_domains(std::string_view host, const std::vector<std::string>& domains);

/// Scrapy's IGNORED_EXTENSIONS.
const std::vector<std::string>& ignored_extensions();

class link_extractor {
 public:
  /// Compiles the regexes and selectors. Throws std::invalid_argument naming the option and
  /// index ("allow[1]: invalid regex ...", "restrict_css[0]: invalid CSS selector ...").
  explicit link_extractor(link_extractor_options options = {});

  /// The page's links that pass every filter, in document order.
  std::vector<link> extract_links(const response& response) const;
  /// Whether an absolute URL passes allow, deny, the domain lists and deny_extensions.
  bool matches(std::string_view url) const;

 private:
  link_extractor_options options_;
  std::vector<std::shared_ptr<const re2::RE2>> allow_;  // RE2: see regex.h
  std::vector<std::shared_ptr<const re2::RE2>> deny_;
  std::vector<std::string> tags_;   // lower-case
  std::vector<std::string> attrs_;  // lower-case
};

}  // namespace crawler
