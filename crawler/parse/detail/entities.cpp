#include "crawler/parse/detail/entities.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <unordered_map>

namespace crawler::detail {

void append_utf8(unsigned long code, std::string& out) {
  if (code == 0 || code > 0x10FFFF) code = 0xFFFD;
  if (code < 0x80) {
    out += char(code);
  } else if (code < 0x800) {
    out += char(0xC0 | (code >> 6));
    out += char(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += char(0xE0 | (code >> 12));
    out += char(0x80 | ((code >> 6) & 0x3F));
    out += char(0x80 | (code & 0x3F));
  } else {
    out += char(0xF0 | (code >> 18));
    out += char(0x80 | ((code >> 12) & 0x3F));
    out += char(0x80 | ((code >> 6) & 0x3F));
    out += char(0x80 | (code & 0x3F));
  }
}

std::string decode_entities(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    auto semicolon = text.find(';', i);
    if (semicolon == std::string_view::npos || semicolon - i > 10) {
      out += '&';
      continue;
    }
    auto entity = text.substr(i + 1, semicolon - i - 1);
    if (entity == "amp")
      out += '&';
    else if (entity == "lt")
      out += '<';
    else if (entity == "gt")
      out += '>';
    else if (entity == "quot")
      out += '"';
    else if (entity == "apos")
      out += '\'';
    else if (entity.starts_with('#') && entity.size() > 1) {
      bool hex = entity[1] == 'x' || entity[1] == 'X';
      unsigned long code =
          std::strtoul(std::string(entity.substr(hex ? 2 : 1)).c_str(), nullptr, hex ? 16 : 10);
      append_utf8(code, out);
    } else {
      out.append(text.substr(i, semicolon - i + 1));
    }
    i = semicolon;
  }
  return out;
}

// The values are HTML's (and Gumbo 0.10.1's char_ref.rl, which tests/well_formed_html_test.cpp
// compares them with).
std::uint32_t common_named_reference(std::string_view name) {
  static const std::unordered_map<std::string_view, std::uint32_t> references = {
      {"amp", '&'},       {"lt", '<'},        {"gt", '>'},        {"quot", '"'},
      {"apos", '\''},     {"nbsp", 0xA0},     {"copy", 0xA9},     {"reg", 0xAE},
      {"trade", 0x2122},  {"mdash", 0x2014},  {"ndash", 0x2013},  {"hellip", 0x2026},
      {"laquo", 0xAB},    {"raquo", 0xBB},    {"lsquo", 0x2018},  {"rsquo", 0x2019},
      {"ldquo", 0x201C},  {"rdquo", 0x201D},  {"sbquo", 0x201A},  {"bdquo", 0x201E},
      {"lsaquo", 0x2039}, {"rsaquo", 0x203A}, {"middot", 0xB7},   {"bull", 0x2022},
      {"times", 0xD7},    {"divide", 0xF7},   {"euro", 0x20AC},   {"pound", 0xA3},
      {"yen", 0xA5},      {"cent", 0xA2},     {"sect", 0xA7},     {"para", 0xB6},
      {"deg", 0xB0},      {"plusmn", 0xB1},   {"frac12", 0xBD},   {"frac14", 0xBC},
      {"frac34", 0xBE},   {"eacute", 0xE9},   {"egrave", 0xE8},   {"aacute", 0xE1},
      {"agrave", 0xE0},   {"iacute", 0xED},   {"oacute", 0xF3},   {"uacute", 0xFA},
      {"ntilde", 0xF1},   {"ccedil", 0xE7},   {"uuml", 0xFC},     {"ouml", 0xF6},
      {"auml", 0xE4},     {"szlig", 0xDF},    {"Eacute", 0xC9},   {"shy", 0xAD},
      {"ensp", 0x2002},   {"emsp", 0x2003},   {"thinsp", 0x2009}, {"zwnj", 0x200C},
      {"zwj", 0x200D},    {"larr", 0x2190},   {"rarr", 0x2192},   {"uarr", 0x2191},
      {"darr", 0x2193},   {"hearts", 0x2665}, {"iexcl", 0xA1},    {"iquest", 0xBF},
      {"prime", 0x2032},  {"dagger", 0x2020},
  };
  auto found = references.find(name);
  return found == references.end() ? 0 : found->second;
}

// The references HTML also reads without their ';' ("&copy 2024").
namespace {

constexpr std::string_view legacy_references[] = {
    "AElig",  "AMP",    "Aacute", "Acirc",  "Agrave", "Aring",  "Atilde", "Auml",   "COPY",
    "Ccedil", "ETH",    "Eacute", "Ecirc",  "Egrave", "Euml",   "GT",     "Iacute", "Icirc",
    "Igrave", "Iuml",   "LT",     "Ntilde", "Oacute", "Ocirc",  "Ograve", "Oslash", "Otilde",
    "Ouml",   "QUOT",   "REG",    "THORN",  "Uacute", "Ucirc",  "Ugrave", "Uuml",   "Yacute",
    "aacute", "acirc",  "acute",  "aelig",  "agrave", "amp",    "aring",  "atilde", "auml",
    "brvbar", "ccedil", "cedil",  "cent",   "copy",   "curren", "deg",    "divide", "eacute",
    "ecirc",  "egrave", "eth",    "euml",   "frac12", "frac14", "frac34", "gt",     "iacute",
    "icirc",  "iexcl",  "igrave", "iquest", "iuml",   "laquo",  "lt",     "macr",   "micro",
    "middot", "nbsp",   "not",    "ntilde", "oacute", "ocirc",  "ograve", "ordf",   "ordm",
    "oslash", "otilde", "ouml",   "para",   "plusmn", "pound",  "quot",   "raquo",  "reg",
    "sect",   "shy",    "sup1",   "sup2",   "sup3",   "szlig",  "thorn",  "times",  "uacute",
    "ucirc",  "ugrave", "uml",    "uuml",   "yacute", "yen",    "yuml"};

}  // namespace

bool starts_with_legacy_reference(std::string_view name) {
  return std::any_of(std::begin(legacy_references), std::end(legacy_references),
                     [name](std::string_view entry) { return name.starts_with(entry); });
}
bool is_legacy_reference(std::string_view name) {
  return std::find(std::begin(legacy_references), std::end(legacy_references), name) !=
         std::end(legacy_references);
}

}  // namespace crawler::detail
