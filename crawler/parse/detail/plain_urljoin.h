// RFC 3986 reference resolution without a URL parser, for the links most pages are made of.
//
//   plain_urljoin("http://a.example/b/c.html?q", "../d/e.html#top") -> "http://a.example/d/e.html#top"
//   plain_urljoin("http://a.example/", "HTTP://b/")                  -> nullopt: has a scheme
//
// urljoin parses the base and the link with Boost.URL and resolves them: about 1.3 µs a link, a
// fifth of a links-only crawl's CPU when every page has 30 links. This answers in a fraction of
// that when both are "plain": a lower-case scheme and "://", only characters RFC 3986 allows
// unescaped, valid %XX escapes, at most one '#', and a link with no scheme or authority of its
// own. Anything else gets nullopt and goes to the parser, whose answer this must equal (pinned by
// tests/selector_test.cpp over RFC 3986's examples and fuzzed against it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace crawler::detail {

/// `link` resolved against `base` (fragment dropped unless the link has one), or nullopt when
/// either is not plain or `link` is empty.
std::optional<std::string> plain_urljoin(std::string_view base, std::string_view link);

}  // namespace crawler::detail
