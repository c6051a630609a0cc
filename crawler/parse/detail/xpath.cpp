#include "crawler/parse/detail/xpath.h"

#include <libxml/HTMLtree.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "crawler/parse/detail/libxml2_text.h"
#include "crawler/parse/detail/xpath_paths.h"
#include "crawler/parse/selector_error.h"

namespace crawler::detail {

class xpath_tree {
 public:
  // `xml`: an XML document's own libxml2 tree, whose nodes point at ours already; null for an
  // HTML page, whose tree is copied.
  xpath_tree(const html_document& document, xmlDocPtr xml) : owned_(!xml) {
    static std::once_flag initialised;
    std::call_once(initialised, [] { xmlInitParser(); });
    if (xml) {
      doc_ = xml;
      nodes_.emplace(document.root(), reinterpret_cast<xmlNodePtr>(doc_));
      index_xml();
    } else {
      doc_ = htmlNewDocNoDtD(nullptr, nullptr);
      if (!doc_) throw std::bad_alloc();
      nodes_.emplace(document.root(), reinterpret_cast<xmlNodePtr>(doc_));
      build(document.root());
    }
    // No xmlXPathOrderDocElems, as lxml calls none: with elements numbered, libxml2 sorts a text
    // node that follows an element before that element's descendants ("//node()" gave
    // <head>, "\n", <title>, where parsel gives <head>, <title>, ..., "\n").
  }
  ~xpath_tree() {
    if (owned_) xmlFreeDoc(doc_);
  }
  xpath_tree(const xpath_tree&) = delete;
  xpath_tree& operator=(const xpath_tree&) = delete;

  xmlDocPtr doc() const { return doc_; }
  /// The prefixes an XML document declares, each with its first URI.
  const std::vector<std::pair<std::string, std::string>>& declared_namespaces() const {
    return declared_;
  }
  xmlNodePtr node_of(const html_node* node) const {
    auto found = nodes_.find(node);
    return found == nodes_.end() ? nullptr : found->second;
  }

 private:
  // Children are linked by hand: xmlAddChild merges adjacent text nodes, and each of ours must
  // stay one node that points back at its own.
  static void append(xmlNodePtr parent, xmlNodePtr child) {
    child->parent = parent;
    child->doc = parent->doc;
    if (!parent->children) {
      parent->children = child;
    } else {
      parent->last->next = child;
      child->prev = parent->last;
    }
    parent->last = child;
  }

  xmlNodePtr copy(const html_node* node) {
    std::string text(node->type == html_node::kind::element ? node->name : node->text);
    const auto* bytes = reinterpret_cast<const xmlChar*>(text.c_str());
    xmlNodePtr made = nullptr;
    switch (node->type) {
      case html_node::kind::element:
        made = xmlNewDocNode(doc_, nullptr, bytes, nullptr);
        for (const auto& attribute : node->attributes) {
          std::string name(attribute.name), value(attribute.value);
          // xmlNewProp takes the value as text (no entity references read in it).
          xmlNewProp(made, reinterpret_cast<const xmlChar*>(name.c_str()),
                     reinterpret_cast<const xmlChar*>(value.c_str()));
        }
        break;
      case html_node::kind::text:
        made = xmlNewDocTextLen(doc_, bytes, int(text.size()));
        break;
      case html_node::kind::cdata:
        made = xmlNewCDataBlock(doc_, bytes, int(text.size()));
        break;
      case html_node::kind::comment:
        made = xmlNewDocComment(doc_, bytes);
        break;
      case html_node::kind::document:
        break;
    }
    if (!made) throw std::bad_alloc();
    made->_private = const_cast<html_node*>(node);
    nodes_.emplace(node, made);
    return made;
  }

  // Depth first without recursion: pages nest thousands deep.
  void build(const html_node* root) {
    const html_node* node = root->first_child;
    xmlNodePtr parent = reinterpret_cast<xmlNodePtr>(doc_);
    while (node) {
      xmlNodePtr made = copy(node);
      append(parent, made);
      if (node->is_element() && node->first_child) {
        parent = made;
        node = node->first_child;
        continue;
      }
      while (node && !node->next_sibling) {
        node = node->parent;
        parent = parent->parent;
        if (node == root) node = nullptr;
      }
      if (node) node = node->next_sibling;
    }
  }

  // Our node of each libxml2 node the parse pointed back from, and the prefixes declared.
  void index_xml() {
    std::vector<xmlNodePtr> stack{xmlDocGetRootElement(doc_)};
    for (xmlNodePtr child = doc_->children; child; child = child->next) {
      if (child->type == XML_COMMENT_NODE && child->_private) {
        nodes_.emplace(static_cast<const html_node*>(child->_private), child);
      }
    }
    while (!stack.empty()) {
      xmlNodePtr node = stack.back();
      stack.pop_back();
      if (!node) continue;
      if (node->_private) nodes_.emplace(static_cast<const html_node*>(node->_private), node);
      if (node->type != XML_ELEMENT_NODE) continue;
      for (xmlNsPtr ns = node->nsDef; ns; ns = ns->next) {
        if (!ns->prefix || !ns->href) continue;
        std::string prefix(libxml2_text(ns->prefix));
        if (std::none_of(declared_.begin(), declared_.end(),
                         [&](const auto& known) { return known.first == prefix; })) {
          declared_.emplace_back(std::move(prefix), std::string(libxml2_text(ns->href)));
        }
      }
      for (xmlNodePtr child = node->last; child; child = child->prev) stack.push_back(child);
    }
  }

  bool owned_;
  xmlDocPtr doc_ = nullptr;
  std::unordered_map<const html_node*, xmlNodePtr> nodes_;
  std::vector<std::pair<std::string, std::string>> declared_;
};

const xpath_tree& xpath_tree_of(const html_document& document) {
  std::call_once(document.xpath_built_, [&] {
    document.xpath_tree_ = std::make_shared<const xpath_tree>(
        document, static_cast<xmlDocPtr>(document.xml_document_));
  });
  return *static_cast<const xpath_tree*>(document.xpath_tree_.get());
}

namespace {

// A number as Python's str(float) writes it, which parsel returns: "2.0", "0.5", "1e+20", "nan".
std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// libxml2's own words for what is wrong, kept for the error (its default handler prints to
// stderr, from whichever thread).
void remember_error(void* where, xmlErrorPtr error) {
  auto& message = *static_cast<std::string*>(where);
  if (message.empty() && error && error->message) {
    message = error->message;
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
  }
}

[[noreturn]] void invalid(std::string_view query, const std::string& message) {
  throw selector_error("invalid XPath expression \"" + std::string(query) +
                       "\": " + (message.empty() ? std::string("cannot be evaluated") : message));
}

// parsel's has-class("a", ...): whether the context element's class attribute holds every one of
// the names, as whitespace-separated words.
void has_class(xmlXPathParserContextPtr parser, int arguments) {
  if (arguments < 1) {
    xmlXPathErr(parser, XPATH_INVALID_ARITY);
    return;
  }
  std::vector<std::string> wanted;
  for (int i = 0; i < arguments; ++i) {
    if (!parser->value || parser->value->type != XPATH_STRING) {
      xmlXPathErr(parser, XPATH_INVALID_TYPE);
      return;
    }
    xmlChar* name = xmlXPathPopString(parser);
    wanted.emplace_back(libxml2_text(name));
    xmlFree(name);
  }
  xmlNodePtr node = parser->context->node;
  std::string classes;
  if (node && node->type == XML_ELEMENT_NODE) {
    xmlChar* value = xmlGetProp(node, reinterpret_cast<const xmlChar*>("class"));
    classes = " " + std::string(libxml2_text(value)) + " ";
    xmlFree(value);
  }
  for (auto& c : classes) {
    if (c == '\t' || c == '\n' || c == '\r' || c == '\f') c = ' ';
  }
  bool all = node && node->type == XML_ELEMENT_NODE;
  for (const auto& name : wanted) {
    all = all && classes.find(" " + name + " ") != std::string::npos;
  }
  valuePush(parser, xmlXPathNewBoolean(all));
}

struct context_deleter {
  void operator()(xmlXPathContextPtr context) const { xmlXPathFreeContext(context); }
};
struct object_deleter {
  void operator()(xmlXPathObjectPtr object) const { xmlXPathFreeObject(object); }
};

}  // namespace

std::vector<xpath_result> evaluate_xpath(const html_document& document, const html_node* context,
                                         std::string_view query) {
  if (auto answered = evaluate_xpath_path(document, context, query)) return std::move(*answered);
  return evaluate_xpath_with_libxml2(document, context, query);
}

std::vector<xpath_result> evaluate_xpath_with_libxml2(const html_document& document,
                                                      const html_node* context,
                                                      std::string_view query) {
  const auto& tree = xpath_tree_of(document);
  std::unique_ptr<xmlXPathContext, context_deleter> evaluation(xmlXPathNewContext(tree.doc()));
  if (!evaluation) throw std::bad_alloc();
  std::string message;
  evaluation->error = remember_error;
  evaluation->userData = &message;
  evaluation->node = tree.node_of(context);
  xmlXPathRegisterFunc(evaluation.get(), reinterpret_cast<const xmlChar*>("has-class"), has_class);
  // parsel knows only the prefixes registered on the selector; the document's own are known
  // here too, so "//g:price" works on a feed that declares g without a register_namespace.
  auto register_prefix = [&](const std::string& prefix, const std::string& uri) {
    xmlXPathRegisterNs(evaluation.get(), reinterpret_cast<const xmlChar*>(prefix.c_str()),
                       reinterpret_cast<const xmlChar*>(uri.c_str()));
  };
  for (const auto& [prefix, uri] : tree.declared_namespaces()) register_prefix(prefix, uri);
  for (const auto& [prefix, uri] : document.registered_namespaces()) register_prefix(prefix, uri);
  if (!evaluation->node) return {};
  std::string expression(query);
  std::unique_ptr<xmlXPathObject, object_deleter> result(xmlXPathEvalExpression(
      reinterpret_cast<const xmlChar*>(expression.c_str()), evaluation.get()));
  if (!result) invalid(query, message);
  std::vector<xpath_result> out;
  auto string = [&out](std::string text) { out.push_back({nullptr, std::move(text)}); };
  switch (result->type) {
    case XPATH_NODESET: {
      auto* nodes = result->nodesetval;
      for (int i = 0; nodes && i < nodes->nodeNr; ++i) {
        xmlNodePtr node = nodes->nodeTab[i];
        switch (node->type) {
          case XML_ELEMENT_NODE:
          case XML_COMMENT_NODE:
            out.push_back({static_cast<const html_node*>(node->_private), {}});
            break;
          case XML_TEXT_NODE:
          case XML_CDATA_SECTION_NODE:
            string(std::string(libxml2_text(node->content)));
            break;
          case XML_ATTRIBUTE_NODE: {
            xmlChar* value = xmlNodeGetContent(node);
            string(std::string(libxml2_text(value)));
            xmlFree(value);
            break;
          }
          default:  // the document node, as parsel: nothing to show
            break;
        }
      }
      break;
    }
    case XPATH_BOOLEAN:
      string(result->boolval ? "1" : "0");
      break;
    case XPATH_NUMBER:
      string(python_float(result->floatval));
      break;
    case XPATH_STRING:
      string(std::string(libxml2_text(result->stringval)));
      break;
    default:
      invalid(query, "its result is not a node-set, number, boolean or string");
  }
  return out;
}

std::string xml_markup(const html_document& document, const html_node* node) {
  xmlNodePtr xml = xpath_tree_of(document).node_of(node);
  if (!xml) return {};
  std::unique_ptr<xmlBuffer, void (*)(xmlBufferPtr)> buffer(xmlBufferCreate(), &xmlBufferFree);
  if (!buffer) throw std::bad_alloc();
  // An element is written from a copy of its own: copied out of its tree, it declares the
  // namespaces it uses that its ancestors declared, as lxml's tostring writes a sub-element.
  std::unique_ptr<xmlDoc, void (*)(xmlDocPtr)> scratch(nullptr, &xmlFreeDoc);
  if (xml->type == XML_ELEMENT_NODE) {
    scratch.reset(xmlNewDoc(reinterpret_cast<const xmlChar*>("1.0")));
    xmlNodePtr copy = scratch ? xmlDocCopyNode(xml, scratch.get(), 1) : nullptr;
    if (!copy) throw std::bad_alloc();
    xmlDocSetRootElement(scratch.get(), copy);
    xml = copy;
  }
  if (xmlNodeDump(buffer.get(), xml->doc, xml, 0, 0) < 0) return {};
  return std::string(libxml2_text(xmlBufferContent(buffer.get())));
}

// Compiling alone lets "count(" through (libxml2 finds it out when evaluating): the expression is
// evaluated on an empty page instead, which every well-formed expression survives.
void validate_xpath(std::string_view query) {
  static const auto empty = html_document::parse("");
  evaluate_xpath_with_libxml2(*empty, empty->root(), query);
}

}  // namespace crawler::detail
