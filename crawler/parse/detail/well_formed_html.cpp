// HTML_PARSER=gumbo's fast path: the tree Gumbo builds, built in one pass over the page without
// Gumbo, for pages that keep to the well-formed part of HTML. Gumbo spends most of a page's parse
// deciding what HTML5's tree construction does with broken markup; a page that needs none of that
// (elements closed in order, with the end tags HTML lets a page leave out: </p>, </li>, <html>,
// <head>, <body>...) gets the same tree from a tokenizer and a stack.
//
// The model is Gumbo 0.10.1's own reading of HTML5 (parser.c, tokenizer.c, utf8.c), not today's
// standard: the same tag lists, the same text-node boundaries (text waits in a buffer and joins
// the tree where the parser is when something else happens), the same quirks (an end tag of an
// unknown element closes the nearest unknown element, whatever its name). Whatever the model does
// not cover makes build_well_formed_html give up, and Gumbo parses the page: a parse error in the
// tree construction (misnested or stray end tags, a formatting element that would be
// reconstructed), tables past their plain form, forms inside forms, <select>, <textarea>,
// <template>, SVG past its plain form, MathML, frames, a named character reference outside the
// common ones entities.h knows, a duplicate attribute, a carriage return, a control character.
// Inline SVG (the icons most sites
// carry) is taken as far as it stays SVG: elements, text and comments, self-closing tags; an HTML
// tag inside it that breaks out of it, an integration point (<foreignObject>, <desc>, <title>),
// <script> or <style> in it, or a namespaced attribute (xlink:href) is Gumbo's. Tables are taken
// in the form generators write them: <colgroup> of <col>s, <thead>/<tbody>/<tfoot> (or rows
// straight in <table>, in an implied <tbody>), rows of cells each closed, whitespace between;
// text or any other element where only a table's parts may go (which HTML moves out of the
// table), a <caption>, a cell or row left open, a cell's end tag with a formatting element open,
// or a <table> opened inside a <p> (whether it closes the <p> depends on quirks mode) is Gumbo's.
// tests/well_formed_html_test.cpp (with every page of Debian's python3-doc) and
// fuzz/well_formed_html_fuzzer.cpp hold the two parsers to the same tree.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "crawler/parse/detail/arena.h"
#include "crawler/parse/detail/entities.h"
#include "crawler/parse/detail/tree_builder.h"

namespace crawler::detail {
namespace {

// What the tree construction does with a known tag (Gumbo's tag.in); an unknown tag has none.
enum tag_flag : std::uint32_t {
  special = 1u << 0,            // is_special_node
  implied_end = 1u << 1,        // generate_implied_end_tags
  closes_p = 1u << 2,           // a start tag that closes an open <p> first (div, ul, p, ...)
  closes_block = 1u << 3,       // an end tag that closes its element and what HTML implies ends
  heading = 1u << 4,            // h1-h6
  formatting = 1u << 5,         // b, i, em, ...: the list of active formatting elements
  void_reconstructs = 1u << 6,  // img, br, input, ...: no children; formatting reconstructed
  void_plain = 1u << 7,         // param, source, track
  head_void = 1u << 8,          // meta, link, base, ...: no children, no reconstruction
  not_in_body = 1u << 9,        // a start tag the model leaves to Gumbo
  not_at_end = 1u << 10,        // an end tag the model leaves to Gumbo
  skips_linefeed = 1u << 11,    // pre, listing: a newline right after the start tag is dropped
  not_in_svg = 1u << 12,        // a start tag inside <svg> the model leaves to Gumbo
  table_section = 1u << 13,     // thead, tbody, tfoot
  cell = 1u << 14,              // td, th
};

enum class tag_id : std::uint8_t {
  other,
  html,
  head,
  body,
  p,
  li,
  dd,
  dt,
  a,
  form,
  button,
  hr,
  script,
  style,
  title,
  ol,
  ul,
  br,
  address,
  div,
  noscript,
  noframes,
  template_,
  svg,
  table,
  colgroup,
  col,
  tr
};

struct tag_info {
  std::string_view name;
  std::uint32_t flags = 0;
  tag_id id = tag_id::other;
};

// Gumbo 0.10.1's known tags and what its in-body rules do with each.
const std::unordered_map<std::string_view, tag_info>& known_tags() {
  static const auto table = [] {
    std::unordered_map<std::string_view, tag_info> tags;
    auto add = [&tags](std::string_view names, std::uint32_t flags, tag_id id = tag_id::other) {
      for (std::size_t at = 0; at < names.size();) {
        auto end = names.find(' ', at);
        if (end == std::string_view::npos) end = names.size();
        auto name = names.substr(at, end - at);
        auto& info = tags[name];
        info.name = name;
        info.flags |= flags;
        if (id != tag_id::other) info.id = id;
        at = end + 1;
      }
    };
    // Every known tag first, then what sets each apart.
    add("html head title base link meta style script noscript template body article section nav "
        "aside h1 h2 h3 h4 h5 h6 hgroup header footer address p hr pre blockquote ol ul li dl dt "
        "dd figure figcaption main div a em strong small s cite q dfn abbr data time code var "
        "samp kbd sub sup i b u mark ruby rt rp bdi bdo span br wbr ins del image img iframe "
        "embed object param video audio source track canvas map area math mi mo mn ms mtext "
        "mglyph malignmark annotation-xml svg foreignobject desc table caption colgroup col "
        "tbody thead tfoot tr td th form fieldset legend label input button select datalist "
        "optgroup option textarea keygen output progress meter details summary menu menuitem "
        "applet acronym bgsound dir frame frameset noframes isindex listing xmp nextid noembed "
        "plaintext rb strike basefont big blink center font marquee multicol nobr spacer tt rtc",
        0);
    add("address applet area article aside base basefont bgsound blockquote body br button "
        "caption center col colgroup menuitem dd details dir div dl dt embed fieldset "
        "figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr "
        "html iframe img input isindex li link listing marquee menu meta nav noembed noframes "
        "noscript object ol p param plaintext pre script section select style summary table "
        "tbody td template textarea tfoot th thead title tr ul wbr xmp",
        special);
    add("dd dt li option optgroup p rp rb rt rtc", implied_end);
    add("address article aside blockquote center details dir div dl fieldset figcaption figure "
        "footer header hgroup menu main nav ol p section summary ul",
        closes_p);
    add("address article aside blockquote button center details dir div dl fieldset figcaption "
        "figure footer header hgroup listing main menu nav ol pre section summary ul",
        closes_block);
    add("h1 h2 h3 h4 h5 h6", heading | closes_p);
    add("b big code em font i s small strike strong tt u", formatting);
    add("area br embed img keygen wbr input", void_reconstructs);
    add("param source track", void_plain);
    add("base basefont bgsound menuitem link meta", head_void);
    add("pre listing", skips_linefeed);
    add("html body frameset plaintext nobr applet marquee object table image isindex "
        "textarea xmp iframe noembed noframes template select option optgroup rb rp rt rtc math "
        "mi mo mn ms mtext mglyph malignmark annotation-xml foreignobject desc caption col "
        "colgroup frame head tbody td tfoot th thead tr",
        not_in_body | not_in_svg);
    // The HTML tags that end foreign content (HTML5's "any other start tag" breakouts; <font>
    // only with some attributes, left to Gumbo always), the SVG elements where HTML comes back,
    // and raw text, which a tokenizer in foreign content reads as markup.
    add("b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i "
        "img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table "
        "tt u ul var font foreignobject desc title script style noscript noframes",
        not_in_svg);
    add("applet marquee object br template nobr", not_at_end);
    add("html", 0, tag_id::html);
    add("head", 0, tag_id::head);
    add("body", 0, tag_id::body);
    add("p", 0, tag_id::p);
    add("li", 0, tag_id::li);
    add("dd", 0, tag_id::dd);
    add("dt", 0, tag_id::dt);
    add("a", 0, tag_id::a);
    add("form", 0, tag_id::form);
    add("button", 0, tag_id::button);
    add("hr", 0, tag_id::hr);
    add("script", 0, tag_id::script);
    add("style", 0, tag_id::style);
    add("title", 0, tag_id::title);
    add("ol", 0, tag_id::ol);
    add("ul", 0, tag_id::ul);
    add("br", 0, tag_id::br);
    add("address", 0, tag_id::address);
    add("div", 0, tag_id::div);
    add("noscript", 0, tag_id::noscript);
    add("noframes", 0, tag_id::noframes);
    add("template", 0, tag_id::template_);
    add("svg", 0, tag_id::svg);
    add("table", 0, tag_id::table);
    add("colgroup", 0, tag_id::colgroup);
    add("col", 0, tag_id::col);
    add("tr", 0, tag_id::tr);
    add("thead tbody tfoot", table_section);
    add("td th", cell);
    return tags;
  }();
  return table;
}

// The tags whose open elements </body> leaves open without a parse error.
bool closes_quietly_at_body_end(const tag_info* info) {
  if (!info) return false;
  static constexpr std::array<std::string_view, 18> quiet = {
      "dd",  "dt",    "li", "optgroup", "option", "p",     "rb", "rp",   "rt",
      "rtc", "tbody", "td", "tfoot",    "th",     "thead", "tr", "body", "html"};
  return std::find(quiet.begin(), quiet.end(), info->name) != quiet.end();
}

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\f';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_alnum(char c) {
  return is_alpha(c) || (c >= '0' && c <= '9');
}
char lower(char c) {
  return c >= 'A' && c <= 'Z' ? char(c + ('a' - 'A')) : c;
}

// Code points Gumbo's input stream turns into U+FFFD (controls, noncharacters, bytes that are not
// UTF-8), and the carriage returns it folds: pages with any of them are Gumbo's.
bool input_gumbo_rewrites(std::string_view utf8) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(utf8.data());
  std::size_t size = utf8.size();
  if (size >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF) return true;
  for (std::size_t i = 0; i < size; ++i) {
    unsigned char c = bytes[i];
    if (c < 0x80) {
      if ((c >= 0x20 && c != 0x7F) || c == '\t' || c == '\n' || c == '\f') continue;
      return true;
    }
    std::size_t length = c >= 0xC2 && c <= 0xDF   ? 2
                         : c >= 0xE0 && c <= 0xEF ? 3
                         : c >= 0xF0 && c <= 0xF4 ? 4
                                                  : 0;
    if (length == 0 || i + length > size) return true;
    std::uint32_t code = c & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) return true;
      code = (code << 6) | (bytes[i + k] & 0x3F);
    }
    static constexpr std::uint32_t shortest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < shortest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return true;
    }
    if ((code >= 0x80 && code <= 0x9F) || (code >= 0xFDD0 && code <= 0xFDEF) ||
        (code & 0xFFFE) == 0xFFFE) {
      return true;
    }
    i += length - 1;
  }
  return false;
}

enum class mode {
  initial,
  before_html,
  before_head,
  in_head,
  after_head,
  in_body,
  // A table's insertion modes but "in cell", which is the body's with a cell open.
  in_table,
  in_column_group,
  in_table_body,
  in_row,
  text,
  after_body,
  after_after_body
};

struct open_element {
  html_node* node;
  const tag_info* info;  // nullptr: a tag Gumbo does not know
  std::string_view name;
  bool formatting = false;  // on the list of active formatting elements
  bool svg = false;         // an element of inline SVG (Gumbo's SVG namespace)
};

struct attribute {
  std::string_view name;
  std::string_view value;
};

// Gumbo's tokenizer and tree construction, run together over the page in one pass; every step
// returns false (or -1) when the page leaves the model.
class model {
 public:
  model(const std::string& utf8, tree_builder& builder)
      : source_(utf8), builder_(builder), arena_(std::make_shared<arena>(4096)) {}

  bool run() {
    if (input_gumbo_rewrites(source_)) return false;
    std::size_t at = 0;
    const std::size_t size = source_.size();
    while (at < size) {
      if (mode_ == mode::text) {
        if (!raw_text(at)) return false;
        continue;
      }
      if (source_[at] == '<') {
        auto consumed = markup(at);
        if (consumed < 0) return false;
        if (consumed > 0) {
          at += std::size_t(consumed);
          continue;
        }
      }
      // Text up to the next '<' that opens markup; a '<' that opens none is text.
      std::size_t end = at + 1;
      for (;;) {
        const void* found = std::memchr(source_.data() + end, '<', size - end);
        end = found ? std::size_t(static_cast<const char*>(found) - source_.data()) : size;
        if (end == size || opens_markup(end)) break;
        ++end;
      }
      if (!text(source_.substr(at, end - at))) return false;
      at = end;
    }
    if (!end_of_file()) return false;
    flush();
    builder_.keep(arena_);
    return true;
  }

 private:
  // ---- Tokenizer ----

  bool opens_markup(std::size_t at) const {
    if (at + 1 >= source_.size()) return false;
    char next = source_[at + 1];
    return is_alpha(next) || next == '/' || next == '!' || next == '?';
  }

  // The markup at `at` (a '<'): its length once handled, 0 when it is text, -1 to give up.
  std::ptrdiff_t markup(std::size_t at) {
    if (!opens_markup(at)) return 0;
    skip_linefeed_ = false;  // only the token right after <pre> may be the newline it drops
    char next = source_[at + 1];
    if (next == '!') return declaration(at);
    if (next == '?') return -1;  // a bogus comment
    bool end = next == '/';
    std::size_t name_at = at + (end ? 2 : 1);
    if (name_at >= source_.size() || !is_alpha(source_[name_at])) return -1;
    std::size_t i = name_at;
    while (i < source_.size() && !is_space(source_[i]) && source_[i] != '/' && source_[i] != '>') {
      ++i;
    }
    if (i >= source_.size()) return -1;
    auto name = lower_case(source_.substr(name_at, i - name_at));
    if (end) {
      // Gumbo matches an end tag in SVG by its text up to the '>': "</g >" closes no <g>.
      if (in_svg() && i < source_.size() && source_[i] != '>') return -1;
      while (i < source_.size() && is_space(source_[i])) ++i;
      if (i >= source_.size() || source_[i] != '>') return -1;  // attributes on an end tag
      if (!end_tag(name)) return -1;
      return std::ptrdiff_t(i + 1 - at);
    }
    attributes_.clear();
    bool self_closing = false;
    for (;;) {
      while (i < source_.size() && is_space(source_[i])) ++i;
      if (i >= source_.size()) return -1;
      if (source_[i] == '>') {
        ++i;
        break;
      }
      if (source_[i] == '/') {
        // "<br/>": the flag changes nothing for HTML elements, and closes an SVG one.
        if (i + 1 < source_.size() && source_[i + 1] == '>') {
          i += 2;
          self_closing = true;
          break;
        }
        return -1;
      }
      if (!attribute_at(i)) return -1;
    }
    if (!start_tag(name, self_closing)) return -1;
    return std::ptrdiff_t(i - at);
  }

  // One attribute at `i`, added to attributes_.
  bool attribute_at(std::size_t& i) {
    std::size_t name_at = i;
    while (i < source_.size() && !is_space(source_[i]) && source_[i] != '/' && source_[i] != '>' &&
           source_[i] != '=') {
      char c = source_[i];
      if (c == '"' || c == '\'' || c == '<') return false;
      ++i;
    }
    if (i == name_at || i >= source_.size()) return false;
    auto name = lower_case(source_.substr(name_at, i - name_at));
    std::size_t after_name = i;
    while (i < source_.size() && is_space(source_[i])) ++i;
    std::string_view value;
    if (i < source_.size() && source_[i] == '=') {
      ++i;
      while (i < source_.size() && is_space(source_[i])) ++i;
      if (i >= source_.size()) return false;
      char quote = source_[i];
      std::size_t value_at, value_end;
      if (quote == '"' || quote == '\'') {
        value_at = i + 1;
        value_end = source_.find(quote, value_at);
        if (value_end == std::string_view::npos) return false;
        i = value_end + 1;
        // "a='x'b": an attribute right after a quoted value is an error Gumbo recovers from.
        if (i < source_.size() && !is_space(source_[i]) && source_[i] != '/' && source_[i] != '>') {
          return false;
        }
      } else {
        if (quote == '>') return false;
        value_at = i;
        while (i < source_.size() && !is_space(source_[i]) && source_[i] != '>') {
          char c = source_[i];
          if (c == '"' || c == '\'' || c == '<' || c == '=' || c == '`') return false;
          ++i;
        }
        value_end = i;
      }
      auto raw = source_.substr(value_at, value_end - value_at);
      if (raw.find('&') == std::string_view::npos) {
        value = raw;
      } else {
        scratch_.clear();
        if (!decode(raw, true, scratch_)) return false;
        value = arena_->copy(scratch_);
      }
    } else {
      i = after_name;
    }
    // Gumbo keeps the first of two alike, but its tokenizer may then glue the name of the one it
    // drops to the next attribute's: Gumbo's to decide.
    for (const auto& existing : attributes_) {
      if (existing.name == name) return false;
    }
    attributes_.push_back({name, value});
    return true;
  }

  // "<!--...-->" or a DOCTYPE; anything else after "<!" is Gumbo's.
  std::ptrdiff_t declaration(std::size_t at) {
    auto rest = source_.substr(at);
    if (rest.starts_with("<!--")) {
      auto body = rest.substr(4);
      if (body.starts_with(">") || body.starts_with("->")) return -1;
      auto close = body.find("-->");
      if (close == std::string_view::npos) return -1;
      auto data = body.substr(0, close);
      if (data.find("--!") != std::string_view::npos) return -1;
      if (!comment(data)) return -1;
      return std::ptrdiff_t(4 + close + 3);
    }
    static constexpr std::string_view doctype = "<!doctype";
    if (rest.size() < doctype.size()) return -1;
    for (std::size_t k = 0; k < doctype.size(); ++k) {
      if (lower(rest[k]) != doctype[k]) return -1;
    }
    auto close = rest.find('>');
    if (close == std::string_view::npos || mode_ != mode::initial) return -1;
    // A quoted identifier with a '>' in it ends the DOCTYPE early, as an error: Gumbo's.
    auto inside = rest.substr(2, close - 2);
    if (inside.find('<') != std::string_view::npos ||
        std::count(inside.begin(), inside.end(), '"') % 2 != 0 ||
        std::count(inside.begin(), inside.end(), '\'') % 2 != 0) {
      return -1;
    }
    mode_ = mode::before_html;  // the DOCTYPE is no node of the tree
    return std::ptrdiff_t(close + 1);
  }

  // The body of <script>, <style> or <title> and its end tag.
  bool raw_text(std::size_t& at) {
    const auto& name = stack_.back().name;
    std::size_t search = at;
    std::size_t end;
    for (;;) {
      end = source_.find("</", search);
      if (end == std::string_view::npos) return false;  // unclosed: Gumbo's
      auto candidate = source_.substr(end + 2, name.size());
      bool same = candidate.size() == name.size() &&
                  std::equal(candidate.begin(), candidate.end(), name.begin(),
                             [](char a, char b) { return lower(a) == b; });
      std::size_t after = end + 2 + name.size();
      if (same && after < source_.size() &&
          (is_space(source_[after]) || source_[after] == '/' || source_[after] == '>')) {
        break;
      }
      search = end + 2;
    }
    auto body = source_.substr(at, end - at);
    if (stack_.back().info->id == tag_id::script && body.find("<!--") != std::string_view::npos) {
      return false;  // script data's escaped states
    }
    if (!body.empty()) {
      if (stack_.back().info->id == tag_id::title && body.find('&') != std::string_view::npos) {
        scratch_.clear();
        if (!decode(body, false, scratch_)) return false;
        append_text_copy(scratch_);
      } else {
        append_text(body);
      }
    }
    std::size_t i = end + 2 + name.size();
    while (i < source_.size() && is_space(source_[i])) ++i;
    if (i >= source_.size() || source_[i] != '>') return false;
    pop();
    mode_ = original_mode_;
    at = i + 1;
    return true;
  }

  // Character references in `raw` written into `out`: the few the model knows, else false.
  // In an attribute value "&name=" stays as written (a query string), as HTML5 says.
  bool decode(std::string_view raw, bool in_attribute, std::string& out) const {
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        out += raw[i];
        continue;
      }
      if (i + 1 >= raw.size()) {  // the end of the text or of the attribute value
        out += '&';
        continue;
      }
      char next = raw[i + 1];
      if (is_space(next) || next == '<' || next == '&') {
        out += '&';
        continue;
      }
      if (next == '#') {
        std::size_t k = i + 2;
        bool hex = k < raw.size() && (raw[k] == 'x' || raw[k] == 'X');
        if (hex) ++k;
        std::uint32_t code = 0;
        std::size_t digits_at = k;
        while (k < raw.size() && k - digits_at < 7) {
          char c = raw[k];
          int digit = c >= '0' && c <= '9'          ? c - '0'
                      : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                    : -1;
          if (digit < 0) break;
          code = code * (hex ? 16 : 10) + std::uint32_t(digit);
          ++k;
        }
        if (k == digits_at || k >= raw.size() || raw[k] != ';') return false;
        bool plain = (code >= 0x20 && code < 0x7F) || code == '\t' || code == '\n' ||
                     (code >= 0xA0 && code < 0xD800) || (code > 0xDFFF && code <= 0x10FFFF);
        if (!plain || (code >= 0xFDD0 && code <= 0xFDEF) || (code & 0xFFFE) == 0xFFFE) {
          return false;
        }
        append_utf8(code, out);
        i = k;
        continue;
      }
      if (!is_alnum(next)) {
        out += '&';
        continue;
      }
      std::size_t k = i + 1;
      while (k < raw.size() && is_alnum(raw[k])) ++k;
      auto name = raw.substr(i + 1, k - i - 1);
      if (k < raw.size() && raw[k] == ';') {
        auto code = common_named_reference(name);
        if (code == 0) return false;
        append_utf8(code, out);
        i = k;
        continue;
      }
      // Without its ';' a name is text unless it starts with a reference HTML also reads
      // without one ("&copy 2024" is "© 2024"). In an attribute value such a reference is text
      // too when a letter, digit or '=' follows it ("?a=1&copy=2" is a query string), so only a
      // name that is one, with no '=' after it, is decoded.
      bool literal = in_attribute ? !is_legacy_reference(name) || (k < raw.size() && raw[k] == '=')
                                  : !starts_with_legacy_reference(name);
      if (!literal) return false;
      out.append(raw.substr(i, k - i));
      i = k - 1;
      continue;
    }
    return true;
  }

  // A tag or attribute name as Gumbo has it: ASCII lower-cased.
  std::string_view lower_case(std::string_view name) {
    if (std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      return name;
    }
    scratch_name_.assign(name);
    for (auto& c : scratch_name_) c = lower(c);
    return arena_->copy(scratch_name_);
  }

  // ---- Tree construction ----

  static const tag_info* info_of(std::string_view name) {
    const auto& tags = known_tags();
    auto found = tags.find(name);
    return found == tags.end() ? nullptr : &found->second;
  }
  static bool is(const tag_info* info, tag_id id) { return info && info->id == id; }
  static bool has(const tag_info* info, std::uint32_t flag) { return info && (info->flags & flag); }

  html_node* current() { return stack_.empty() ? builder_.root() : stack_.back().node; }

  void flush() {
    if (pending_.empty() && !pending_owned_) return;
    std::string_view text = pending_owned_ ? arena_->copy(owned_) : pending_;
    if (!stack_.empty()) builder_.add_leaf(stack_.back().node, html_node::kind::text, text);
    pending_ = {};
    pending_owned_ = false;
    owned_.clear();
  }

  // Text joins the buffer: a view of the page while it is one run of it, else a copy.
  void append_text(std::string_view text) {
    if (text.empty()) return;
    if (!pending_owned_) {
      if (pending_.empty()) {
        pending_ = text;
        return;
      }
      if (pending_.data() + pending_.size() == text.data()) {
        pending_ = {pending_.data(), pending_.size() + text.size()};
        return;
      }
      owned_.assign(pending_);
      pending_owned_ = true;
    }
    owned_.append(text);
  }
  void append_text_copy(const std::string& text) {
    if (text.empty()) return;
    if (!pending_owned_) {
      owned_.assign(pending_);
      pending_owned_ = true;
    }
    owned_.append(text);
  }

  html_node* insert(std::string_view name, const tag_info* info,
                    const std::vector<attribute>& attributes) {
    flush();
    auto* node = builder_.add_element(current(), info ? info->name : name);
    for (const auto& attribute : attributes)
      builder_.add_attribute(attribute.name, attribute.value);
    stack_.push_back({node, info, info ? info->name : name});
    if (!html_) html_ = node;
    return node;
  }
  html_node* insert_implied(std::string_view name) {
    static const std::vector<attribute> none;
    return insert(name, info_of(name), none);
  }

  // An element that also goes on the list of active formatting elements (<a>, <b>, <em>...).
  void insert_formatting(std::string_view name, const tag_info* info) {
    insert(name, info, attributes_);
    stack_.back().formatting = true;
    formatting_.push_back(stack_.back().node);
    formatting_names_.push_back(info);
  }

  void pop() {
    flush();
    if (stack_.back().formatting) ++formatting_closed_;
    stack_.pop_back();
  }

  // Reconstructing the active formatting elements: nothing to do while every one is open.
  bool reconstruct() const { return formatting_closed_ == 0; }

  bool open(tag_id id) const {
    return std::any_of(stack_.begin(), stack_.end(),
                       [id](const open_element& e) { return is(e.info, id); });
  }
  // "In button scope" and "in list item scope": no element of the scope's boundary but <html>
  // (and these) is ever open in the model.
  bool open_above(tag_id id, tag_id boundary_1, tag_id boundary_2 = tag_id::other) const {
    for (auto e = stack_.rbegin(); e != stack_.rend(); ++e) {
      if (is(e->info, id)) return true;
      if (is(e->info, boundary_1) || (boundary_2 != tag_id::other && is(e->info, boundary_2))) {
        return false;
      }
    }
    return false;
  }

  void generate_implied_end_tags(const tag_info* except) {
    while (!stack_.empty() && has(stack_.back().info, implied_end) &&
           stack_.back().info != except) {
      pop();
    }
  }
  // Gumbo's implicitly_close_tags, where a parse error gives up.
  bool close(const tag_info* target) {
    generate_implied_end_tags(target);
    if (stack_.empty() || stack_.back().info != target) return false;
    pop();
    return true;
  }
  bool close_p() { return !open_above(tag_id::p, tag_id::button) || close(info_of("p")); }
  bool close_list_item(bool li) {
    for (auto e = stack_.rbegin(); e != stack_.rend(); ++e) {
      if (li ? is(e->info, tag_id::li) : (is(e->info, tag_id::dd) || is(e->info, tag_id::dt))) {
        return close(e->info);
      }
      if (has(e->info, special) && !is(e->info, tag_id::address) && !is(e->info, tag_id::div) &&
          !is(e->info, tag_id::p)) {
        return true;
      }
    }
    return true;
  }

  // What a token the mode has no rule for makes the parser do before the next mode takes the
  // token: the elements a page may leave out (<html>, <head>, <body>) are implied, the head ends.
  // False in the modes where such a token is an error.
  bool imply_next_mode() {
    switch (mode_) {
      case mode::initial:
        mode_ = mode::before_html;
        return true;
      case mode::before_html:
        insert_implied("html");
        mode_ = mode::before_head;
        return true;
      case mode::before_head:
        insert_implied("head");
        mode_ = mode::in_head;
        return true;
      case mode::in_head:
        pop();
        mode_ = mode::after_head;
        return true;
      case mode::after_head:
        insert_implied("body");
        mode_ = mode::in_body;
        return true;
      default:
        return false;
    }
  }

  bool start_tag(std::string_view name, bool self_closing) {
    const tag_info* info = info_of(name);
    if (in_svg()) return start_tag_in_svg(name, info, self_closing);
    if (in_table_part()) return start_tag_in_table(info);
    for (;;) {
      if (mode_ == mode::in_body) return start_tag_in_body(name, info, self_closing);
      if (mode_ == mode::before_html && is(info, tag_id::html)) {
        insert(name, info, attributes_);
        mode_ = mode::before_head;
        return true;
      }
      if (mode_ == mode::before_head && is(info, tag_id::head)) {
        insert(name, info, attributes_);
        mode_ = mode::in_head;
        return true;
      }
      if (mode_ == mode::in_head) {
        if (has(info, head_void)) {
          insert(name, info, attributes_);
          pop();
          return true;
        }
        if (is(info, tag_id::title) || is(info, tag_id::style) || is(info, tag_id::script)) {
          return start_text(name, info);
        }
        if (is(info, tag_id::head) || is(info, tag_id::noscript) || is(info, tag_id::noframes) ||
            is(info, tag_id::template_)) {
          return false;
        }
      }
      if (mode_ == mode::after_head) {
        if (is(info, tag_id::body)) {
          insert(name, info, attributes_);
          mode_ = mode::in_body;
          return true;
        }
        if (is(info, tag_id::head) || has(info, head_void) || is(info, tag_id::script) ||
            is(info, tag_id::style) || is(info, tag_id::title) || is(info, tag_id::noframes) ||
            is(info, tag_id::template_) || (info && info->name == "frameset")) {
          return false;
        }
      }
      // <html> again merges its attributes into the first: Gumbo's.
      if (is(info, tag_id::html) && mode_ != mode::initial && mode_ != mode::before_html) {
        return false;
      }
      if (!imply_next_mode()) return false;
    }
  }

  bool start_text(std::string_view name, const tag_info* info) {
    insert(name, info, attributes_);
    original_mode_ = mode_;
    mode_ = mode::text;
    return true;
  }

  // ---- Inline SVG (Gumbo's foreign content, as far as the model goes) ----

  bool in_svg() const { return !stack_.empty() && stack_.back().svg; }

  // <svg> in the body, or any element inside it. Names and attribute names stay lower-case, as
  // Gumbo's tree gives them (its SVG case adjustments are for serializers).
  bool insert_svg(std::string_view name, bool self_closing) {
    // Gumbo renames xlink:href, xml:lang, xmlns:xlink... to their local names.
    for (const auto& attribute : attributes_) {
      if (attribute.name.find(':') != std::string_view::npos) return false;
    }
    insert(name, nullptr, attributes_);
    stack_.back().svg = true;
    if (self_closing) pop();
    return true;
  }

  bool start_tag_in_svg(std::string_view name, const tag_info* info, bool self_closing) {
    if (has(info, not_in_svg)) return false;
    return insert_svg(name, self_closing);
  }

  // ---- Tables (their plain form) ----

  bool in_table_part() const {
    return mode_ == mode::in_table || mode_ == mode::in_column_group ||
           mode_ == mode::in_table_body || mode_ == mode::in_row;
  }

  // A start tag where only a table's parts may go. The current node is the table, the
  // <colgroup>, the row group or the row the mode is named after.
  bool start_tag_in_table(const tag_info* info) {
    for (;;) {
      switch (mode_) {
        case mode::in_table:
          if (is(info, tag_id::colgroup)) {
            insert(info->name, info, attributes_);
            mode_ = mode::in_column_group;
            return true;
          }
          if (has(info, table_section)) {
            insert(info->name, info, attributes_);
            mode_ = mode::in_table_body;
            return true;
          }
          if (!is(info, tag_id::tr)) return false;
          insert_implied("tbody");  // a row straight in <table>
          mode_ = mode::in_table_body;
          continue;
        case mode::in_column_group:
          if (!is(info, tag_id::col)) return false;
          insert(info->name, info, attributes_);
          pop();
          return true;
        case mode::in_table_body:
          if (!is(info, tag_id::tr)) return false;
          insert(info->name, info, attributes_);
          mode_ = mode::in_row;
          return true;
        case mode::in_row:
          if (!has(info, cell)) return false;
          insert(info->name, info, attributes_);
          // A cell is a scope of its own on the list of active formatting elements.
          formatting_.push_back(nullptr);
          formatting_names_.push_back(nullptr);
          mode_ = mode::in_body;
          return true;
        default:
          return false;
      }
    }
  }

  bool end_tag_in_table(const tag_info* info) {
    for (;;) {
      switch (mode_) {
        case mode::in_table:
          if (!is(info, tag_id::table)) return false;
          pop();
          // What holds the table is a cell or an element of the body: the body's rules.
          mode_ = mode::in_body;
          return true;
        case mode::in_column_group:
          if (!is(info, tag_id::colgroup)) return false;
          pop();
          mode_ = mode::in_table;
          return true;
        case mode::in_table_body:
          if (has(info, table_section)) {
            if (stack_.back().info != info) return false;
          } else if (!is(info, tag_id::table)) {
            return false;
          }
          pop();
          mode_ = mode::in_table;
          if (is(info, tag_id::table)) continue;  // </table> closes the row group first
          return true;
        case mode::in_row:
          if (is(info, tag_id::tr)) {
            pop();
            mode_ = mode::in_table_body;
            return true;
          }
          // </table>, or the end tag of the row's own group, closes the row first.
          if (!is(info, tag_id::table) &&
              !(has(info, table_section) && stack_[stack_.size() - 2].info == info)) {
            return false;
          }
          pop();
          mode_ = mode::in_table_body;
          continue;
        default:
          return false;
      }
    }
  }

  // </td> or </th>: the cell closes once what HTML implies has ended, with no formatting
  // element of its own left open.
  bool close_cell(const tag_info* info) {
    generate_implied_end_tags(nullptr);
    if (stack_.empty() || stack_.back().info != info) return false;
    if (formatting_.empty() || formatting_.back() != nullptr) return false;
    pop();
    formatting_.pop_back();
    formatting_names_.pop_back();
    mode_ = mode::in_row;
    return true;
  }

  bool start_tag_in_body(std::string_view name, const tag_info* info, bool self_closing) {
    if (!info) {
      if (!reconstruct()) return false;
      insert(name, info, attributes_);
      return true;
    }
    if (is(info, tag_id::table)) {
      if (open_above(tag_id::p, tag_id::button)) return false;
      insert(name, info, attributes_);
      mode_ = mode::in_table;
      return true;
    }
    if (info->flags & not_in_body) return false;
    if (info->flags & head_void) {
      insert(name, info, attributes_);
      pop();
      return true;
    }
    switch (info->id) {
      case tag_id::script:
      case tag_id::style:
      case tag_id::title:
        return start_text(name, info);
      case tag_id::li:
      case tag_id::dd:
      case tag_id::dt:
        if (!close_list_item(info->id == tag_id::li) || !close_p()) return false;
        insert(name, info, attributes_);
        return true;
      case tag_id::form:
        if (form_ || !close_p()) return false;
        form_ = insert(name, info, attributes_);
        return true;
      case tag_id::button:
        if (open(tag_id::button) || !reconstruct()) return false;
        insert(name, info, attributes_);
        return true;
      case tag_id::hr:
        if (!close_p()) return false;
        insert(name, info, attributes_);
        pop();
        return true;
      case tag_id::a:
        if (anchors_ > 0 || !reconstruct()) return false;
        ++anchors_;
        insert_formatting(name, info);
        return true;
      case tag_id::svg:
        if (!reconstruct()) return false;
        return insert_svg(name, self_closing);
      default:
        break;
    }
    if (info->flags & skips_linefeed) {
      if (!close_p()) return false;
      insert(name, info, attributes_);
      skip_linefeed_ = true;
      return true;
    }
    if (info->flags & closes_p) {
      if (!close_p()) return false;
      if ((info->flags & heading) && !stack_.empty() && has(stack_.back().info, heading)) {
        return false;
      }
      insert(name, info, attributes_);
      return true;
    }
    if (info->flags & formatting) {
      // The Noah's Ark clause drops the earliest of three alike: Gumbo's to decide.
      if (std::count(formatting_names_.begin(), formatting_names_.end(), info) >= 3) return false;
      if (!reconstruct()) return false;
      insert_formatting(name, info);
      return true;
    }
    if (info->flags & void_reconstructs) {
      if (!reconstruct()) return false;
      insert(name, info, attributes_);
      pop();
      return true;
    }
    if (info->flags & void_plain) {
      insert(name, info, attributes_);
      pop();
      return true;
    }
    if (!reconstruct()) return false;
    insert(name, info, attributes_);
    return true;
  }

  bool end_tag(std::string_view name) {
    const tag_info* info = info_of(name);
    if (in_svg()) {
      // Only the current element's own end tag: any other closes what Gumbo decides.
      if (stack_.back().name != name) return false;
      pop();
      return true;
    }
    if (in_table_part()) return end_tag_in_table(info);
    for (;;) {
      if (mode_ == mode::in_body) return end_tag_in_body(name, info);
      if (mode_ == mode::after_body && is(info, tag_id::html)) {
        mode_ = mode::after_after_body;
        return true;
      }
      if (mode_ == mode::in_head && is(info, tag_id::head)) {
        pop();
        mode_ = mode::after_head;
        return true;
      }
      // Before <body> the modes take </head>, </body> and </html> as a token they have no rule
      // for (and </br> as <br>): any other end tag is an error.
      bool implies = is(info, tag_id::body) || is(info, tag_id::html) ||
                     (is(info, tag_id::head) && mode_ != mode::after_head);
      if (mode_ != mode::initial && !implies) return false;
      if (!imply_next_mode()) return false;
    }
  }

  bool end_tag_in_body(std::string_view name, const tag_info* info) {
    if (is(info, tag_id::body) || is(info, tag_id::html)) {
      if (!open(tag_id::body)) return false;
      for (const auto& e : stack_) {
        if (!closes_quietly_at_body_end(e.info)) return false;
      }
      mode_ = mode::after_body;
      if (is(info, tag_id::html)) mode_ = mode::after_after_body;
      return true;
    }
    if (has(info, not_at_end)) return false;
    if (has(info, cell)) return close_cell(info);
    if (has(info, closes_block)) return open_named(info) && close(info);
    if (is(info, tag_id::form)) {
      html_node* form = form_;
      form_ = nullptr;
      if (!form || stack_.empty()) return false;
      generate_implied_end_tags(nullptr);
      if (stack_.back().node != form) return false;
      // Gumbo takes the form off the stack without flushing the text waiting for a node: text
      // right before </form> goes to the form's parent, after it.
      stack_.pop_back();
      return true;
    }
    if (is(info, tag_id::p)) {
      // A </p> with no <p> open ("<p><ul>...</ul></p>", which Sphinx writes) is an error HTML
      // recovers from with an empty <p>, as Gumbo does (no formatting reconstructed).
      if (!open_above(tag_id::p, tag_id::button)) insert(name, info, {});
      return close(info);
    }
    if (is(info, tag_id::li)) {
      return open_above(tag_id::li, tag_id::ol, tag_id::ul) && close(info);
    }
    if (is(info, tag_id::dd) || is(info, tag_id::dt)) return open_named(info) && close(info);
    if (has(info, heading)) {
      bool any = std::any_of(stack_.begin(), stack_.end(),
                             [](const open_element& e) { return has(e.info, heading); });
      if (!any) return false;
      generate_implied_end_tags(nullptr);
      if (stack_.empty() || stack_.back().info != info) return false;
      pop();
      return true;
    }
    if (has(info, formatting) || is(info, tag_id::a)) {
      // The adoption agency's one simple case: the formatting element is the current node.
      auto last = std::find(formatting_names_.rbegin(), formatting_names_.rend(), info);
      if (last == formatting_names_.rend()) return false;
      auto index = std::size_t(formatting_names_.rend() - last - 1);
      if (stack_.empty() || stack_.back().node != formatting_[index]) return false;
      stack_.back().formatting = false;
      pop();
      formatting_.erase(formatting_.begin() + std::ptrdiff_t(index));
      formatting_names_.erase(formatting_names_.begin() + std::ptrdiff_t(index));
      if (is(info, tag_id::a)) --anchors_;
      return true;
    }
    // Any other end tag: the nearest open element of its tag closes, unless a special one
    // comes first. Gumbo tells tags apart by their number, and every unknown tag has the same.
    for (auto e = stack_.rbegin(); e != stack_.rend(); ++e) {
      if (e->info == info) {
        if (!info && e->name != name) return false;
        generate_implied_end_tags(info);
        auto depth = std::size_t(stack_.rend() - e);
        while (stack_.size() >= depth) pop();
        return true;
      }
      if (has(e->info, special)) return false;
    }
    return false;
  }

  bool open_named(const tag_info* info) const {
    return std::any_of(stack_.begin(), stack_.end(),
                       [info](const open_element& e) { return e.info == info; });
  }

  bool text(std::string_view run) {
    if (std::exchange(skip_linefeed_, false) && !run.empty()) {
      // "&#10;" is a newline token too: Gumbo's.
      if (run.front() == '&') return false;
      if (run.front() == '\n') run.remove_prefix(1);
    }
    while (!run.empty()) {
      switch (mode_) {
        case mode::in_body:
        case mode::after_body:
        case mode::after_after_body: {
          if (mode_ != mode::in_body) {
            // After </body> only whitespace is the body's; anything else is Gumbo's.
            if (run.find_first_not_of(" \n\t\f") != std::string_view::npos) return false;
          }
          if (!in_svg() && !reconstruct()) return false;
          if (run.find('&') == std::string_view::npos) {
            append_text(run);
          } else {
            scratch_.clear();
            if (!decode(run, false, scratch_)) return false;
            append_text_copy(scratch_);
          }
          return true;
        }
        case mode::in_table:
        case mode::in_column_group:
        case mode::in_table_body:
        case mode::in_row:
          // Only whitespace stays in a table: other text is moved out of it, Gumbo's.
          if (run.find_first_not_of(" \n\t\f") != std::string_view::npos) return false;
          append_text(run);
          return true;
        case mode::text:
          return false;
        default:
          break;
      }
      auto space = std::min(run.find_first_not_of(" \n\t\f"), run.size());
      if (mode_ == mode::in_head || mode_ == mode::after_head) append_text(run.substr(0, space));
      run.remove_prefix(space);
      if (run.empty()) return true;
      if (run.find('&') != std::string_view::npos) return false;
      if (!imply_next_mode()) return false;
    }
    return true;
  }

  bool comment(std::string_view data) {
    html_node* parent;
    switch (mode_) {
      case mode::initial:
      case mode::before_html:
      case mode::after_after_body:
        parent = builder_.root();
        break;
      case mode::after_body:
        parent = html_;
        break;
      case mode::text:
        return false;
      default:
        parent = current();
    }
    flush();
    builder_.add_leaf(parent, html_node::kind::comment, data);
    return true;
  }

  bool end_of_file() {
    while (mode_ != mode::in_body && mode_ != mode::after_body && mode_ != mode::after_after_body) {
      if (!imply_next_mode()) return false;  // an unclosed <script>, <style> or <title>
    }
    return true;
  }

  std::string_view source_;
  tree_builder& builder_;
  std::shared_ptr<arena> arena_;
  mode mode_ = mode::initial;
  mode original_mode_ = mode::in_body;
  std::vector<open_element> stack_;
  std::vector<html_node*> formatting_;  // the list of active formatting elements
  std::vector<const tag_info*> formatting_names_;
  std::size_t formatting_closed_ = 0;  // of them, how many are no longer open
  int anchors_ = 0;                    // <a> elements on the list
  html_node* form_ = nullptr;
  html_node* html_ = nullptr;
  bool skip_linefeed_ = false;  // the next token is the first after <pre> or <listing>
  std::vector<attribute> attributes_;
  std::string_view pending_;  // text waiting for its node, while it is one run of the page
  bool pending_owned_ = false;
  std::string owned_;  // the waiting text, once it is not
  std::string scratch_;
  std::string scratch_name_;
};

}  // namespace

bool build_well_formed_html(const std::string& utf8, tree_builder& builder) {
  return model(utf8, builder).run();
}

}  // namespace crawler::detail
