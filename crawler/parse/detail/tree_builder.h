// What a parser fills an html_document with. A parser walks its own tree in document order and
// calls add_* for each node, under a parent it added before; its output stays alive (keep()) as
// long as the document, so names and text can point into it instead of being copied.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "crawler/parse/html.h"

namespace crawler::detail {

class tree_builder {
 public:
  /// A parser's function: parses `utf8` into `builder`.
  using parser_function = void (*)(const std::string& utf8, tree_builder& builder);

  /// A document of `body` (checked against `limits`, decoded as `content_type` and the body say)
  /// built by `parse`: what html_document::parse and parse_xml return.
  static std::shared_ptr<const html_document> build(std::string_view body,
                                                    std::string_view content_type,
                                                    const html_limits& limits,
                                                    parser_function parse);

  explicit tree_builder(html_document& document);

  /// The document node, the parent of the top-level nodes.
  html_node* root() { return root_; }
  /// A new element, the last child of `parent`; its attributes follow with add_attribute.
  html_node* add_element(html_node* parent, std::string_view name);
  /// An attribute of the element added last.
  void add_attribute(std::string_view name, std::string_view value);
  /// A text, comment or cdata node, the last child of `parent`.
  html_node* add_leaf(html_node* parent, html_node::kind type, std::string_view text);
  /// A copy of `text` the document owns (a name lower-cased, a value joined from pieces).
  std::string_view own(std::string text);
  /// Keeps the parser's output alive with the document.
  void keep(std::shared_ptr<const void> output);
  /// Marks the document as XML, `xml_document` (a libxml2 xmlDoc that keep() holds) its tree.
  void set_xml_document(void* xml_document);
  /// Points every element at its attributes; the document is whole after this.
  void finish();
  /// Drops every node, attribute and string added so far: a parser that gave up starts over.
  void restart();

 private:
  html_node* append(html_node* parent, html_node node);

  html_document& document_;
  html_node* root_;
  std::vector<std::pair<html_node*, std::size_t>> first_attribute_;  // element, offset
};

/// The parsers of the registry in html_parsers.cpp: each parses `utf8` into `builder`.
/// HTML_PARSER=gumbo: build_well_formed_html when the page keeps to what it models, else Gumbo.
void build_with_gumbo(const std::string& utf8, tree_builder& builder);
/// Gumbo alone, for the tests and the fuzz target that hold build_well_formed_html to it.
void build_with_gumbo_only(const std::string& utf8, tree_builder& builder);
/// The tree Gumbo builds for `utf8`, built without Gumbo when the page keeps to the well-formed
/// part of HTML that well_formed_html.cpp models: true when it did; false when the page leaves
/// that part, with `builder` holding part of a tree (restart() it).
bool build_well_formed_html(const std::string& utf8, tree_builder& builder);
void build_with_libxml2(const std::string& utf8, tree_builder& builder);
/// The same parse through libxml2's own DOM, walked into `builder`: what build_with_libxml2's
/// events must build, for the tests and the fuzz target that compare the two.
void build_with_libxml2_dom(const std::string& utf8, tree_builder& builder);
/// parse_xml's parser: libxml2's XML parser; each element's libxml2 node points back at ours
/// (_private), for XPath.
void build_xml_with_libxml2(const std::string& utf8, tree_builder& builder);

}  // namespace crawler::detail
