// The XPath most spiders write, evaluated on the page's own tree: location paths of names, `*`,
// `text()`, `node()` and `comment()`, steps joined by `/` and `//`, starting at the page (`/`,
// `//`) or at the selection (`.`, a name), an attribute last (`@href`, `@*`), and predicates of
// one test each: a position (`[2]`), an attribute's presence or absence (`[@id]`,
// `[not(@id)]`), its value (`[@class='x']`, `!=`, `contains(@class, 'x')`, `starts-with(...)`)
// or a text child's (`[text()='x']`).
//
// Anything else (unions, other axes and functions, arithmetic, last(), a namespace prefix, an XML
// document) is left to libxml2 (detail/xpath.cpp), which needs a copy of the tree as large as the
// tree itself: for a 2.5 MB page, about 35 MB. A path answers here exactly what libxml2 answers
// on that copy (tests/xpath_paths_test.cpp holds the two to it).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "crawler/parse/detail/xpath_result.h"
#include "crawler/parse/html.h"

namespace crawler::detail {

/// `query` evaluated with `context` as the context node, as evaluate_xpath would; nullopt when
/// `query` is not such a path (or `document` is XML), for libxml2 to answer.
std::optional<std::vector<xpath_result>> evaluate_xpath_path(const html_document& document,
                                                             const html_node* context,
                                                             std::string_view query);

}  // namespace crawler::detail
