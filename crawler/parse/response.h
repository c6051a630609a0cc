// A downloaded response, handed to the spider callback its request named.
//
//   void parse(const crawler::response& response, crawler::output& out) {
//     if (response.header("Content-Type").starts_with("application/json")) {
//       auto page = response.json();
//       for (auto& quote : page["quotes"]) out.item(quote);
//     }
//     out.follow(response, "/page/2", "parse");   // resolved against response.url
//   }
//
// The body is decoded (gzip, deflate, br) and at most DOWNLOAD_MAXSIZE bytes. A response is a
// value; it carries a copy of its request, so `response.meta()` reads what the request carried.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "crawler/parse/html.h"
#include "crawler/parse/selector.h"
#include "request/keyed_values.h"
#include "request/request.h"

namespace crawler {

/// A link that cannot be resolved against a page's URL. what() names the link and the page.
class link_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// `link` resolved against the absolute URL `base` (RFC 3986), surrounding whitespace ignored,
/// unsafe bytes percent-encoded, as Python's urljoin over w3lib's safe_url_string. Throws
/// link_error when `link` is not a URL reference or `base` not absolute.
std::string urljoin(std::string_view base, std::string_view link);

struct response {
  /// The URL that answered (the request's URL; redirects arrive as new requests).
  std::string url;
  /// The HTTP status; file:// responses read as 200, as Scrapy's file handler does.
  int status = 200;
  header_list headers;
  std::string body;
  /// "HTTP/1.1", "HTTP/2", or "" for file://.
  std::string protocol;
  /// Scrapy's response.flags: how the response came, e.g. "cached" from the HTTP cache.
  std::vector<std::string> flags;
  crawler::request request;
  /// The budgets document() holds the page to (HTML_MAX_SIZE, HTML_MAX_DEPTH, set by the engine).
  html_limits parse_limits;
  /// The parser document() reads the page with (HTML_PARSER, set by the engine).
  html_parser parser = html_parser::gumbo;

  /// The request's meta; meta()["key"] throws missing_key for a key it lacks (keyed_values.h).
  keyed_values meta() const { return {request.meta, "meta"}; }
  /// The value of the first header called `name` (any case), or "".
  std::string_view header(std::string_view name) const { return find_header(headers, name); }
  /// The request's cb_kwargs: what its callback was given to work with (Scrapy's
  /// response.cb_kwargs).
  keyed_values cb_kwargs() const { return {request.cb_kwargs, "cb_kwargs"}; }
  /// The body as text (bytes as received, after decoding the content encoding).
  std::string_view text() const { return body; }
  /// The body parsed as JSON. Throws std::invalid_argument naming the URL when it is not JSON.
  nlohmann::json json() const;
  /// `link` resolved against this response's URL (RFC 3986), surrounding whitespace ignored, as
  /// Scrapy's response.urljoin. Throws link_error when `link` is not a URL reference.
  std::string urljoin(std::string_view link) const;
  /// A request for `link` (resolved with urljoin) whose response goes to `callback`.
  crawler::request follow(std::string_view link, std::string callback = {}) const;

  /// Whether this is an XML response (Scrapy's XmlResponse), by Scrapy's rules: a Content-Type
  /// of XML (application/xml, text/xml, RSS, Atom, RDF, or another +xml but XHTML's); without a
  /// Content-Type that says, a URL ending in .xml, .rss, .atom or .rdf; else a body that starts
  /// (in its first 5000 bytes) with "<?xml" and holds no "<html>".
  bool is_xml() const;
  /// The body parsed, on first use, as XML when is_xml() (html_document::parse_xml: names keep
  /// their case and namespaces), else as HTML with `parser`; later calls share the same tree.
  /// Throws page_too_complex when the page is over parse_limits; the engine then skips the page
  /// with a warning and the stat html/skipped_count.
  const std::shared_ptr<const html_document>& document() const;
  /// `query` over the page (see selector.h). Throws selector_error for a bad selector.
  selector_list css(std::string_view query) const { return select(document(), query); }
  /// XPath 1.0 `query` over the page (see selector.h). Throws selector_error for a bad one.
  selector_list xpath(std::string_view query) const { return select_xpath(document(), query); }
  /// The URL relative links resolve against: the page's <base href> if it has one, else url.
  const std::string& base_url() const;
  /// Lets this page's XPath queries name `uri` by `prefix` (parsel's
  /// response.selector.register_namespace). An XML document's own prefixes need no registering.
  void register_namespace(std::string prefix, std::string uri) const {
    document()->register_namespace(std::move(prefix), std::move(uri));
  }

 private:
  mutable std::shared_ptr<const html_document> document_;
  mutable std::optional<std::string> base_url_;
};

}  // namespace crawler
