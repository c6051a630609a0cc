// URLs taken apart and resolved without a URL parser, for the plain URLs most pages are made of.
//
//   split_plain_url("http://u@Shop.example:8080/p/1.html?a=1#top")
//     -> scheme "http", authority "u@Shop.example:8080", host "Shop.example", path "/p/1.html",
//        query "?a=1", fragment "#top"
//   plain_urljoin("http://a.example/b/c.html?q", "../d/e.html#top")
//     -> "http://a.example/d/e.html#top"
//   plain_urljoin("http://a.example/", "HTTP://b/")  -> nullopt: the parser decides
//
// Boost.URL parses a URL in about half a microsecond; a links-only crawl of pages with 30 links
// each parsed every link three times over (to resolve it, to check its host, to fingerprint it),
// a fifth of its CPU. A URL is "plain" when it has a lower-case scheme and "://", only characters
// RFC 3986 allows unescaped (no IPv6 literal), valid %XX escapes and at most one '#'. Anything
// else gets nullopt, and the caller goes to the parser, whose answers these equal (pinned by
// tests/urljoin_test.cpp against Python's urljoin, with the one difference from Boost.URL 1.81
// that urljoin removes on its parser path too: ".." above the root is dropped).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace crawler {

/// The parts of a plain absolute URL, as views into it. `query` keeps its '?' and `fragment` its
/// '#'; `host` is the authority without userinfo and port, in its original case.
struct plain_url_parts {
  std::string_view scheme, authority, host, path, query, fragment;
};

/// `url` taken apart, or nullopt when it is not plain or its authority holds an escape.
std::optional<plain_url_parts> split_plain_url(std::string_view url);

/// `link` resolved against `base` as urljoin does (the fragment dropped unless the link has one),
/// or nullopt when either is not plain or `link` is empty. `link` may be absolute ("https://..."
/// with a lower-case scheme), network-path ("//host/x"), absolute-path, or relative.
std::optional<std::string> plain_urljoin(std::string_view base, std::string_view link);

}  // namespace crawler
