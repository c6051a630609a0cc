#include "crawler/parse/selector.h"

#include <gumbo.h>


#include "crawler/parse/detail/css.h"
#include "crawler/parse/regex.h"

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

// Calls visit(node) for `root` and every node under it, in document order. An explicit stack,
// not recursion: a hostile page can nest elements as deep as it likes.
template <typename Visit>
void for_each_node(const GumboNode* root, Visit&& visit) {
  std::vector<const GumboNode*> stack{root};
  while (!stack.empty()) {
    const auto* node = stack.back();
    stack.pop_back();
    visit(node);
    if (const auto* children = children_of(node)) {
      for (unsigned i = children->length; i-- > 0;) {
        stack.push_back(static_cast<const GumboNode*>(children->data[i]));
      }
    }
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

  void run(const GumboNode* root) {
    std::vector<std::pair<const GumboNode*, bool>> stack{{root, false}};  // (node, leaving)
    while (!stack.empty()) {
      auto [node, leaving] = stack.back();
      stack.pop_back();
      if (leaving) {
        leave();
        continue;
      }
      if (is_text(node)) {
        if (text_anchors_ > 0 || (!own_text_.empty() && own_text_.back())) {
          out_.emplace_back(std::string(node->v.text.text));
        }
        continue;
      }
      if (is_element(node)) enter(node);
      if (const auto* children = children_of(node)) {
        if (is_element(node)) stack.emplace_back(node, true);
        for (unsigned i = children->length; i-- > 0;) {
          stack.emplace_back(static_cast<const GumboNode*>(children->data[i]), false);
        }
      } else if (is_element(node)) {
        leave();
      }
    }
  }

 private:
  void enter(const GumboNode* element) {
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
      bool taken = selector.descendant_or_self ? open_anchors_[i] > 0
                                               : detail::matches(selector, element);
      if (!taken) continue;
      switch (selector.pseudo) {
        case detail::pseudo_element::none:
          out_.emplace_back(document_, element);
          break;
        case detail::pseudo_element::text:
          own_text = !selector.descendant_or_self;  // else the anchor count emits its text
          break;
        case detail::pseudo_element::attr:
          if (auto* attribute = gumbo_get_attribute(&element->v.element.attributes,
                                                    selector.attr_name.c_str())) {
            out_.emplace_back(std::string(attribute->value));
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
  std::vector<int> open_anchors_;                  // per alternative: open elements it matched
  int text_anchors_ = 0;                           // of those, with ::text
  std::vector<std::vector<std::size_t>> anchored_;  // per open element: alternatives it anchors
  std::vector<char> own_text_;                     // per open element: its own text is selected
};

// Descendant-or-self, in document order.
void walk(const std::vector<complex_selector>& group, const GumboNode* root,
          const std::shared_ptr<const html_document>& document, selector_list& out) {
  selection_walk(group, document, out).run(root);
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

// One node's markup, without its children's: the text of a leaf, or an element's start tag.
// Returns true when the node is an element whose children and end tag follow.
bool open_node(const GumboNode* node, std::string& out, bool raw_text) {
  switch (node->type) {
    case GUMBO_NODE_TEXT:
    case GUMBO_NODE_WHITESPACE:
      if (raw_text) {
        out += node->v.text.text;
      } else {
        escape(node->v.text.text, false, out);
      }
      return false;
    case GUMBO_NODE_CDATA:
      out += "<![CDATA[";
      out += node->v.text.text;
      out += "]]>";
      return false;
    case GUMBO_NODE_COMMENT:
      out += "<!--";
      out += node->v.text.text;
      out += "-->";
      return false;
    case GUMBO_NODE_DOCUMENT:
      return true;
    default:
      break;
  }
  out += '<';
  out += detail::element_name(node);
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
  return !is_void(node->v.element.tag);
}

// The markup of `root` and everything under it, with an explicit stack (see for_each_node).
void serialize(const GumboNode* root, std::string& out) {
  struct frame {
    const GumboNode* node;
    unsigned next_child;
    bool raw_text;  // the children of <script> and <style> are not escaped
  };
  std::vector<frame> stack;
  if (open_node(root, out, false)) stack.push_back({root, 0, false});
  while (!stack.empty()) {
    auto& top = stack.back();
    const auto* children = children_of(top.node);
    if (top.next_child < children->length) {
      auto* child = static_cast<const GumboNode*>(children->data[top.next_child++]);
      bool raw = top.raw_text;
      if (open_node(child, out, raw)) {
        auto tag = child->v.element.tag;
        stack.push_back({child, 0, tag == GUMBO_TAG_SCRIPT || tag == GUMBO_TAG_STYLE});
      }
      continue;
    }
    if (top.node->type != GUMBO_NODE_DOCUMENT) {
      out += "</";
      out += detail::element_name(top.node);
      out += '>';
    }
    stack.pop_back();
  }
}

void collect_text(const GumboNode* root, std::string& out) {
  for_each_node(root, [&](const GumboNode* node) {
    if (is_text(node)) out += node->v.text.text;
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
  serialize(node_, html);
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
    // As parsel: the whole match without groups, else every group of every match, in order.
    for_each_match(*pattern, text, [&matches](std::span<const std::string_view> groups) {
      if (groups.size() == 1) {
        matches.emplace_back(groups[0]);
      } else {
        for (auto group : groups.subspan(1)) matches.emplace_back(group);
      }
      return true;
    });
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
