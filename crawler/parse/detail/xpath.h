// XPath 1.0 over an html_document, with parsel's semantics. The location paths most spiders
// write are answered on the page's own tree (detail/xpath_paths.h); every other expression by
// libxml2 (the engine under lxml) on a copy of the page's tree that libxml2 can walk. The copy is
// built once per document, on the first query that needs it, whichever parser (Gumbo or libxml2)
// read the page, and each of its nodes points back at ours, so a selected element is the same
// selector a CSS query gives.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "crawler/parse/detail/xpath_result.h"
#include "crawler/parse/html.h"

namespace crawler::detail {

/// libxml2's copy of a document's tree (opaque; built by xpath_tree_of).
class xpath_tree;

/// The copy of `document`'s tree, built on the first call; thread-safe.
const xpath_tree& xpath_tree_of(const html_document& document);

/// `query` evaluated with `context` as the context node (the document's root for a whole-page
/// query), as parsel's Selector.xpath: elements and comments are nodes of the page, text nodes
/// and attributes strings, and a number, boolean or string result one string ("2.0", "1", ...).
/// parsel's has-class("name", ...) is there too. Throws selector_error quoting the expression
/// for one libxml2 cannot evaluate.
std::vector<xpath_result> evaluate_xpath(const html_document& document, const html_node* context,
                                         std::string_view query);

/// evaluate_xpath by libxml2 alone, on the copy, whatever the expression (the oracle of the
/// paths answered on the page's own tree).
std::vector<xpath_result> evaluate_xpath_with_libxml2(const html_document& document,
                                                      const html_node* context,
                                                      std::string_view query);

/// The markup of `node` of an XML document as libxml2 writes it (parsel's get() on XML), or ""
/// for a node the document's libxml2 tree does not hold.
std::string xml_markup(const html_document& document, const html_node* node);

/// Compiles `query` without a document (for config validation). Throws selector_error.
void validate_xpath(std::string_view query);

}  // namespace crawler::detail
