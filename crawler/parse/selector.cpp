#include "crawler/parse/selector.h"

#include <algorithm>

#include "crawler/parse/detail/css.h"
#include "crawler/parse/detail/xpath.h"
#include "crawler/parse/regex.h"
#include "request/url_bytes.h"

namespace crawler {
namespace {

using detail::complex_selector;

// Calls visit(node) for `root` and every node under it, in document order. An explicit walk,
// not recursion: a hostile page can nest elements as deep as it likes.
template <typename Visit>
void for_each_node(const html_node* root, Visit&& visit) {
  const html_node* node = root;
  while (node) {
    visit(node);
    if (node->first_child) {
      node = node->first_child;
      continue;
    }
    while (node != root && !node->next_sibling) node = node->parent;
    node = node == root ? nullptr : node->next_sibling;
  }
}

// Selects what `group` picks under `root` (descendant-or-self), in document order, as parsel's
// XPath would: an element or an attribute once, by the first alternative that takes it; a text
// node once, when its parent's own text is selected ("X::text") or when it lies anywhere under an
// element a descendant-or-self alternative matched ("X *::text", "X ::text": parsel's idiom for
// all the text of a block). The walk keeps an explicit stack, not recursion: a hostile page can
// nest elements as deep as it likes (see for_each_node).
class selection_walk {
 public:
  selection_walk(const std::vector<complex_selector>& group,
                 const std::shared_ptr<const html_document>& document, selector_list& out)
      : group_(group), document_(document), out_(out), open_anchors_(group.size(), 0) {}

  void run(const html_node* root) {
    const html_node* node = root;
    while (node) {
      if (node->is_text()) {
        if (text_anchors_ > 0 || (!own_text_.empty() && own_text_.back())) {
          out_.emplace_back(std::string(node->text));
        }
      } else if (node->is_element()) {
        enter(node);
      }
      // Down to the first child, else across to the next sibling, leaving each element on the
      // way up; never above `root`.
      if (node->first_child && node->type != html_node::kind::text) {
        node = node->first_child;
        continue;
      }
      if (node->is_element()) leave();
      while (node != root && !node->next_sibling) {
        node = node->parent;
        if (node->is_element()) leave();
      }
      node = node == root ? nullptr : node->next_sibling;
    }
  }

 private:
  void enter(const html_node* element) {
    anchored_.emplace_back();
    for (std::size_t i = 0; i < group_.size(); ++i) {
      if (!group_[i].descendant_or_self || !detail::matches(group_[i], element)) continue;
      ++open_anchors_[i];
      if (group_[i].pseudo == detail::pseudo_element::text) ++text_anchors_;
      anchored_.back().push_back(i);
    }
    bool own_text = false;
    for (std::size_t i = 0; i < group_.size(); ++i) {
      const auto& selector = group_[i];
      bool taken =
          selector.descendant_or_self ? open_anchors_[i] > 0 : detail::matches(selector, element);
      if (!taken) continue;
      switch (selector.pseudo) {
        case detail::pseudo_element::none:
          out_.emplace_back(document_, element);
          break;
        case detail::pseudo_element::text:
          own_text = !selector.descendant_or_self;  // else the anchor count emits its text
          break;
        case detail::pseudo_element::attr:
          if (const auto* value = element->attribute(selector.attr_name)) {
            out_.emplace_back(std::string(*value));
          }
          break;
      }
      break;
    }
    own_text_.push_back(own_text);
  }

  void leave() {
    for (auto i : anchored_.back()) {
      --open_anchors_[i];
      if (group_[i].pseudo == detail::pseudo_element::text) --text_anchors_;
    }
    anchored_.pop_back();
    own_text_.pop_back();
  }

  const std::vector<complex_selector>& group_;
  const std::shared_ptr<const html_document>& document_;
  selector_list& out_;
  std::vector<int> open_anchors_;                   // per alternative: open elements it matched
  int text_anchors_ = 0;                            // of those, with ::text
  std::vector<std::vector<std::size_t>> anchored_;  // per open element: alternatives it anchors
  std::vector<char> own_text_;                      // per open element: its own text is selected
};

// Descendant-or-self, in document order.
void walk(const std::vector<complex_selector>& group, const html_node* root,
          const std::shared_ptr<const html_document>& document, selector_list& out) {
  selection_walk(group, document, out).run(root);
}

bool is_void(std::string_view name) {
  static constexpr std::string_view names[] = {"area",  "base",   "br",    "col",  "embed",
                                               "hr",    "img",    "input", "link", "meta",
                                               "param", "source", "track", "wbr"};
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// Text or an attribute value with &, < and > as entities, as libxml2 writes both for lxml.
void escape(std::string_view text, std::string& out) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out += c;
    }
  }
}

// An attribute as libxml2's HTML serializer writes it, which is what Scrapy's .get() shows:
// - the value of href, src and action (and of name on <a>) is a URI: leading blanks dropped,
//   then every byte but letters, digits and -_.!~*'()@/:=?;#%&,+ percent-encoded, after &, <
//   and > became entities ("/café x" is "/caf%C3%A9%20x");
// - the value goes in single quotes when it holds a '"' and no "'", the '"' as written; else in
//   double quotes, a '"' as &quot;.
void write_attribute(const html_node& element, const html_attribute& attribute, std::string& out) {
  std::string value;
  auto name = attribute.name;
  bool uri = name == "href" || name == "src" || name == "action" ||
             (name == "name" && element.name == "a");
  if (uri) {
    std::string_view raw = attribute.value;
    while (!raw.empty() && (raw[0] == ' ' || raw[0] == '\t' || raw[0] == '\n' || raw[0] == '\r')) {
      raw.remove_prefix(1);
    }
    std::string entities;
    escape(raw, entities);
    static constexpr std::string_view kept = "-_.!~*'()@/:=?;#%&,+<>";
    for (char c : entities) {
      auto byte = static_cast<unsigned char>(c);
      bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (alnum || (byte < 0x80 && kept.find(c) != std::string_view::npos)) {
        value += c;
      } else {
        dedup::append_escaped(value, byte);
      }
    }
  } else {
    escape(attribute.value, value);
  }
  out += ' ';
  out += name;
  bool single = value.find('"') != std::string::npos && value.find('\'') == std::string::npos;
  out += single ? "='" : "=\"";
  for (char c : value) {
    if (c == '"' && !single) {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  out += single ? '\'' : '"';
}

// One node's markup, without its children's: the text of a leaf, or an element's start tag.
// Returns true when the node is an element whose children and end tag follow.
bool open_node(const html_node* node, std::string& out, bool raw_text) {
  switch (node->type) {
    case html_node::kind::text:
      if (raw_text) {
        out += node->text;
      } else {
        escape(node->text, out);
      }
      return false;
    case html_node::kind::cdata:
      out += "<![CDATA[";
      out += node->text;
      out += "]]>";
      return false;
    case html_node::kind::comment:
      out += "<!--";
      out += node->text;
      out += "-->";
      return false;
    case html_node::kind::document:
      return true;
    case html_node::kind::element:
      break;
  }
  out += '<';
  out += node->name;
  for (const auto& attribute : node->attributes) write_attribute(*node, attribute, out);
  out += '>';
  return !is_void(node->name);
}

// The markup of `root` and everything under it, with an explicit stack (see for_each_node).
void serialize(const html_node* root, std::string& out) {
  struct frame {
    const html_node* node;
    const html_node* next_child;
    bool raw_text;  // the children of <script> and <style> are not escaped
  };
  std::vector<frame> stack;
  if (open_node(root, out, false)) stack.push_back({root, root->first_child, false});
  while (!stack.empty()) {
    auto& top = stack.back();
    if (const auto* child = top.next_child) {
      top.next_child = child->next_sibling;
      bool raw = top.raw_text;
      if (open_node(child, out, raw)) {
        stack.push_back(
            {child, child->first_child, child->name == "script" || child->name == "style"});
      }
      continue;
    }
    if (top.node->type != html_node::kind::document) {
      out += "</";
      out += top.node->name;
      out += '>';
    }
    stack.pop_back();
  }
}

void collect_text(const html_node* root, std::string& out) {
  for_each_node(root, [&](const html_node* node) {
    if (node->is_text()) out += node->text;
  });
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

std::shared_ptr<const re2::RE2> compile(std::string_view pattern) {
  try {
    return compile_regex(pattern);
  } catch (const std::invalid_argument& error) {
    throw selector_error(error.what());
  }
}

selector_list evaluate_xpath(const std::shared_ptr<const html_document>& document,
                             const html_node* context, std::string_view query) {
  selector_list out;
  for (auto& result : detail::evaluate_xpath(*document, context, query)) {
    if (result.node) {
      out.emplace_back(document, result.node);
    } else {
      out.emplace_back(std::move(result.text));
    }
  }
  return out;
}

}  // namespace

selector_list select(const std::shared_ptr<const html_document>& document, std::string_view query) {
  auto group = detail::compiled_selector_group(query, detail::kind_of(*document));
  selector_list out;
  walk(*group, document->root(), document, out);
  return out;
}

void validate_selector(std::string_view query) {
  detail::parse_selector_group(query);
}

selector_list select_xpath(const std::shared_ptr<const html_document>& document,
                           std::string_view query) {
  return evaluate_xpath(document, document->root(), query);
}

void validate_xpath(std::string_view query) {
  detail::validate_xpath(query);
}

bool looks_like_xpath(std::string_view query) {
  if (query.starts_with('/') || query.starts_with("./") || query.starts_with("../") ||
      query.starts_with('(')) {
    return true;
  }
  auto name =
      query.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-");
  return name != std::string_view::npos && name > 0 && query[name] == '(';
}

selector_list selector::xpath(std::string_view query) const {
  if (!node_) return {};
  return evaluate_xpath(document_, node_, query);
}

selector_list selector_list::xpath(std::string_view query) const {
  detail::validate_xpath(query);  // a bad expression fails on an empty list too, as parsel
  selector_list out;
  for (const auto& item : *this) {
    if (!item.node()) continue;
    auto found = item.xpath(query);
    out.insert(out.end(), std::make_move_iterator(found.begin()),
               std::make_move_iterator(found.end()));
  }
  return out;
}

selector_list selector::css(std::string_view query) const {
  if (!node_) {
    detail::compiled_selector_group(query);  // a bad selector fails on a string too
    return {};
  }
  auto group = detail::compiled_selector_group(query, detail::kind_of(*document_));
  selector_list out;
  walk(*group, node_, document_, out);
  return out;
}

std::string selector::get() const {
  if (!node_) return text_;
  if (document_->is_xml()) return detail::xml_markup(*document_, node_);
  std::string html;
  serialize(node_, html);
  return html;
}

std::map<std::string, std::string> selector::attrib() const {
  std::map<std::string, std::string> attributes;
  if (!node_) return attributes;
  for (const auto& attribute : node_->attributes)
    attributes.emplace(attribute.name, attribute.value);
  return attributes;
}

std::string selector::text_content() const {
  if (!node_) return normalize_space(text_);
  // A comment's string-value in XPath is what it says, as lxml's.
  if (node_->type == html_node::kind::comment) return normalize_space(node_->text);
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
  for (const auto& item : *this) append_regex_matches(*pattern, item.get(), matches);
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
  auto html_group = detail::compiled_selector_group(query);
  std::shared_ptr<const std::vector<detail::complex_selector>> xml_group;  // compiled when needed
  selector_list out;
  for (const auto& item : *this) {
    if (!item.node()) continue;
    const auto* group = html_group.get();
    if (item.document()->is_xml()) {
      if (!xml_group) {
        xml_group = detail::compiled_selector_group(query, detail::document_kind::xml);
      }
      group = xml_group.get();
    }
    walk(*group, item.node(), item.document(), out);
  }
  return out;
}

}  // namespace crawler
