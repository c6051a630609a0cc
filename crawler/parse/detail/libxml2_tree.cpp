// HTML_PARSER=libxml2: libxml2's HTML parser, the one under lxml and so under Scrapy's selectors
// (parsel). Its tree differs from a browser's on misnested markup (it does not reparent), which
// is the point: a spider ported from Scrapy sees what it saw there.
#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <memory>
#include <mutex>
#include <vector>

#include "crawler/parse/detail/libxml2_text.h"
#include "crawler/parse/detail/tree_builder.h"

namespace crawler::detail {
namespace {

// An attribute's value: its one text child as libxml2 leaves it, else its pieces joined.
std::string_view attribute_value(const xmlAttr* attribute, tree_builder& builder) {
  const xmlNode* child = attribute->children;
  if (!child) return {};
  if (!child->next && child->type == XML_TEXT_NODE) return libxml2_text(child->content);
  std::string joined;
  for (; child; child = child->next) joined += libxml2_text(child->content);
  return builder.own(std::move(joined));
}

}  // namespace

void build_with_libxml2(const std::string& utf8, tree_builder& builder) {
  // libxml2 must be initialised once before threads parse with it (the engine's parser pool).
  static std::once_flag initialised;
  std::call_once(initialised, [] { xmlInitParser(); });
  // As lxml's HTMLParser: recover from every error, never touch the network; the bytes are
  // UTF-8 already, so a <meta charset> must not make libxml2 decode them again. XML_PARSE_HUGE:
  // without it libxml2 stops reading at 256 levels of nesting and drops the rest of the page
  // silently; HTML_MAX_DEPTH, estimated before any parser runs (html_parsers.cpp), bounds both
  // parsers alike instead.
  constexpr int options = HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                          HTML_PARSE_NONET | HTML_PARSE_COMPACT | HTML_PARSE_IGNORE_ENC |
                          XML_PARSE_HUGE;
  htmlDocPtr parsed = htmlReadMemory(utf8.data(), int(utf8.size()), nullptr, "UTF-8", options);
  if (!parsed) return;  // nothing libxml2 could read: an empty document, as parsel's
  std::shared_ptr<xmlDoc> document(parsed, &xmlFreeDoc);
  builder.keep(document);

  // Document order, with an explicit stack: a hostile page can nest as deep as it likes.
  std::vector<std::pair<const xmlNode*, html_node*>> stack;  // (node, its parent)
  auto push_children = [&stack](const xmlNode* node, html_node* parent) {
    const xmlNode* last = node->last;
    for (const xmlNode* child = last; child; child = child->prev) stack.emplace_back(child, parent);
  };
  push_children(reinterpret_cast<const xmlNode*>(parsed), builder.root());
  while (!stack.empty()) {
    auto [node, parent] = stack.back();
    stack.pop_back();
    switch (node->type) {
      case XML_ELEMENT_NODE: {
        auto* element = builder.add_element(parent, libxml2_text(node->name));
        for (const xmlAttr* attribute = node->properties; attribute; attribute = attribute->next) {
          builder.add_attribute(libxml2_text(attribute->name), attribute_value(attribute, builder));
        }
        push_children(node, element);
        break;
      }
      case XML_TEXT_NODE:
      case XML_CDATA_SECTION_NODE:  // the body of <script> and <style>: text, as Gumbo's
        builder.add_leaf(parent, html_node::kind::text, libxml2_text(node->content));
        break;
      case XML_COMMENT_NODE:
        builder.add_leaf(parent, html_node::kind::comment, libxml2_text(node->content));
        break;
      default:  // the doctype, processing instructions
        break;
    }
  }
}

}  // namespace crawler::detail
