// A parsed HTML page: the body decoded to UTF-8 and parsed once, into one tree of html_node
// whichever parser read it (HTML_PARSER): Gumbo, the default (HTML5's algorithm, so broken markup
// parses as a browser would), or libxml2 (the parser under Scrapy's selectors, parsel over lxml,
// so selectors see the tree Scrapy sees; faster on most pages).
//
//   auto document = crawler::html_document::parse(response.body, response.header("Content-Type"));
//   auto titles = crawler::select(document, "title::text").getall();
//
// The encoding is taken, in order, from a byte order mark, the Content-Type header's charset, a
// <meta charset> or <meta http-equiv="Content-Type"> in the first 1024 bytes, else UTF-8, as
// browsers do. Bytes that are invalid in that encoding become U+FFFD; nothing is dropped silently
// and nothing crashes. A document is immutable once parsed and may be shared between threads.
//
// A parser is one file in detail/ that walks its own tree into a detail::tree_builder, and one
// line in the registry in html_parsers.cpp. Gumbo's line first tries detail/well_formed_html.cpp,
// which builds Gumbo's tree in one pass for the well-formed pages most sites serve, and leaves
// the rest to Gumbo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crawler {

class html_document;
namespace detail {
class tree_builder;
class xpath_tree;
const xpath_tree& xpath_tree_of(const html_document& document);
}

/// HTML_PARSER's values.
enum class html_parser : std::uint8_t { gumbo, libxml2 };

/// The parser called `name` ("gumbo", "libxml2"). Throws std::invalid_argument naming the known
/// ones.
html_parser html_parser_named(std::string_view name);

struct html_attribute {
  std::string_view name;   // lower-case; in an XML document as written ("xml:lang", "href")
  std::string_view value;  // entities decoded
};

/// One node of a parsed page. Elements have a name and attributes, text and comments their
/// content; every node links to its parent, children and siblings, so walks need no recursion.
struct html_node {
  enum class kind : std::uint8_t { document, element, text, comment, cdata };

  kind type = kind::element;
  // An element's lower-case name. In an XML document its name as written when it is in no
  // namespace, else "{namespace URI}local-name", as lxml's tag: a CSS type selector matches
  // neither case-folded nor across namespaces, as in Scrapy.
  std::string_view name;
  std::string_view text;  // the content of text, comment and cdata nodes, entities decoded
  std::span<const html_attribute> attributes;
  const html_node* parent = nullptr;
  const html_node* first_child = nullptr;
  const html_node* last_child = nullptr;
  const html_node* next_sibling = nullptr;
  const html_node* previous_sibling = nullptr;

  bool is_element() const { return type == kind::element; }
  /// Text a selector's ::text returns: text and cdata nodes.
  bool is_text() const { return type == kind::text || type == kind::cdata; }
  /// The value of the attribute `name` (lower-case), or nullptr when the element has none.
  const std::string_view* attribute(std::string_view name) const {
    for (const auto& attribute : attributes) {
      if (attribute.name == name) return &attribute.value;
    }
    return nullptr;
  }
};

/// What a page may cost before it is parsed (HTML_MAX_SIZE, HTML_MAX_DEPTH). Gumbo's time grows
/// with the square of the nesting depth (100,000 nested <div>s take it about 17 s), so a page
/// is measured before Gumbo sees it, and one over budget is refused.
struct html_limits {
  std::size_t max_bytes = 32u << 20;
  std::size_t max_depth = 2000;
};

/// A page over an html_limits budget. what() says which budget and by how much; reason() is
/// "too_large" or "too_deep", for stats.
class page_too_complex : public std::runtime_error {
 public:
  page_too_complex(std::string reason, const std::string& message)
      : std::runtime_error(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

/// How deep `markup` nests elements, estimated from its tags in one pass without parsing: start
/// tags count, end tags uncount, void elements and the ones HTML closes by itself (p, li, td,
/// option, ...) do not count, script/style/textarea/title bodies and comments are skipped. An
/// upper bound for well-formed pages; a page whose tags are left open counts them all.
std::size_t estimate_nesting_depth(std::string_view markup);

class html_document {
 public:
  /// Decodes and parses `body` with `parser`. `content_type` is the response's Content-Type
  /// header, if any. Throws page_too_complex, before parsing, when `body` is over a budget of
  /// `limits`.
  static std::shared_ptr<const html_document> parse(std::string_view body,
                                                    std::string_view content_type = {},
                                                    const html_limits& limits = {},
                                                    html_parser parser = html_parser::gumbo);
  /// Decodes and parses `body` as XML (Scrapy's XmlResponse, parsel's type="xml"): libxml2's XML
  /// parser, recovering from errors, with no network, no DTD and no entity expansion; names keep
  /// their case and namespaces. The encoding also comes from an <?xml encoding="..."?>
  /// declaration. Throws page_too_complex as parse() does.
  static std::shared_ptr<const html_document> parse_xml(std::string_view body,
                                                        std::string_view content_type = {},
                                                        const html_limits& limits = {});
  ~html_document() = default;
  html_document(const html_document&) = delete;
  html_document& operator=(const html_document&) = delete;

  /// The document node (the parent of <html>).
  const html_node* root() const { return &nodes_.front(); }
  /// The encoding the body was decoded from, lower-case ("utf-8", "windows-1252", ...).
  const std::string& encoding() const { return encoding_; }
  /// The body as UTF-8, as it was parsed (node positions point into it).
  const std::string& text() const { return utf8_; }
  /// Whether the document was parsed as XML (parse_xml).
  bool is_xml() const { return xml_document_ != nullptr; }

  /// Lets XPath queries on this document name `uri` by `prefix` (parsel's register_namespace),
  /// beside the prefixes the document declares itself. Thread-safe.
  void register_namespace(std::string prefix, std::string uri) const;
  /// The prefixes register_namespace added, in the order they came.
  std::vector<std::pair<std::string, std::string>> registered_namespaces() const;

 private:
  friend class detail::tree_builder;
  friend const detail::xpath_tree& detail::xpath_tree_of(const html_document& document);

  html_document() = default;
  std::string utf8_;
  std::string encoding_;
  std::deque<html_node> nodes_;  // a deque: nodes keep their address as the tree grows
  std::vector<html_attribute> attributes_;
  std::deque<std::string> strings_;  // names and values the parser's own output does not hold
  std::shared_ptr<const void> parser_output_;  // what the nodes' strings point into
  // An XML document's libxml2 tree (owned by parser_output_), which XPath runs on directly: its
  // namespaces are what parsel's XPath sees.
  void* xml_document_ = nullptr;
  mutable std::mutex namespaces_mutex_;
  mutable std::vector<std::pair<std::string, std::string>> namespaces_;
  // libxml2's copy of the tree for XPath (detail/xpath.cpp), built on the first query that is
  // not a plain path (detail/xpath_paths.h answers those on this tree).
  mutable std::once_flag xpath_built_;
  mutable std::shared_ptr<const void> xpath_tree_;
};

/// `body` decoded to UTF-8 from `encoding` (any name iconv knows); invalid bytes become U+FFFD.
std::string decode_to_utf8(std::string_view body, std::string_view encoding);

/// `utf8` (valid UTF-8) in `encoding` (any name iconv knows), or nullopt when a character of it
/// has no form there (or iconv does not know the encoding).
std::optional<std::string> encode_from_utf8(std::string_view utf8, std::string_view encoding);

/// The encoding a browser would pick for `body` (see html_document), lower-case.
std::string sniff_encoding(std::string_view body, std::string_view content_type);

}  // namespace crawler
