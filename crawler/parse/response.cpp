#include "crawler/parse/response.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>
#include <cctype>

#include "config/ascii.h"
#include "crawler/parse/plain_url.h"
#include "request/url_bytes.h"

namespace crawler {
namespace {

// Links in real pages hold spaces, raw UTF-8 and stray '%'. Browsers (and w3lib's
// safe_url_string) percent-encode such bytes instead of rejecting the link; so do we.
std::string percent_encode_unsafe(std::string_view link) {
  std::string safe;
  safe.reserve(link.size() + 16);
  for (std::size_t i = 0; i < link.size(); ++i) {
    auto c = static_cast<unsigned char>(link[i]);
    bool stray_percent = c == '%' && !dedup::is_escape(link, i);
    if (c <= 0x20 || c >= 0x7f ||
        std::string_view("\"<>\\^`{|}").find(char(c)) != std::string_view::npos || stray_percent) {
      dedup::append_escaped(safe, c);
    } else {
      safe += char(c);
    }
  }
  return safe;
}

}  // namespace

nlohmann::json response::json() const {
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    throw std::invalid_argument(url + ": the body is not JSON");
  }
  return parsed;
}

std::string urljoin(std::string_view base_text, std::string_view link) {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
  };
  while (!link.empty() && is_space(link.front())) link.remove_prefix(1);
  while (!link.empty() && is_space(link.back())) link.remove_suffix(1);
  if (auto joined = plain_urljoin(base_text, link)) return std::move(*joined);
  auto base = boost::urls::parse_uri(base_text);
  if (!base) {
    throw link_error("cannot resolve \"" + std::string(link) + "\": base URL " +
                     std::string(base_text) + " is not absolute");
  }
  auto reference = boost::urls::parse_uri_reference(link);
  std::string encoded;
  if (!reference) {
    encoded = percent_encode_unsafe(link);
    // Boost.URL 1.81's resolve decodes the escapes of a path it merges ("a%2Fb" becomes "a/b",
    // "%2e%2e" a ".." that climbs): a different resource. Python's urljoin keeps them, and so
    // does the parser-free join, which takes a link that the escaping made plain.
    if (auto joined = plain_urljoin(base_text, encoded)) return std::move(*joined);
    reference = boost::urls::parse_uri_reference(encoded);
  }
  if (!reference) {
    throw link_error("\"" + std::string(link) + "\" on " + std::string(base_text) +
                     " is not a URL: " + reference.error().message());
  }
  boost::urls::url resolved;
  auto result = boost::urls::resolve(*base, *reference, resolved);
  if (!result) {
    throw link_error("cannot resolve \"" + std::string(link) + "\" against " +
                     std::string(base_text) + ": " + result.error().message());
  }
  // "HTTP://x/" is http: lower-cased as Python's urljoin does (found by link_extractor_fuzzer).
  resolved.normalize_scheme();
  // Boost.URL 1.81 keeps ".." segments that climb above the root ("http://a/../x"); RFC 3986
  // and Python's urljoin drop them, as plain_urljoin does.
  auto segments = resolved.encoded_segments();
  while (resolved.is_path_absolute() && !segments.empty() && *segments.begin() == "..") {
    segments.erase(segments.begin());
  }
  // The base's fragment stays only for an empty link (the page itself, as Python's urljoin
  // answers); "?r=2" or "x.html" name another resource, which RFC 3986 gives no fragment.
  if (!link.empty() && !reference->has_fragment()) resolved.remove_fragment();
  return std::string(resolved.buffer());
}

std::string response::urljoin(std::string_view link) const {
  // As a Scrapy request made from a page's link (w3lib's safe_url_string with the response's
  // encoding), and as browsers do: the query and fragment go in the page's encoding, the path
  // in UTF-8, so a windows-1252 page's "?q=café" asks for "?q=caf%E9".
  auto query = link.find_first_of("?#");
  if (query != std::string_view::npos &&
      std::any_of(link.begin() + std::ptrdiff_t(query), link.end(),
                  [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    const auto& encoding = document()->encoding();
    if (!encoding.starts_with("utf-")) {
      auto encoded = encode_from_utf8(link.substr(query), encoding);
      if (!encoded) {
        throw link_error("\"" + std::string(link) + "\" on " + url + " has a character " +
                         encoding + ", the page's encoding, cannot write");
      }
      std::string in_encoding(link.substr(0, query));
      for (char c : *encoded) {
        auto byte = static_cast<unsigned char>(c);
        if (byte < 0x80) {
          in_encoding += c;
        } else {
          dedup::append_escaped(in_encoding, byte);
        }
      }
      return crawler::urljoin(base_url(), in_encoding);
    }
  }
  return crawler::urljoin(base_url(), link);
}

namespace {

enum class response_type { html, xml, undecided };

// Scrapy's ResponseTypes.from_content_type, for what decides between HTML and XML.
response_type type_of_content(std::string_view content_type) {
  auto mime = ascii_lower(content_type.substr(0, content_type.find(';')));
  auto begin = mime.find_first_not_of(" \t");
  if (begin == std::string::npos) return response_type::undecided;
  mime = mime.substr(begin, mime.find_last_not_of(" \t") + 1 - begin);
  if (mime == "application/xhtml+xml" || mime == "application/vnd.wap.xhtml+xml") {
    return response_type::html;
  }
  if (mime == "application/xml" || mime == "text/xml" || mime.ends_with("+xml")) {
    return response_type::xml;
  }
  // text/html, and the types Scrapy reads as text (text/*, JSON, JavaScript): parsed as HTML.
  if (mime.starts_with("text/") || mime.find("json") != std::string::npos ||
      mime.find("javascript") != std::string::npos) {
    return response_type::html;
  }
  return response_type::undecided;  // application/octet-stream, ...: as if there were none
}

// Scrapy's from_filename, over the URL's path: the extensions of XML types.
response_type type_of_url(std::string_view url) {
  url = url.substr(0, url.find_first_of("?#"));
  auto dot = url.rfind('.');
  if (dot == std::string_view::npos || url.find('/', dot) != std::string_view::npos) {
    return response_type::undecided;
  }
  auto extension = ascii_lower(url.substr(dot));
  if (extension == ".xml" || extension == ".rss" || extension == ".atom" || extension == ".rdf") {
    return response_type::xml;
  }
  return response_type::undecided;
}

}  // namespace

bool response::is_xml() const {
  auto type = type_of_content(header("Content-Type"));
  if (type == response_type::undecided) type = type_of_url(url);
  if (type != response_type::undecided) return type == response_type::xml;
  // Scrapy's from_body: "<html>" before "<?xml" in the first 5000 bytes.
  auto head = ascii_lower(std::string_view(body).substr(0, 5000));
  return head.find("<html>") == std::string::npos && head.find("<?xml") != std::string::npos;
}

const std::shared_ptr<const html_document>& response::document() const {
  if (!document_) {
    document_ = is_xml() ? html_document::parse_xml(body, header("Content-Type"), parse_limits)
                         : html_document::parse(body, header("Content-Type"), parse_limits, parser);
  }
  return document_;
}

const std::string& response::base_url() const {
  if (base_url_) return *base_url_;
  base_url_ = url;
  // Parsing only pays when the page may have a <base>: most pages do not.
  auto head = std::string_view(body).substr(0, 4096);
  bool may_have_base = false;
  for (std::size_t at = head.find('<'); at != std::string_view::npos; at = head.find('<', at + 1)) {
    auto tag = head.substr(at + 1, 5);
    if (tag.size() == 5 && std::tolower(static_cast<unsigned char>(tag[0])) == 'b' &&
        std::tolower(static_cast<unsigned char>(tag[1])) == 'a' &&
        std::tolower(static_cast<unsigned char>(tag[2])) == 's' &&
        std::tolower(static_cast<unsigned char>(tag[3])) == 'e' &&
        (tag[4] == ' ' || tag[4] == '\t' || tag[4] == '\n')) {
      may_have_base = true;
      break;
    }
  }
  if (may_have_base) {
    if (auto href = css("base::attr(href)").get(); href && !href->empty()) {
      auto page = boost::urls::parse_uri(url);
      auto reference = boost::urls::parse_uri_reference(*href);
      boost::urls::url resolved;
      if (page && reference && boost::urls::resolve(*page, *reference, resolved)) {
        base_url_ = std::string(resolved.buffer());
      }
    }
  }
  return *base_url_;
}

crawler::request response::follow(std::string_view link, std::string callback) const {
  return crawler::request{urljoin(link), std::move(callback)};
}

}  // namespace crawler
