// The CSS selector engine behind selector.h: a parser to a small AST and a right-to-left matcher
// over html_node elements, whichever parser built them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "crawler/parse/html.h"

namespace crawler::detail {

struct attribute_test {
  std::string name;  // lower-case in HTML
  char op = 0;       // 0: exists; '=', '~', '|', '^', '$', '*'
  std::string value;
  bool ignore_case = false;
};

// :nth-child(an+b) and friends; first-child is (0, 1), last-child (0, 1) from the end.
struct nth_test {
  int a = 0;
  int b = 1;
  bool of_type = false;
  bool from_end = false;
};

struct compound {
  std::string tag;  // lower-case in HTML; empty: any element
  std::vector<std::string> ids;
  std::vector<std::string> classes;
  std::vector<attribute_test> attributes;
  std::vector<nth_test> positions;
  std::vector<compound> negations;  // :not(...)
  bool empty = false;               // :empty
};

enum class pseudo_element { none, text, attr };

struct complex_selector {
  std::vector<compound> parts;    // left to right
  std::vector<char> combinators;  // between parts[i] and parts[i + 1]: ' ', '>', '+', '~'
  pseudo_element pseudo = pseudo_element::none;
  std::string attr_name;  // for ::attr(name)
  // "X *::text", "X ::text", "X *::attr(n)": the pseudo-element applies to the elements X
  // matches and everything under them (parsel reads them so); parts then end at X.
  bool descendant_or_self = false;
};

/// Which names a selector is compiled for: HTML's, case-insensitive (the selector's are
/// lower-cased, as the page's are), or XML's, matched as written (cssselect's GenericTranslator).
enum class document_kind { html, xml };

/// A comma-separated group. Throws selector_error naming the selector and position.
std::vector<complex_selector> parse_selector_group(std::string_view query,
                                                   document_kind kind = document_kind::html);

/// parse_selector_group's answer for `query`, from a cache of this thread's recent selectors: a
/// spider asks for the same few selectors on every page, often many times a page (a field per
/// item), and compiling one costs about as much as matching it. Throws selector_error as
/// parse_selector_group does.
std::shared_ptr<const std::vector<complex_selector>> compiled_selector_group(
    std::string_view query, document_kind kind = document_kind::html);

inline document_kind kind_of(const html_document& document) {
  return document.is_xml() ? document_kind::xml : document_kind::html;
}

/// Whether `element` matches `selector`, ignoring its pseudo-element (false for other nodes).
bool matches(const complex_selector& selector, const html_node* element);

}  // namespace crawler::detail
