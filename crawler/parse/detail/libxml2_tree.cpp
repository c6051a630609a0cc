// HTML_PARSER=libxml2: libxml2's HTML parser, the one under lxml and so under Scrapy's selectors
// (parsel). Its tree differs from a browser's on misnested markup (it does not reparent), which
// is the point: a spider ported from Scrapy sees what it saw there.
#include <libxml/HTMLparser.h>
#include <libxml/HTMLtree.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "crawler/parse/detail/arena.h"
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

// As lxml's HTMLParser: recover from every error, never touch the network; the bytes are UTF-8
// already, so a <meta charset> must not make libxml2 decode them again. XML_PARSE_HUGE: without
// it libxml2 stops reading at 256 levels of nesting and drops the rest of the page silently;
// HTML_MAX_DEPTH, estimated before any parser runs (html_parsers.cpp), bounds both parsers alike
// instead.
constexpr int html_options = HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                             HTML_PARSE_NONET | HTML_PARSE_COMPACT | HTML_PARSE_IGNORE_ENC |
                             XML_PARSE_HUGE;

// libxml2's HTML parser reports what it reads as SAX events, and its default handler (SAX2.c)
// builds an xmlDoc from them, which the walk above would then copy into our tree and which would
// be freed with the document: a third of a crawl's CPU on pages dense with markup. This handler
// builds our tree from the same events, as SAX2.c builds its DOM, so the tree is the one the walk
// of that DOM gives (tests/libxml2_tree_test.cpp pins it, and fuzz/html_tree_fuzzer.cpp):
// - an element opened while none is open goes to the top level when nothing is there yet, else
//   into the first top-level node if that is an element (the DOCTYPE, when there is one, is that
//   first node, and is not an element);
// - text is dropped where no element is open, and consecutive text joins into one node (SAX2.c
//   keeps <script> and <style> bodies, CDATA blocks, apart from other text, but they are the only
//   text of their element, and the walk reads both as text);
// - an element's name loses its "prefix:" (xmlSplitQName), an attribute's keeps it, and an
//   attribute without a value has its name as value when it is a boolean one (checked), else "";
// - comments are nodes wherever they are; a processing instruction is no node, but it separates
//   the texts on either side.
// The parser itself never reads the DOM it would build except to tell blank text from other
// text where the answer changes nothing (areBlanks, under ctxt->keepBlanks).
class sax_builder {
 public:
  sax_builder(tree_builder& builder, std::size_t size)
      : builder_(builder), arena_(std::make_shared<arena>(size)) {}

  /// The handler whose events reach the sax_builder in the parser context's _private.
  static const xmlSAXHandlerV1& handler() {
    static const xmlSAXHandlerV1 events = [] {
      xmlSAXHandlerV1 events{};
      events.internalSubset = &internal_subset;
      events.startElement = &start_element;
      events.endElement = &end_element;
      events.characters = &characters;  // script and style bodies too: with no cdataBlock
                                        // handler, htmlParseScript hands them here
      events.comment = &comment;
      events.processingInstruction = &processing_instruction;
      events.initialized = 1;  // SAX1: the HTML parser's startElement, not startElementNs
      return events;
    }();
    return events;
  }

  /// Adds the text still waiting, and hands the strings to the document.
  void finish() {
    add_pending_text();
    builder_.keep(arena_);
  }

 private:
  static sax_builder& of(void* context) {
    return *static_cast<sax_builder*>(static_cast<xmlParserCtxtPtr>(context)->_private);
  }

  static void internal_subset(void* context, const xmlChar*, const xmlChar*, const xmlChar*) {
    of(context).top_level_ = top_level::other;  // the DOCTYPE goes first, before any element
  }

  static void start_element(void* context, const xmlChar* name, const xmlChar** attributes) {
    auto& self = of(context);
    self.add_pending_text();
    html_node* parent = self.open_.empty() ? nullptr : self.open_.back();
    if (!parent) {
      if (self.top_level_ == top_level::element) parent = self.first_top_level_;
      if (!parent) parent = self.builder_.root();
    }
    auto* element = self.builder_.add_element(parent, self.element_name(context, name));
    if (self.top_level_ == top_level::none) {
      self.top_level_ = top_level::element;
      self.first_top_level_ = element;
    }
    for (auto** at = attributes; at && at[0]; at += 2) {
      const xmlChar* value = at[1];
      if (!value && htmlIsBooleanAttr(at[0])) value = at[0];
      self.builder_.add_attribute(self.arena_->copy(libxml2_text(at[0])),
                                  value ? self.arena_->copy(libxml2_text(value)) : "");
    }
    self.open_.push_back(element);
  }

  static void end_element(void* context, const xmlChar*) {
    auto& self = of(context);
    self.add_pending_text();
    if (!self.open_.empty()) self.open_.pop_back();
  }

  static void characters(void* context, const xmlChar* text, int length) {
    auto& self = of(context);
    if (self.open_.empty() || length <= 0) return;  // no element open: SAX2.c drops it
    self.pending_.append(reinterpret_cast<const char*>(text), std::size_t(length));
  }

  static void comment(void* context, const xmlChar* text) {
    auto& self = of(context);
    self.add_pending_text();
    auto* parent = self.open_.empty() ? self.builder_.root() : self.open_.back();
    self.builder_.add_leaf(parent, html_node::kind::comment,
                           self.arena_->copy(libxml2_text(text)));
    if (self.top_level_ == top_level::none) self.top_level_ = top_level::other;
  }

  static void processing_instruction(void* context, const xmlChar*, const xmlChar*) {
    auto& self = of(context);
    self.add_pending_text();
    if (self.open_.empty() && self.top_level_ == top_level::none) {
      self.top_level_ = top_level::other;
    }
  }

  // SAX2.c's split of a qualified name: "fb:like" is "like" (HTML keeps no namespaces).
  std::string_view element_name(void* context, const xmlChar* name) {
    if (!std::strchr(reinterpret_cast<const char*>(name), ':')) {
      return arena_->copy(libxml2_text(name));
    }
    xmlChar* prefix = nullptr;
    xmlChar* local = xmlSplitQName(static_cast<xmlParserCtxtPtr>(context), name, &prefix);
    auto copied = arena_->copy(libxml2_text(local ? local : name));
    xmlFree(local);
    xmlFree(prefix);
    return copied;
  }

  void add_pending_text() {
    if (pending_.empty()) return;
    builder_.add_leaf(open_.back(), html_node::kind::text, arena_->copy(pending_));
    pending_.clear();
  }

  enum class top_level { none, element, other };

  tree_builder& builder_;
  std::shared_ptr<arena> arena_;
  std::vector<html_node*> open_;  // the elements open, innermost last
  top_level top_level_ = top_level::none;
  html_node* first_top_level_ = nullptr;
  std::string pending_;  // text not yet added: the next characters may join it
};

}  // namespace

void build_with_libxml2(const std::string& utf8, tree_builder& builder) {
  initialise_once();
  // Set up as htmlReadMemory sets its parser up, with this file's handler in place of the DOM's.
  std::unique_ptr<xmlParserCtxt, void (*)(xmlParserCtxtPtr)> parser(
      xmlCreateMemoryParserCtxt(utf8.data(), int(utf8.size())), &xmlFreeParserCtxt);
  if (!parser) return;  // nothing libxml2 could read: an empty document, as parsel's
  sax_builder events(builder, utf8.size());
  std::memcpy(parser->sax, &sax_builder::handler(), sizeof(xmlSAXHandlerV1));
  parser->_private = &events;
  htmlCtxtUseOptions(parser.get(), html_options);
  parser->html = 1;
  if (auto* utf8_handler = xmlFindCharEncodingHandler("UTF-8")) {
    xmlSwitchToEncoding(parser.get(), utf8_handler);
  }
  htmlParseDocument(parser.get());
  events.finish();
}

void build_with_libxml2_dom(const std::string& utf8, tree_builder& builder) {
  initialise_once();
  adopt(htmlReadMemory(utf8.data(), int(utf8.size()), nullptr, "UTF-8", html_options), builder,
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
