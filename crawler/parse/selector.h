// CSS selectors over a parsed page, as Scrapy's response.css (parsel).
//
//   auto books = response.css("article.product_pod");
//   for (const auto& book : books) {
//     auto title = book.css("h3 a::attr(title)").get();         // std::optional<std::string>
//     auto price = book.css("p.price_color::text").re_first(R"([\d.]+)");
//   }
//   auto next = response.css("li.next a::attr(href)").get();
//
// Supported: type, `*`, `#id`, `.class`, `[a]`, `[a=v]`, `~=`, `|=`, `^=`, `$=`, `*=` (with the
// `i` flag), descendant, `>`, `+`, `~`, groups `a, b`, `:first-child`, `:last-child`,
// `:only-child`, `:first-of-type`, `:last-of-type`, `:nth-child(an+b|odd|even)`,
// `:nth-last-child()`, `:nth-of-type()`, `:nth-last-of-type()`, `:not(...)`, `:empty`, and
// Scrapy's pseudo-elements `::text` (the element's own text nodes, one result each, as parsel) and
// `::attr(name)`. A selection on an element searches the element and its descendants, as parsel's
// descendant-or-self. Results come in document order. A malformed or unsupported selector throws
// selector_error quoting the selector and the position.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "crawler/parse/html.h"
#include "crawler/parse/selector_error.h"

namespace crawler {

class selector_list;

/// One selected thing: an element, or a string (from ::text or ::attr()).
class selector {
 public:
  selector(std::shared_ptr<const html_document> document, const html_node* node)
      : document_(std::move(document)), node_(node) {}
  explicit selector(std::string text) : text_(std::move(text)) {}

  /// Elements and strings under this element matching `query`; nothing for a string.
  selector_list css(std::string_view query) const;
  /// XPath 1.0 `query` with this element as the context node (so "./a" and ".//a" are relative
  /// and "//a" searches the whole page, as in parsel); nothing for a string.
  selector_list xpath(std::string_view query) const;
  /// A string's value, or an element's outer HTML.
  std::string get() const;
  /// The element's attributes; empty for a string.
  std::map<std::string, std::string> attrib() const;
  /// All text under the element, whitespace runs collapsed to one space and trimmed; a comment's
  /// or a string's value likewise.
  std::string text_content() const;
  bool is_element() const { return node_ != nullptr; }
  const html_node* node() const { return node_; }
  const std::shared_ptr<const html_document>& document() const { return document_; }

 private:
  std::shared_ptr<const html_document> document_;
  const html_node* node_ = nullptr;
  std::string text_;
};

class selector_list : public std::vector<selector> {
 public:
  using std::vector<selector>::vector;

  /// The first result's get(), or nullopt when there is none (Scrapy's get() returning None).
  std::optional<std::string> get() const;
  /// The first result's get(), or `fallback`.
  std::string get(std::string_view fallback) const;
  std::vector<std::string> getall() const;
  /// Every match of `regex` in every result: group 1 when the regex has groups, else the match.
  /// Throws selector_error for an invalid regex.
  std::vector<std::string> re(std::string_view regex) const;
  std::optional<std::string> re_first(std::string_view regex) const;
  /// The first element's attributes.
  std::map<std::string, std::string> attrib() const;
  /// `query` applied to every element of the list, results concatenated.
  selector_list css(std::string_view query) const;
  /// XPath `query` applied to every element of the list, results concatenated.
  selector_list xpath(std::string_view query) const;
};

/// `query` over the whole document.
selector_list select(const std::shared_ptr<const html_document>& document, std::string_view query);

/// Checks `query` without a document (for config validation). Throws selector_error.
void validate_selector(std::string_view query);

/// XPath 1.0 `query` over the whole document, as parsel's Selector.xpath (libxml2 evaluates it):
/// elements and comments are selectors, text() and @attr results strings, and count(), string(),
/// a comparison... one string each ("2.0", "1"/"0", the string). Throws selector_error quoting the
/// expression when it is not XPath.
selector_list select_xpath(const std::shared_ptr<const html_document>& document,
                           std::string_view query);

/// Checks an XPath `query` without a document. Throws selector_error.
void validate_xpath(std::string_view query);

/// Whether `query` can only be XPath, so a crawl file's field or a shell line may be either: it
/// starts with '/', "./", "../" or '(', or is a function call ("normalize-space(//h1)"). No CSS
/// selector starts so.
bool looks_like_xpath(std::string_view query);

}  // namespace crawler
