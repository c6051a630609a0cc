#include "crawler/selector.h"

#include <gumbo.h>

#include <regex>

#include "crawler/detail/css.h"

namespace crawler {
namespace {

using detail::complex_selector;

bool is_element(const GumboNode* node) {
  return node->type == GUMBO_NODE_ELEMENT || node->type == GUMBO_NODE_TEMPLATE;
}

bool is_text(const GumboNode* node) {
  return node->type == GUMBO_NODE_TEXT || node->type == GUMBO_NODE_WHITESPACE ||
         node->type == GUMBO_NODE_CDATA;
}

const GumboVector* children_of(const GumboNode* node) {
  if (node->type == GUMBO_NODE_DOCUMENT) return &node->v.document.children;
  if (is_element(node)) return &node->v.element.children;
  return nullptr;
}

void emit(const std::vector<complex_selector>& group, const GumboNode* element,
          const std::shared_ptr<const html_document>& document, selector_list& out) {
  for (const auto& selector : group) {
    if (!detail::matches(selector, element)) continue;
    switch (selector.pseudo) {
      case detail::pseudo_element::none:
        out.emplace_back(document, element);
        break;
      case detail::pseudo_element::text: {
        const auto& children = element->v.element.children;
        for (unsigned i = 0; i < children.length; ++i) {
          auto* child = static_cast<const GumboNode*>(children.data[i]);
          if (is_text(child)) out.emplace_back(std::string(child->v.text.text));
        }
        break;
      }
      case detail::pseudo_element::attr:
        if (auto* attribute =
                gumbo_get_attribute(&element->v.element.attributes, selector.attr_name.c_str())) {
          out.emplace_back(std::string(attribute->value));
        }
        break;
    }
    return;  // an element is selected once, by the first alternative that matches
  }
}

// Descendant-or-self, in document order.
void walk(const std::vector<complex_selector>& group, const GumboNode* node,
          const std::shared_ptr<const html_document>& document, selector_list& out) {
  if (is_element(node)) emit(group, node, document, out);
  if (const auto* children = children_of(node)) {
    for (unsigned i = 0; i < children->length; ++i) {
      walk(group, static_cast<const GumboNode*>(children->data[i]), document, out);
    }
  }
}

bool is_void(GumboTag tag) {
  switch (tag) {
    case GUMBO_TAG_AREA:
    case GUMBO_TAG_BASE:
    case GUMBO_TAG_BR:
    case GUMBO_TAG_COL:
    case GUMBO_TAG_EMBED:
    case GUMBO_TAG_HR:
    case GUMBO_TAG_IMG:
    case GUMBO_TAG_INPUT:
    case GUMBO_TAG_LINK:
    case GUMBO_TAG_META:
    case GUMBO_TAG_PARAM:
    case GUMBO_TAG_SOURCE:
    case GUMBO_TAG_TRACK:
    case GUMBO_TAG_WBR:
      return true;
    default:
      return false;
  }
}

void escape(std::string_view text, bool attribute, std::string& out) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += attribute ? "<" : "&lt;";
        break;
      case '>':
        out += attribute ? ">" : "&gt;";
        break;
      case '"':
        out += attribute ? "&quot;" : "\"";
        break;
      default:
        out += c;
    }
  }
}

void serialize(const GumboNode* node, std::string& out, bool raw_text) {
  switch (node->type) {
    case GUMBO_NODE_TEXT:
    case GUMBO_NODE_WHITESPACE:
      if (raw_text) {
        out += node->v.text.text;
      } else {
        escape(node->v.text.text, false, out);
      }
      return;
    case GUMBO_NODE_CDATA:
      out += "<![CDATA[";
      out += node->v.text.text;
      out += "]]>";
      return;
    case GUMBO_NODE_COMMENT:
      out += "<!--";
      out += node->v.text.text;
      out += "-->";
      return;
    case GUMBO_NODE_DOCUMENT:
      for (unsigned i = 0; i < node->v.document.children.length; ++i) {
        serialize(static_cast<const GumboNode*>(node->v.document.children.data[i]), out, false);
      }
      return;
    default:
      break;
  }
  auto name = detail::element_name(node);
  out += '<';
  out += name;
  const auto& attributes = node->v.element.attributes;
  for (unsigned i = 0; i < attributes.length; ++i) {
    auto* attribute = static_cast<const GumboAttribute*>(attributes.data[i]);
    out += ' ';
    out += attribute->name;
    out += "=\"";
    escape(attribute->value, true, out);
    out += '"';
  }
  out += '>';
  auto tag = node->v.element.tag;
  if (is_void(tag)) return;
  bool raw = tag == GUMBO_TAG_SCRIPT || tag == GUMBO_TAG_STYLE;
  const auto& children = node->v.element.children;
  for (unsigned i = 0; i < children.length; ++i) {
    serialize(static_cast<const GumboNode*>(children.data[i]), out, raw);
  }
  out += "</";
  out += name;
  out += '>';
}

void collect_text(const GumboNode* node, std::string& out) {
  if (is_text(node)) {
    out += node->v.text.text;
    return;
  }
  if (const auto* children = children_of(node)) {
    for (unsigned i = 0; i < children->length; ++i) {
      collect_text(static_cast<const GumboNode*>(children->data[i]), out);
    }
  }
}

std::string normalize_space(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      space = false;
      out += c;
    }
  }
  return out;
}

std::regex compile(std::string_view pattern) {
  try {
    return std::regex(pattern.begin(), pattern.end(), std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    throw selector_error("invalid regex \"" + std::string(pattern) + "\": " + error.what());
  }
}

}  // namespace

selector_list select(const std::shared_ptr<const html_document>& document, std::string_view query) {
  auto group = detail::parse_selector_group(query);
  selector_list out;
  walk(group, document->root(), document, out);
  return out;
}

void validate_selector(std::string_view query) {
  detail::parse_selector_group(query);
}

selector_list selector::css(std::string_view query) const {
  auto group = detail::parse_selector_group(query);
  selector_list out;
  if (node_) walk(group, node_, document_, out);
  return out;
}

std::string selector::get() const {
  if (!node_) return text_;
  std::string html;
  serialize(node_, html, false);
  return html;
}

std::map<std::string, std::string> selector::attrib() const {
  std::map<std::string, std::string> attributes;
  if (!node_) return attributes;
  const auto& list = node_->v.element.attributes;
  for (unsigned i = 0; i < list.length; ++i) {
    auto* attribute = static_cast<const GumboAttribute*>(list.data[i]);
    attributes.emplace(attribute->name, attribute->value);
  }
  return attributes;
}

std::string selector::text_content() const {
  if (!node_) return normalize_space(text_);
  std::string text;
  collect_text(node_, text);
  return normalize_space(text);
}

std::optional<std::string> selector_list::get() const {
  if (empty()) return std::nullopt;
  return front().get();
}

std::string selector_list::get(std::string_view fallback) const {
  return empty() ? std::string(fallback) : front().get();
}

std::vector<std::string> selector_list::getall() const {
  std::vector<std::string> values;
  values.reserve(size());
  for (const auto& item : *this) values.push_back(item.get());
  return values;
}

std::vector<std::string> selector_list::re(std::string_view regex) const {
  auto pattern = compile(regex);
  std::vector<std::string> matches;
  for (const auto& item : *this) {
    auto text = item.get();
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
      if (pattern.mark_count() == 0) {
        matches.push_back(it->str());
      } else {
        for (std::size_t group = 1; group <= pattern.mark_count(); ++group) {
          matches.push_back((*it)[group].str());
        }
      }
    }
  }
  return matches;
}

std::optional<std::string> selector_list::re_first(std::string_view regex) const {
  auto matches = re(regex);
  if (matches.empty()) return std::nullopt;
  return matches.front();
}

std::map<std::string, std::string> selector_list::attrib() const {
  for (const auto& item : *this) {
    if (item.is_element()) return item.attrib();
  }
  return {};
}

selector_list selector_list::css(std::string_view query) const {
  auto group = detail::parse_selector_group(query);
  selector_list out;
  for (const auto& item : *this) {
    if (item.node()) walk(group, item.node(), item.document(), out);
  }
  return out;
}

}  // namespace crawler
