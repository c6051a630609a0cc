#include "crawler/parse/detail/xpath_paths.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace crawler::detail {
namespace {

// ---- The path, as read ----

enum class node_test : std::uint8_t { name, element, text, node, comment };

struct predicate {
  enum class kind : std::uint8_t {
    position,     // [2]
    has,          // [@id]
    has_not,      // [not(@id)]
    equals,       // [@id='x']
    differs,      // [@id!='x']
    contains,     // [contains(@id, 'x')]
    starts_with,  // [starts-with(@id, 'x')]
    text_equals,  // [text()='x']
  };
  kind what = kind::position;
  long position = 0;
  std::string_view attribute;
  std::string_view literal;
};

struct step {
  bool deep = false;       // after "//": the children of every descendant-or-self
  bool self = false;       // "."
  bool attribute = false;  // "@name" or "@*", the last step
  node_test test = node_test::node;
  std::string_view name;  // for node_test::name, or an attribute's name ("" for "@*")
  std::vector<predicate> predicates;
};

struct location_path {
  bool absolute = false;
  std::vector<step> steps;
};

// A reader that gives up (returns false) at the first thing outside the subset, for libxml2.
class reader {
 public:
  explicit reader(std::string_view query) : query_(query) {}

  bool read(location_path& path) {
    skip_space();
    bool deep = false;
    if (take("//")) {
      path.absolute = deep = true;
    } else if (take("/")) {
      path.absolute = true;
      skip_space();
      if (at_end()) return true;  // "/": the document node
    }
    for (;;) {
      skip_space();
      step next;
      next.deep = deep;
      if (!read_step(next) || (next.self && next.deep)) return false;  // "//." is libxml2's
      path.steps.push_back(std::move(next));
      skip_space();
      if (at_end()) break;
      if (path.steps.back().attribute) return false;  // an attribute is the last step
      if (take("//")) {
        deep = true;
      } else if (take("/")) {
        deep = false;
      } else {
        return false;
      }
    }
    return true;
  }

 private:
  bool read_step(step& out) {
    if (peek() == '.') {
      if (peek(1) == '.') return false;  // the parent axis
      ++at_;
      out.self = true;
      return true;  // "." takes no predicate: read() wants a separator or the end next
    }
    if (take("@")) {
      out.attribute = true;
      if (take("*")) return true;
      return read_name(out.name) && !next_is_call();
    }
    if (take("*")) {
      out.test = node_test::element;
    } else {
      std::string_view name;
      if (!read_name(name)) return false;
      if (next_is_call()) {
        if (name == "text") {
          out.test = node_test::text;
        } else if (name == "node") {
          out.test = node_test::node;
        } else if (name == "comment") {
          out.test = node_test::comment;
        } else {
          return false;
        }
        if (!take_token("(") || !take_token(")")) return false;
      } else {
        out.test = node_test::name;
        out.name = name;
      }
    }
    for (;;) {
      skip_space();
      if (!take("[")) return true;
      predicate test;
      if (!read_predicate(test) || !take_token("]")) return false;
      out.predicates.push_back(test);
    }
  }

  bool read_predicate(predicate& out) {
    skip_space();
    if (peek() >= '0' && peek() <= '9') {
      std::size_t digits = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (++digits > 9) return false;
        out.position = out.position * 10 + (query_[at_++] - '0');
      }
      out.what = predicate::kind::position;
      return peek() != '.';
    }
    if (take("@")) {
      if (!read_name(out.attribute) || next_is_call()) return false;
      skip_space();
      if (take("=")) {
        out.what = predicate::kind::equals;
      } else if (take("!=")) {
        out.what = predicate::kind::differs;
      } else {
        out.what = predicate::kind::has;
        return true;
      }
      return read_literal(out.literal);
    }
    std::string_view function;
    if (!read_name(function) || !next_is_call() || !take_token("(")) return false;
    if (function == "text") {
      out.what = predicate::kind::text_equals;
      return take_token(")") && take_token("=") && read_literal(out.literal);
    }
    if (function == "not") {
      out.what = predicate::kind::has_not;
      return take_token("@") && read_name(out.attribute) && take_token(")");
    }
    if (function == "contains") {
      out.what = predicate::kind::contains;
    } else if (function == "starts-with") {
      out.what = predicate::kind::starts_with;
    } else {
      return false;
    }
    return take_token("@") && read_name(out.attribute) && take_token(",") &&
           read_literal(out.literal) && take_token(")");
  }

  // An NCName of ASCII letters, digits, '-', '_' and '.'; a prefix ("a:b") is libxml2's.
  bool read_name(std::string_view& name) {
    skip_space();
    auto start = at_;
    auto first = peek();
    if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '_')) {
      return false;
    }
    while (at_ < query_.size()) {
      char c = query_[at_];
      bool name_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
      if (!name_char) break;
      ++at_;
    }
    if (peek() == ':') return false;
    name = query_.substr(start, at_ - start);
    return true;
  }

  bool read_literal(std::string_view& literal) {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') return false;
    auto end = query_.find(quote, at_ + 1);
    if (end == std::string_view::npos) return false;
    literal = query_.substr(at_ + 1, end - at_ - 1);
    at_ = end + 1;
    return true;
  }

  // Whether a '(' comes next (after any space): the name before it names a function or a test.
  bool next_is_call() {
    auto at = at_;
    while (at < query_.size() && is_space(query_[at])) ++at;
    return at < query_.size() && query_[at] == '(';
  }

  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  void skip_space() {
    while (at_ < query_.size() && is_space(query_[at_])) ++at_;
  }
  bool at_end() const { return at_ >= query_.size(); }
  char peek(std::size_t ahead = 0) const {
    return at_ + ahead < query_.size() ? query_[at_ + ahead] : '\0';
  }
  bool take(std::string_view token) {
    if (!query_.substr(at_).starts_with(token)) return false;
    at_ += token.size();
    return true;
  }
  bool take_token(std::string_view token) {
    skip_space();
    return take(token);
  }

  std::string_view query_;
  std::size_t at_ = 0;
};

// ---- The path, evaluated ----

// Nodes in document order, each once. `nested`: some node may lie inside another's subtree.
struct node_set {
  std::vector<const html_node*> nodes;
  bool nested = false;
};

bool passes(const node_test test, std::string_view name, const html_node* node) {
  switch (test) {
    case node_test::name:
      return node->is_element() && node->name == name;
    case node_test::element:
      return node->is_element();
    case node_test::text:
      return node->is_text();
    case node_test::comment:
      return node->type == html_node::kind::comment;
    case node_test::node:
      return true;
  }
  return false;
}

bool holds(const predicate& test, const html_node* node, long position) {
  using kind = predicate::kind;
  if (test.what == kind::position) return position == test.position;
  if (test.what == kind::text_equals) {
    for (const auto* child = node->first_child; child; child = child->next_sibling) {
      if (child->is_text() && child->text == test.literal) return true;
    }
    return false;
  }
  const std::string_view* value = node->attribute(test.attribute);
  switch (test.what) {
    case kind::has:
      return value != nullptr;
    case kind::has_not:
      return value == nullptr;
    case kind::equals:
      return value && *value == test.literal;
    case kind::differs:
      return value && *value != test.literal;
    case kind::contains:  // a missing attribute is "" to string()
      return (value ? *value : std::string_view{}).find(test.literal) != std::string_view::npos;
    case kind::starts_with:
      return (value ? *value : std::string_view{}).starts_with(test.literal);
    default:
      return false;
  }
}

// Whether `node` passes `step`'s test and predicates, `counters` holding, for each predicate,
// how many of the same parent's children passed the ones before it so far (positions count
// among those, in document order).
bool selects(const step& step, const html_node* node, std::vector<long>& counters) {
  if (!passes(step.test, step.name, node)) return false;
  for (std::size_t k = 0; k < step.predicates.size(); ++k) {
    if (!holds(step.predicates[k], node, ++counters[k])) return false;
  }
  return true;
}

bool contains_node(const html_node* ancestor, const html_node* node) {
  for (const auto* up = node->parent; up; up = up->parent) {
    if (up == ancestor) return true;
  }
  return false;
}

// The nodes of `set` that no other one of them holds: their subtrees are apart, in order.
std::vector<const html_node*> outermost(const node_set& set) {
  if (!set.nested) return set.nodes;
  std::vector<const html_node*> kept;
  for (const auto* node : set.nodes) {
    // In document order, only the last node kept can hold this one.
    if (kept.empty() || !contains_node(kept.back(), node)) kept.push_back(node);
  }
  return kept;
}

// Every node below `top`, in document order, without recursion.
template <typename Visit>
void walk_below(const html_node* top, Visit&& visit) {
  const html_node* node = top->first_child;
  while (node) {
    visit(node);
    if (node->first_child) {
      node = node->first_child;
      continue;
    }
    while (node && node != top && !node->next_sibling) node = node->parent;
    node = (node && node != top) ? node->next_sibling : nullptr;
  }
}

node_set apply(const step& step, const node_set& from) {
  node_set out;
  std::vector<long> counters(step.predicates.size());
  if (!step.deep && !from.nested) {
    // Children of nodes apart from each other: in order, and apart too.
    for (const auto* parent : from.nodes) {
      std::fill(counters.begin(), counters.end(), 0);
      for (const auto* child = parent->first_child; child; child = child->next_sibling) {
        if (selects(step, child, counters)) out.nodes.push_back(child);
      }
    }
    return out;
  }
  // One walk in document order below the outermost nodes; a node is a candidate when its
  // parent is one of the set (or, for "//", any node below or at one of them).
  std::unordered_set<const html_node*> parents;
  if (!step.deep) parents.insert(from.nodes.begin(), from.nodes.end());
  std::unordered_map<const html_node*, std::vector<long>> counted;
  for (const auto* top : outermost(from)) {
    walk_below(top, [&](const html_node* node) {
      if (!step.deep && !parents.contains(node->parent)) return;
      auto& counts = step.predicates.empty() ? counters : counted[node->parent];
      counts.resize(step.predicates.size());
      if (selects(step, node, counts)) out.nodes.push_back(node);
    });
  }
  // Elements found at any depth may hold one another; text and comments hold nothing.
  out.nested = step.test == node_test::name || step.test == node_test::element ||
               step.test == node_test::node;
  return out;
}

void attributes(const step& step, const node_set& from, std::vector<xpath_result>& out) {
  auto emit = [&](const html_node* node) {
    for (const auto& attribute : node->attributes) {
      if (step.name.empty() || attribute.name == step.name) {
        out.push_back({nullptr, std::string(attribute.value)});
      }
    }
  };
  if (!step.deep) {
    for (const auto* node : from.nodes) emit(node);
    return;
  }
  for (const auto* top : outermost(from)) {
    emit(top);
    walk_below(top, emit);
  }
}

}  // namespace

std::optional<std::vector<xpath_result>> evaluate_xpath_path(const html_document& document,
                                                             const html_node* context,
                                                             std::string_view query) {
  if (document.is_xml() || !context) return std::nullopt;
  location_path path;
  if (!reader(query).read(path)) return std::nullopt;
  node_set set{{path.absolute ? document.root() : context}, false};
  std::vector<xpath_result> out;
  for (const auto& step : path.steps) {
    if (step.attribute) {
      attributes(step, set, out);
      return out;
    }
    if (!step.self) set = apply(step, set);
  }
  for (const auto* node : set.nodes) {
    if (node->is_element() || node->type == html_node::kind::comment) {
      out.push_back({node, {}});
    } else if (node->is_text()) {
      out.push_back({nullptr, std::string(node->text)});
    }
  }
  return out;
}

}  // namespace crawler::detail
