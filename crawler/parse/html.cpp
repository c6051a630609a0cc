#include "crawler/parse/html.h"

#include <iconv.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "config/ascii.h"

namespace crawler {
namespace {

// The value of `charset=` in a Content-Type value or a <meta content>, trimmed of quotes.
std::string charset_parameter(std::string_view value) {
  auto text = ascii_lower(value);
  auto at = text.find("charset");
  if (at == std::string::npos) return {};
  at = text.find('=', at);
  if (at == std::string::npos) return {};
  ++at;
  while (at < text.size() && (text[at] == ' ' || text[at] == '"' || text[at] == '\'')) ++at;
  auto end = at;
  while (end < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-' ||
          text[end] == '_' || text[end] == ':' || text[end] == '.')) {
    ++end;
  }
  return text.substr(at, end - at);
}

// WHATWG's encoding labels for the few names that differ from what iconv expects: browsers read
// "iso-8859-1", "latin1" and "us-ascii" as windows-1252.
std::string canonical_encoding(std::string name) {
  if (name == "utf8" || name == "unicode-1-1-utf-8") return "utf-8";
  // UTF-7 is not an encoding of the web (WHATWG's Encoding standard has no label for it, and no
  // browser decodes it): a page that says so is read as UTF-8, so "+ADw-script+AD4-" stays text
  // instead of becoming markup only this crawler would see.
  if (name.find("utf-7") != std::string::npos || name.find("utf7") != std::string::npos) {
    return "utf-8";
  }
  if (name == "iso-8859-1" || name == "latin1" || name == "us-ascii" || name == "ascii" ||
      name == "iso8859-1" || name == "l1") {
    return "windows-1252";
  }
  return name;
}

void append_replacement(std::string& out) {
  out += "\xEF\xBF\xBD";
}

// Valid UTF-8 passes through; each invalid byte becomes U+FFFD.
std::string repair_utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  while (i < in.size()) {
    // ASCII runs, eight bytes at a time, are copied in one append: most markup is ASCII.
    auto run = i;
    for (std::uint64_t word; run + 8 <= in.size(); run += 8) {
      std::memcpy(&word, in.data() + run, 8);
      if (word & 0x8080808080808080ull) break;
    }
    while (run < in.size() && static_cast<unsigned char>(in[run]) < 0x80) ++run;
    out.append(in.substr(i, run - i));
    i = run;
    if (i == in.size()) break;
    auto c = static_cast<unsigned char>(in[i]);
    int length = c >= 0xF0 && c <= 0xF4   ? 4
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xC2 && c <= 0xDF ? 2
                                          : 0;
    bool valid = length > 0 && i + length <= in.size();
    for (int k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(in[i + k]) & 0xC0) == 0x80;
    }
    if (valid && length == 3) {
      auto second = static_cast<unsigned char>(in[i + 1]);
      valid = !(c == 0xE0 && second < 0xA0) && !(c == 0xED && second >= 0xA0);
    } else if (valid && length == 4) {
      auto second = static_cast<unsigned char>(in[i + 1]);
      valid = !(c == 0xF0 && second < 0x90) && !(c == 0xF4 && second >= 0x90);
    }
    if (valid) {
      out.append(in.substr(i, length));
      i += length;
    } else {
      append_replacement(out);
      ++i;
    }
  }
  return out;
}

bool is_utf8_name(std::string_view name) {
  return name == "utf-8";
}

// Elements that never nest: void ones, and ones a following sibling closes (an unclosed <p> or
// <li> does not make the page deeper).
bool leaves_depth_alone(std::string_view name) {
  static constexpr std::string_view names[] = {
      "area",  "base", "basefont", "bgsound", "br",    "col",   "embed",  "frame",
      "hr",    "img",  "input",    "keygen",  "link",  "meta",  "param",  "source",
      "track", "wbr",  "p",        "li",      "dt",    "dd",    "option", "optgroup",
      "tr",    "td",   "th",       "thead",   "tbody", "tfoot", "rb",     "rt",
      "rtc",   "rp",   "colgroup", "caption", "html",  "head",  "body",   "!doctype"};
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// Elements whose content is text up to their end tag, whatever it looks like.
bool is_raw_text(std::string_view name) {
  return name == "script" || name == "style" || name == "textarea" || name == "title" ||
         name == "xmp" || name == "iframe" || name == "noembed" || name == "noframes";
}

std::size_t find_ascii_case_insensitive(std::string_view text, std::string_view lower_needle,
                                        std::size_t from) {
  for (auto at = from; at + lower_needle.size() <= text.size(); ++at) {
    bool same = true;
    for (std::size_t i = 0; i < lower_needle.size() && same; ++i) {
      same = ascii_lower(text[at + i]) == lower_needle[i];
    }
    if (same) return at;
  }
  return std::string_view::npos;
}

}  // namespace

std::string sniff_encoding(std::string_view body, std::string_view content_type) {
  if (body.starts_with("\xEF\xBB\xBF")) return "utf-8";
  if (body.starts_with("\xFF\xFE")) return "utf-16le";
  if (body.starts_with("\xFE\xFF")) return "utf-16be";
  if (auto charset = charset_parameter(content_type); !charset.empty()) {
    return canonical_encoding(charset);
  }
  // <meta charset="..."> or <meta http-equiv="Content-Type" content="...; charset=...">, or an
  // XML declaration's encoding="..." (w3lib reads both).
  auto head = ascii_lower(body.substr(0, 1024));
  if (head.starts_with("<?xml")) {
    auto declaration = std::string_view(head).substr(0, head.find("?>"));
    if (auto at = declaration.find("encoding"); at != std::string_view::npos) {
      // Read as a charset= parameter, which it is but for its name.
      auto value = "charset" + std::string(declaration.substr(at + 8));
      if (auto encoding = charset_parameter(value); !encoding.empty()) {
        return canonical_encoding(encoding);
      }
    }
  }
  for (std::size_t at = head.find("<meta"); at != std::string::npos;
       at = head.find("<meta", at + 5)) {
    auto end = head.find('>', at);
    auto tag =
        std::string_view(head).substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (auto charset = charset_parameter(tag); !charset.empty()) {
      return canonical_encoding(charset);
    }
  }
  return "utf-8";
}

void html_document::register_namespace(std::string prefix, std::string uri) const {
  std::lock_guard lock(namespaces_mutex_);
  for (auto& [known, known_uri] : namespaces_) {
    if (known == prefix) {
      known_uri = std::move(uri);
      return;
    }
  }
  namespaces_.emplace_back(std::move(prefix), std::move(uri));
}

std::vector<std::pair<std::string, std::string>> html_document::registered_namespaces() const {
  std::lock_guard lock(namespaces_mutex_);
  return namespaces_;
}

std::string decode_to_utf8(std::string_view body, std::string_view encoding) {
  auto name = canonical_encoding(ascii_lower(encoding));
  if (is_utf8_name(name)) {
    if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
    return repair_utf8(body);
  }
  iconv_t converter = iconv_open("UTF-8", name.c_str());
  if (converter == iconv_t(-1)) return repair_utf8(body);  // an encoding iconv does not know
  std::string out;
  out.reserve(body.size() + body.size() / 2);
  char buffer[4096];
  auto* in = const_cast<char*>(body.data());
  std::size_t in_left = body.size();
  while (in_left > 0) {
    char* to = buffer;
    std::size_t to_left = sizeof buffer;
    auto result = iconv(converter, &in, &in_left, &to, &to_left);
    out.append(buffer, to - buffer);
    if (result == std::size_t(-1)) {
      if (errno == E2BIG) continue;
      // EILSEQ or a truncated sequence at the end: one replacement character per bad byte.
      append_replacement(out);
      ++in;
      --in_left;
      iconv(converter, nullptr, nullptr, nullptr, nullptr);
    }
  }
  iconv_close(converter);
  return out;
}

std::optional<std::string> encode_from_utf8(std::string_view utf8, std::string_view encoding) {
  auto name = canonical_encoding(ascii_lower(encoding));
  if (is_utf8_name(name)) return std::string(utf8);
  iconv_t converter = iconv_open(name.c_str(), "UTF-8");
  if (converter == iconv_t(-1)) return std::nullopt;
  std::string out;
  char buffer[256];
  auto* in = const_cast<char*>(utf8.data());
  std::size_t in_left = utf8.size();
  bool encodable = true;
  while (in_left > 0 && encodable) {
    char* to = buffer;
    std::size_t to_left = sizeof buffer;
    auto result = iconv(converter, &in, &in_left, &to, &to_left);
    out.append(buffer, to - buffer);
    encodable = result != std::size_t(-1) || errno == E2BIG;
  }
  iconv_close(converter);
  if (!encodable) return std::nullopt;
  return out;
}

std::size_t estimate_nesting_depth(std::string_view markup) {
  std::size_t depth = 0, deepest = 0, foreign = 0;  // foreign: inside <svg> or <math>
  std::size_t at = 0;
  while ((at = markup.find('<', at)) != std::string_view::npos) {
    ++at;
    if (markup.substr(at).starts_with("!--")) {
      auto end = markup.find("-->", at + 3);
      if (end == std::string_view::npos) break;
      at = end + 3;
      continue;
    }
    bool closing = at < markup.size() && markup[at] == '/';
    if (closing) ++at;
    auto name_end = at;
    while (name_end < markup.size() && !is_ascii_space(markup[name_end]) &&
           markup[name_end] != '>' && markup[name_end] != '/') {
      ++name_end;
    }
    if (name_end == at) continue;  // "<" or "</" alone is text
    char first = markup[at];
    bool letter = (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z');
    if (!letter && first != '!') continue;
    // Lower-cased on the stack: every name the estimate knows is shorter than the buffer, and a
    // longer one (a custom element) is only ever an ordinary element.
    char lowered[16];
    auto length = std::min(name_end - at, sizeof lowered);
    for (std::size_t i = 0; i < length; ++i) lowered[i] = ascii_lower(markup[at + i]);
    std::string_view name(lowered, length);
    // The end of the tag: the first '>' outside a quoted attribute value.
    auto end = name_end;
    for (char quote = 0; end < markup.size(); ++end) {
      char c = markup[end];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '>') {
        break;
      }
    }
    if (end >= markup.size()) break;
    bool self_closing = markup[end - 1] == '/';
    at = end + 1;
    if (name.starts_with('!')) continue;  // <!DOCTYPE>, <![CDATA[
    bool foreign_root = name == "svg" || name == "math";
    if (closing) {
      if (foreign_root && foreign > 0) --foreign;
      if (!leaves_depth_alone(name) && depth > 0) --depth;
      continue;
    }
    if (leaves_depth_alone(name)) continue;
    // In HTML, <div/> opens a div; only SVG and MathML elements close themselves.
    if (self_closing && (foreign > 0 || foreign_root)) continue;
    deepest = std::max(deepest, ++depth);
    if (foreign_root) ++foreign;
    if (is_raw_text(name)) {
      auto close = find_ascii_case_insensitive(markup, "</" + std::string(name), at);
      if (close == std::string_view::npos) break;
      at = close;
    }
  }
  return deepest;
}

}  // namespace crawler
