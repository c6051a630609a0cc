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

// How a walk names what it adds: as libxml2 leaves it (HTML), or with namespaces (XML).
enum class naming { html, xml };

// lxml's tag for a name in a namespace: "{URI}local".
std::string_view name_of(const xmlChar* name, const xmlNs* ns, naming naming, tree_builder& builder) {
  if (naming == naming::html || !ns || !ns->href) return libxml2_text(name);
  return builder.own("{" + std::string(libxml2_text(ns->href)) + "}" +
                     std::string(libxml2_text(name)));
}

// Document order, with an explicit stack: a hostile page can nest as deep as it likes. With
// naming::xml each libxml2 node added points back at its html_node (_private), for XPath.
void walk(xmlDocPtr parsed, tree_builder& builder, naming naming) {
  std::vector<std::pair<xmlNode*, html_node*>> stack;  // (node, its parent)
  auto push_children = [&stack](xmlNode* node, html_node* parent) {
    for (xmlNode* child = node->last; child; child = child->prev) stack.emplace_back(child, parent);
  };
  push_children(reinterpret_cast<xmlNode*>(parsed), builder.root());
  while (!stack.empty()) {
    auto [node, parent] = stack.back();
    stack.pop_back();
    html_node* added = nullptr;
    switch (node->type) {
      case XML_ELEMENT_NODE: {
        added = builder.add_element(parent, name_of(node->name, node->ns, naming, builder));
        for (const xmlAttr* attribute = node->properties; attribute; attribute = attribute->next) {
          builder.add_attribute(name_of(attribute->name, attribute->ns, naming, builder),
                                attribute_value(attribute, builder));
        }
        push_children(node, added);
        break;
      }
      case XML_TEXT_NODE:
      case XML_CDATA_SECTION_NODE:  // the body of <script> and <style>, or XML's CDATA: text
        added = builder.add_leaf(parent, html_node::kind::text, libxml2_text(node->content));
        break;
      case XML_COMMENT_NODE:
        added = builder.add_leaf(parent, html_node::kind::comment, libxml2_text(node->content));
        break;
      default:  // the doctype, processing instructions, entity references
        break;
    }
    if (added && naming == naming::xml) node->_private = added;
  }
}

// libxml2 must be initialised once before threads parse with it (the engine's parser pool).
void initialise_once() {
  static std::once_flag initialised;
  std::call_once(initialised, [] { xmlInitParser(); });
}

// The document libxml2 parsed, kept with ours and walked into it; none (nothing libxml2 could
// read) leaves an empty document, as parsel's.
void adopt(xmlDocPtr parsed, tree_builder& builder, naming naming) {
  if (!parsed) return;
  builder.keep(std::shared_ptr<xmlDoc>(parsed, &xmlFreeDoc));
  if (naming == naming::xml) builder.set_xml_document(parsed);
  walk(parsed, builder, naming);
}

}  // namespace

void build_with_libxml2(const std::string& utf8, tree_builder& builder) {
  initialise_once();
  // As lxml's HTMLParser: recover from every error, never touch the network; the bytes are
  // UTF-8 already, so a <meta charset> must not make libxml2 decode them again. XML_PARSE_HUGE:
  // without it libxml2 stops reading at 256 levels of nesting and drops the rest of the page
  // silently; HTML_MAX_DEPTH, estimated before any parser runs (html_parsers.cpp), bounds both
  // parsers alike instead.
  constexpr int options = HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                          HTML_PARSE_NONET | HTML_PARSE_COMPACT | HTML_PARSE_IGNORE_ENC |
                          XML_PARSE_HUGE;
  adopt(htmlReadMemory(utf8.data(), int(utf8.size()), nullptr, "UTF-8", options), builder,
        naming::html);
}

void build_xml_with_libxml2(const std::string& utf8, tree_builder& builder) {
  initialise_once();
  // As parsel's XML parser (lxml's XMLParser with recover=True, resolve_entities=False): no
  // entity is expanded (no "billion laughs"), no DTD or anything else is loaded, nothing from the
  // network. The bytes are UTF-8 already: the declaration's encoding must not decode them again.
  constexpr int options = XML_PARSE_RECOVER | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                          XML_PARSE_NONET | XML_PARSE_COMPACT | XML_PARSE_IGNORE_ENC |
                          XML_PARSE_HUGE;
  adopt(xmlReadMemory(utf8.data(), int(utf8.size()), nullptr, "UTF-8", options), builder,
        naming::xml);
}

}  // namespace crawler::detail
