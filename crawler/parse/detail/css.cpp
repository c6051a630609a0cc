#include "crawler/parse/detail/css.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <unordered_map>

#include "config/ascii.h"
#include "crawler/parse/selector_error.h"

namespace crawler::detail {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

class parser {
 public:
  parser(std::string_view query, document_kind kind)
      : query_(query), fold_names_(kind == document_kind::html) {}

  std::vector<complex_selector> group() {
    std::vector<complex_selector> selectors;
    skip_space();
    if (at_end()) fail("empty selector");
    while (true) {
      selectors.push_back(complex());
      skip_space();
      if (at_end()) break;
      if (peek() != ',') fail("unexpected '" + std::string(1, peek()) + "'");
      ++pos_;
      skip_space();
      if (at_end()) fail("expected a selector after ','");
    }
    return selectors;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw selector_error("invalid CSS selector \"" + std::string(query_) + "\" at position " +
                         std::to_string(pos_) + ": " + what);
  }
  bool at_end() const { return pos_ >= query_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < query_.size() ? query_[pos_ + ahead] : '\0';
  }
  void skip_space() {
    while (!at_end() && is_ascii_space(peek())) ++pos_;
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }

  std::string identifier(const char* what) {
    std::string name;
    while (!at_end()) {
      if (peek() == '\\' && pos_ + 1 < query_.size()) {
        name += query_[pos_ + 1];
        pos_ += 2;
      } else if (is_name_char(peek())) {
        name += query_[pos_++];
      } else {
        break;
      }
    }
    if (name.empty()) fail(std::string("expected ") + what);
    return name;
  }

  std::string string_or_identifier() {
    char quote = peek();
    if (quote != '"' && quote != '\'') return identifier("a value");
    ++pos_;
    std::string value;
    while (!at_end() && peek() != quote) {
      if (peek() == '\\' && pos_ + 1 < query_.size()) ++pos_;
      value += query_[pos_++];
    }
    if (at_end()) fail("unterminated string");
    ++pos_;
    return value;
  }

  complex_selector complex() {
    complex_selector selector;
    selector.parts.push_back(compound_selector());
    while (true) {
      std::size_t before = pos_;
      skip_space();
      if (at_end() || peek() == ',') break;
      if (peek() == ':' && peek(1) == ':') {
        // "X ::text" is "X *::text": a descendant combinator, then any element.
        if (before != pos_) selector.descendant_or_self = true;
        pseudo(selector);
        break;
      }
      char combinator = ' ';
      if (peek() == '>' || peek() == '+' || peek() == '~') {
        combinator = query_[pos_++];
        skip_space();
      } else if (before == pos_) {
        fail("unexpected '" + std::string(1, peek()) + "'");
      }
      selector.combinators.push_back(combinator);
      selector.parts.push_back(compound_selector());
    }
    if (peek() == ':' && peek(1) == ':') pseudo(selector);
    // "X *::text": parsel takes the text (or attribute) of X and everything under it, not of
    // X's descendants only; the bare "*" step goes and the matcher ends at X.
    if (selector.pseudo != pseudo_element::none && selector.parts.size() > 1 &&
        selector.combinators.back() == ' ' && is_any_element(selector.parts.back())) {
      selector.parts.pop_back();
      selector.combinators.pop_back();
      selector.descendant_or_self = true;
    }
    return selector;
  }

  static bool is_any_element(const compound& part) {
    return part.tag.empty() && part.ids.empty() && part.classes.empty() &&
           part.attributes.empty() && part.positions.empty() && part.negations.empty() &&
           !part.empty;
  }

  void pseudo(complex_selector& selector) {
    pos_ += 2;
    auto name = ascii_lower(identifier("a pseudo-element"));
    if (name == "text") {
      selector.pseudo = pseudo_element::text;
    } else if (name == "attr") {
      expect('(');
      skip_space();
      selector.attr_name = spelled(identifier("an attribute name"));
      skip_space();
      expect(')');
      selector.pseudo = pseudo_element::attr;
    } else {
      fail("unsupported pseudo-element ::" + name + " (::text and ::attr(name) are)");
    }
    skip_space();
    if (!at_end() && peek() != ',') fail("a pseudo-element must end its selector");
  }

  compound compound_selector() {
    compound result;
    bool any = false;
    if (accept('*')) {
      any = true;
    } else if (is_name_char(peek()) || peek() == '\\') {
      result.tag = spelled(identifier("an element name"));
      any = true;
    }
    while (!at_end()) {
      char c = peek();
      if (c == '#') {
        ++pos_;
        result.ids.push_back(identifier("an id"));
      } else if (c == '.') {
        ++pos_;
        result.classes.push_back(identifier("a class name"));
      } else if (c == '[') {
        ++pos_;
        result.attributes.push_back(attribute());
      } else if (c == ':' && peek(1) != ':') {
        ++pos_;
        pseudo_class(result);
      } else {
        break;
      }
      any = true;
    }
    if (!any)
      fail(at_end() ? "expected a selector" : "unexpected '" + std::string(1, peek()) + "'");
    return result;
  }

  attribute_test attribute() {
    attribute_test test;
    skip_space();
    test.name = spelled(identifier("an attribute name"));
    skip_space();
    if (accept(']')) return test;
    char op = peek();
    if (op == '=') {
      ++pos_;
    } else if (std::string_view("~|^$*").find(op) != std::string_view::npos && op != '\0' &&
               peek(1) == '=') {
      pos_ += 2;
    } else {
      fail("expected an attribute operator or ']'");
    }
    test.op = op;
    skip_space();
    test.value = string_or_identifier();
    skip_space();
    if (ascii_lower(peek()) == 'i' && (is_ascii_space(peek(1)) || peek(1) == ']')) {
      ++pos_;
      test.ignore_case = true;
      skip_space();
    } else if (ascii_lower(peek()) == 's' && (is_ascii_space(peek(1)) || peek(1) == ']')) {
      ++pos_;
      skip_space();
    }
    expect(']');
    return test;
  }

  nth_test nth_arguments(bool of_type, bool from_end) {
    expect('(');
    skip_space();
    nth_test test{0, 0, of_type, from_end};
    std::size_t start = pos_;
    std::string text;
    while (!at_end() && peek() != ')') text += query_[pos_++];
    expect(')');
    std::string compact;
    for (char c : text) {
      if (!is_ascii_space(c)) compact += ascii_lower(c);
    }
    if (compact == "odd") return {2, 1, of_type, from_end};
    if (compact == "even") return {2, 0, of_type, from_end};
    auto bad = [&] {
      pos_ = start;
      fail("expected an+b, odd or even");
    };
    auto n = compact.find('n');
    auto parse_int = [&](std::string_view digits, int fallback) {
      if (digits.empty()) return fallback;
      if (digits == "+") return 1;
      if (digits == "-") return -1;
      std::size_t i = digits[0] == '+' || digits[0] == '-' ? 1 : 0;
      if (i == digits.size()) bad();
      for (std::size_t k = i; k < digits.size(); ++k) {
        if (!std::isdigit(static_cast<unsigned char>(digits[k]))) bad();
      }
      // Bounded, so an+b cannot overflow when it is matched (a fuzzer found stoi's throw here).
      if (digits.size() - i > 9) {
        pos_ = start;
        fail("an+b: a number of more than 9 digits");
      }
      return std::stoi(std::string(digits));
    };
    if (n == std::string::npos) {
      if (compact.empty()) bad();
      test.b = parse_int(compact, 0);
    } else {
      test.a = parse_int(std::string_view(compact).substr(0, n), 1);
      auto rest = std::string_view(compact).substr(n + 1);
      if (!rest.empty() && rest[0] != '+' && rest[0] != '-') bad();
      if (rest == "+" || rest == "-") bad();
      test.b = parse_int(rest, 0);
    }
    return test;
  }

  void pseudo_class(compound& result) {
    auto name = ascii_lower(identifier("a pseudo-class"));
    if (name == "first-child") {
      result.positions.push_back({0, 1, false, false});
    } else if (name == "last-child") {
      result.positions.push_back({0, 1, false, true});
    } else if (name == "only-child") {
      result.positions.push_back({0, 1, false, false});
      result.positions.push_back({0, 1, false, true});
    } else if (name == "first-of-type") {
      result.positions.push_back({0, 1, true, false});
    } else if (name == "last-of-type") {
      result.positions.push_back({0, 1, true, true});
    } else if (name == "nth-child") {
      result.positions.push_back(nth_arguments(false, false));
    } else if (name == "nth-last-child") {
      result.positions.push_back(nth_arguments(false, true));
    } else if (name == "nth-of-type") {
      result.positions.push_back(nth_arguments(true, false));
    } else if (name == "nth-last-of-type") {
      result.positions.push_back(nth_arguments(true, true));
    } else if (name == "empty") {
      result.empty = true;
    } else if (name == "not") {
      // Parsing and matching recurse once per level: a bound keeps the stack flat (the fuzzer's
      // :not(:not(:not(... overflowed it).
      if (++not_depth_ > max_not_depth) fail(":not() nested deeper than 32");
      expect('(');
      skip_space();
      result.negations.push_back(compound_selector());
      skip_space();
      expect(')');
      --not_depth_;
    } else {
      fail("unsupported pseudo-class :" + name);
    }
  }

  static constexpr int max_not_depth = 32;
  // An element or attribute name as the document spells its own: HTML's case-folded, XML's as is.
  std::string spelled(std::string identifier) const {
    return fold_names_ ? ascii_lower(identifier) : identifier;
  }

  std::string_view query_;
  bool fold_names_;
  std::size_t pos_ = 0;
  int not_depth_ = 0;
};

bool is_element(const html_node* node) {
  return node && node->is_element();
}

// The element's 1-based position among its element siblings (of its type), from either end.
int position(const html_node* element, bool of_type, bool from_end) {
  int count = 0;
  int mine = 0;
  for (const auto* sibling = element->parent ? element->parent->first_child : element; sibling;
       sibling = sibling->next_sibling) {
    if (!sibling->is_element() || (of_type && sibling->name != element->name)) continue;
    ++count;
    if (sibling == element) mine = count;
  }
  return from_end ? count - mine + 1 : mine;
}

bool nth_matches(const nth_test& test, int pos) {
  if (test.a == 0) return pos == test.b;
  int diff = pos - test.b;
  return diff % test.a == 0 && diff / test.a >= 0;
}

bool contains_word(std::string_view list, std::string_view word, bool ignore_case) {
  std::size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && is_ascii_space(list[i])) ++i;
    std::size_t start = i;
    while (i < list.size() && !is_ascii_space(list[i])) ++i;
    auto token = list.substr(start, i - start);
    if (!token.empty() && (ignore_case ? ascii_lower(token) == ascii_lower(word) : token == word)) {
      return true;
    }
  }
  return false;
}

bool attribute_matches(const attribute_test& test, const html_node* element) {
  const auto* raw = element->attribute(test.name);
  if (!raw) return false;
  if (test.op == 0) return true;
  std::string value = test.ignore_case ? ascii_lower(*raw) : std::string(*raw);
  std::string wanted = test.ignore_case ? ascii_lower(test.value) : test.value;
  switch (test.op) {
    case '=':
      return value == wanted;
    case '~':
      return !wanted.empty() && contains_word(value, wanted, false);
    case '|':
      return value == wanted || value.starts_with(wanted + "-");
    case '^':
      return !wanted.empty() && value.starts_with(wanted);
    case '$':
      return !wanted.empty() && value.ends_with(wanted);
    case '*':
      return !wanted.empty() && value.find(wanted) != std::string::npos;
  }
  return false;
}

bool compound_matches(const compound& part, const html_node* element) {
  if (!part.tag.empty() && element->name != part.tag) return false;
  for (const auto& id : part.ids) {
    const auto* value = element->attribute("id");
    if (!value || id != *value) return false;
  }
  if (!part.classes.empty()) {
    const auto* value = element->attribute("class");
    if (!value) return false;
    for (const auto& name : part.classes) {
      if (!contains_word(*value, name, false)) return false;
    }
  }
  for (const auto& test : part.attributes) {
    if (!attribute_matches(test, element)) return false;
  }
  for (const auto& test : part.positions) {
    if (!nth_matches(test, position(element, test.of_type, test.from_end))) return false;
  }
  if (part.empty) {
    for (const auto* child = element->first_child; child; child = child->next_sibling) {
      if (child->type != html_node::kind::comment) return false;
    }
  }
  for (const auto& negation : part.negations) {
    if (compound_matches(negation, element)) return false;
  }
  return true;
}

const html_node* previous_element(const html_node* element) {
  for (auto* sibling = element->previous_sibling; sibling; sibling = sibling->previous_sibling) {
    if (sibling->is_element()) return sibling;
  }
  return nullptr;
}

// Right to left: parts[index] matched `element`; does the rest match to its left?
bool matches_left(const complex_selector& selector, std::size_t index, const html_node* element) {
  if (index == 0) return true;
  const auto& part = selector.parts[index - 1];
  switch (selector.combinators[index - 1]) {
    case '>': {
      auto* parent = element->parent;
      return is_element(parent) && compound_matches(part, parent) &&
             matches_left(selector, index - 1, parent);
    }
    case ' ':
      for (auto* ancestor = element->parent; is_element(ancestor); ancestor = ancestor->parent) {
        if (compound_matches(part, ancestor) && matches_left(selector, index - 1, ancestor)) {
          return true;
        }
      }
      return false;
    case '+': {
      auto* sibling = previous_element(element);
      return sibling && compound_matches(part, sibling) &&
             matches_left(selector, index - 1, sibling);
    }
    case '~':
      for (auto* sibling = previous_element(element); sibling;
           sibling = previous_element(sibling)) {
        if (compound_matches(part, sibling) && matches_left(selector, index - 1, sibling)) {
          return true;
        }
      }
      return false;
  }
  return false;
}

}  // namespace

std::vector<complex_selector> parse_selector_group(std::string_view query, document_kind kind) {
  return parser(query, kind).group();
}

bool matches(const complex_selector& selector, const html_node* element) {
  if (!is_element(element)) return false;
  auto last = selector.parts.size() - 1;
  return compound_matches(selector.parts[last], element) && matches_left(selector, last, element);
}

std::shared_ptr<const std::vector<complex_selector>> compiled_selector_group(std::string_view query,
                                                                             document_kind kind) {
  // Keyed by the selector with its kind in front; a hash that takes a string_view finds it
  // without copying the query.
  struct key_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  using cache =
      std::unordered_map<std::string, std::shared_ptr<const std::vector<complex_selector>>,
                         key_hash, std::equal_to<>>;
  thread_local cache compiled;
  thread_local std::string key;
  key.assign(1, kind == document_kind::html ? 'h' : 'x');
  key.append(query);
  if (auto found = compiled.find(std::string_view(key)); found != compiled.end()) {
    return found->second;
  }
  auto group =
      std::make_shared<const std::vector<complex_selector>>(parse_selector_group(query, kind));
  // A spider's selectors are a few dozen; a program that makes them up as it goes starts over.
  if (compiled.size() >= 512) compiled.clear();
  compiled.emplace(key, group);
  return group;
}

}  // namespace crawler::detail
