// HTML_PARSER's registry and html_document::parse, which runs the chosen parser into a
// tree_builder: the one file that knows every parser, so html.cpp (the tree and its text) knows
// none of them.
#include <string>

#include "crawler/parse/detail/tag_openings.h"
#include "crawler/parse/detail/tree_builder.h"
#include "crawler/parse/html.h"

namespace crawler {
namespace {

// HTML_PARSER's registry: a parser is a name and the function that builds the tree with it.
struct registered_parser {
  html_parser parser;
  std::string_view name;
  detail::tree_builder::parser_function build;
};
constexpr registered_parser parsers[] = {
    {html_parser::gumbo, "gumbo", &detail::build_with_gumbo},
    {html_parser::libxml2, "libxml2", &detail::build_with_libxml2},
};

}  // namespace

html_parser html_parser_named(std::string_view name) {
  std::string known;
  for (const auto& entry : parsers) {
    if (entry.name == name) return entry.parser;
    known += (known.empty() ? "\"" : ", \"") + std::string(entry.name) + "\"";
  }
  throw std::invalid_argument("unknown HTML parser \"" + std::string(name) + "\"; known: " + known);
}

namespace {

// Before any parser sees it: a page over its budgets is refused.
void check_limits(std::string_view body, const html_limits& limits) {
  if (body.size() > limits.max_bytes) {
    throw page_too_complex("too_large", "the page is " + std::to_string(body.size()) +
                                            " bytes, more than HTML_MAX_SIZE (" +
                                            std::to_string(limits.max_bytes) + ")");
  }
  if (detail::count_tag_openings(body) <= limits.max_depth) return;
  if (auto depth = estimate_nesting_depth(body); depth > limits.max_depth) {
    throw page_too_complex("too_deep", "the page nests elements " + std::to_string(depth) +
                                           " deep, more than HTML_MAX_DEPTH (" +
                                           std::to_string(limits.max_depth) + ")");
  }
}

}  // namespace

std::shared_ptr<const html_document> html_document::parse(std::string_view body,
                                                          std::string_view content_type,
                                                          const html_limits& limits,
                                                          html_parser parser) {
  for (const auto& entry : parsers) {
    if (entry.parser == parser) {
      return detail::tree_builder::build(body, content_type, limits, entry.build);
    }
  }
  throw std::invalid_argument("unknown HTML parser " + std::to_string(int(parser)));
}

std::shared_ptr<const html_document> html_document::parse_xml(std::string_view body,
                                                              std::string_view content_type,
                                                              const html_limits& limits) {
  return detail::tree_builder::build(body, content_type, limits, &detail::build_xml_with_libxml2);
}

namespace detail {

std::shared_ptr<const html_document> tree_builder::build(std::string_view body,
                                                         std::string_view content_type,
                                                         const html_limits& limits,
                                                         parser_function parse) {
  check_limits(body, limits);
  std::shared_ptr<html_document> document(new html_document);
  document->encoding_ = sniff_encoding(body, content_type);
  document->utf8_ = decode_to_utf8(body, document->encoding_);
  tree_builder builder(*document);
  parse(document->utf8_, builder);
  builder.finish();
  return document;
}

}  // namespace detail

}  // namespace crawler
