#include "dedup/canonical_url.h"

#include <stringprep.h>
#include <idna.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

namespace crawler::dedup {
namespace {

// Byte classes of the quoting w3lib applies. Python's quote() always keeps ASCII letters, digits
// and "_.-~"; `safe` adds to that.
struct byte_set {
  std::array<bool, 256> member{};
  constexpr byte_set(std::string_view extra) {
    for (int c = 'a'; c <= 'z'; ++c) member[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) member[c] = true;
    for (int c = '0'; c <= '9'; ++c) member[c] = true;
    for (char c : std::string_view("_.-~")) member[static_cast<unsigned char>(c)] = true;
    for (char c : extra) member[static_cast<unsigned char>(c)] = true;
  }
  constexpr bool operator()(unsigned char c) const { return member[c]; }
};

// w3lib's _safe_chars: RFC 3986 reserved + unreserved + '|' + '%'; the path's set lacks '#'.
constexpr byte_set safe_chars(":/?#[]@!$&'()*+,;=|%");
constexpr byte_set path_safe_chars(":/?[]@!$&'()*+,;=|%");
constexpr byte_set always_safe("");

constexpr char hex_upper[] = "0123456789ABCDEF";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_escaped(std::string& out, unsigned char c) {
  out += '%';
  out += hex_upper[c >> 4];
  out += hex_upper[c & 15];
}

// Python's unquote_to_bytes: valid %XX escapes decoded, everything else kept as it is.
void unquote_into(std::string& out, std::string_view text, bool plus_is_space) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += (plus_is_space && c == '+') ? ' ' : c;
  }
}

// quote_plus(value, safe=''), as urlencode() applies it to each key and value.
void quote_plus_into(std::string& out, std::string_view bytes) {
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    if (always_safe(c)) {
      out += ch;
    } else if (c == ' ') {
      out += '+';
    } else {
      append_escaped(out, c);
    }
  }
}

// quote(bytes, safe): bytes outside `safe` become upper-case %XX.
void quote_into(std::string& out, std::string_view bytes, const byte_set& safe) {
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    if (safe(c)) {
      out += ch;
    } else {
      append_escaped(out, c);
    }
  }
}

// quote(_unquotepath(quote(path, path_safe)), path_safe) in one pass. The first quote only escapes
// bytes that the unquote step decodes again, so each byte or valid escape maps on its own: an
// escape of '/' or '?' stays escaped (upper-cased), any other escape is decoded and re-quoted.
void normalise_path_into(std::string& out, std::string_view path) {
  for (std::size_t i = 0; i < path.size(); ++i) {
    auto c = static_cast<unsigned char>(path[i]);
    if (c == '%' && i + 2 < path.size()) {
      int hi = hex_value(path[i + 1]), lo = hex_value(path[i + 2]);
      if (hi >= 0 && lo >= 0) {
        auto decoded = static_cast<unsigned char>(hi * 16 + lo);
        if (decoded == '/' || decoded == '?') {
          append_escaped(out, decoded);
        } else if (path_safe_chars(decoded)) {
          out += static_cast<char>(decoded);
        } else {
          append_escaped(out, decoded);
        }
        i += 2;
        continue;
      }
    }
    if (path_safe_chars(c)) {
      out += static_cast<char>(c);
    } else {
      append_escaped(out, c);
    }
  }
}

bool is_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

void lower_ascii_into(std::string& out, std::string_view text) {
  for (char c : text) out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Python's "idna" codec over the whole netloc (userinfo and port included, as w3lib calls it):
// labels split on the four IDNA dots, each through ToASCII (nameprep + punycode, IDNA 2003).
// Returns false where Python raises UnicodeError, and w3lib keeps the raw netloc.
bool idna_encode(std::string_view netloc, std::string& out) {
  std::size_t length = 0;
  std::unique_ptr<std::uint32_t, decltype(&std::free)> ucs4(
      stringprep_utf8_to_ucs4(netloc.data(), static_cast<ssize_t>(netloc.size()), &length), &std::free);
  if (!ucs4) return false;
  std::vector<std::vector<std::uint32_t>> labels(1);
  for (std::size_t i = 0; i < length; ++i) {
    std::uint32_t cp = ucs4.get()[i];
    if (cp == '.' || cp == 0x3002 || cp == 0xFF0E || cp == 0xFF61) {
      labels.emplace_back();
    } else {
      labels.back().push_back(cp);
    }
  }
  bool trailing_dot = labels.size() > 1 && labels.back().empty();
  if (trailing_dot) labels.pop_back();
  std::string encoded;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) encoded += '.';
    char buffer[64];
    auto& label = labels[i];
    if (label.empty()) return false;
    label.push_back(0);
    if (idna_to_ascii_4i(label.data(), label.size() - 1, buffer, 0) != IDNA_SUCCESS) return false;
    std::string_view ascii(buffer);
    if (ascii.empty() || ascii.size() >= 64) return false;
    encoded += ascii;
  }
  if (trailing_dot) encoded += '.';
  out = std::move(encoded);
  return true;
}

bool is_scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

bool in_list(std::string_view scheme, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), scheme) != list.end();
}

// urllib.parse's uses_params and uses_netloc: which schemes split ";params" off the path, and
// which get "//" even with an empty netloc.
bool uses_params(std::string_view scheme) {
  return in_list(scheme, {"", "ftp", "hdl", "prospero", "http", "imap", "https", "shttp", "rtsp",
                          "rtspu", "sip", "sips", "mms", "sftp", "tel"});
}
bool uses_netloc(std::string_view scheme) {
  return in_list(scheme, {"", "ftp", "http", "gopher", "nntp", "telnet", "imap", "wais", "file",
                          "mms", "https", "shttp", "snews", "prospero", "rtsp", "rtspu", "rsync",
                          "svn", "svn+ssh", "sftp", "nfs", "git", "git+ssh", "ws", "wss"});
}

}  // namespace

std::string canonicalize_url(std::string_view input) {
  // w3lib's _strip: C0 controls and space off both ends, tab/CR/LF removed anywhere.
  auto is_c0_or_space = [](char c) { return static_cast<unsigned char>(c) <= 0x20; };
  while (!input.empty() && is_c0_or_space(input.front())) input.remove_prefix(1);
  while (!input.empty() && is_c0_or_space(input.back())) input.remove_suffix(1);
  std::string stripped;
  std::string_view url = input;
  if (input.find_first_of("\t\r\n") != std::string_view::npos) {
    stripped.reserve(input.size());
    for (char c : input) {
      if (c != '\t' && c != '\r' && c != '\n') stripped += c;
    }
    url = stripped;
  }

  // urlsplit
  std::string scheme;
  std::size_t colon = url.find(':');
  if (colon != std::string_view::npos && colon > 0 &&
      ((url[0] >= 'a' && url[0] <= 'z') || (url[0] >= 'A' && url[0] <= 'Z')) &&
      std::all_of(url.begin(), url.begin() + colon, is_scheme_char)) {
    lower_ascii_into(scheme, url.substr(0, colon));
    url.remove_prefix(colon + 1);
  }
  std::string_view netloc;
  if (url.starts_with("//")) {
    std::size_t end = url.find_first_of("/?#", 2);
    netloc = url.substr(2, end == std::string_view::npos ? std::string_view::npos : end - 2);
    url.remove_prefix(std::min(url.size(), end));
    bool open = netloc.find('[') != std::string_view::npos;
    bool close = netloc.find(']') != std::string_view::npos;
    if (open != close) {
      throw url_error("invalid URL '" + std::string(input) + "': unbalanced '[' or ']' in the host (Invalid IPv6 URL)");
    }
  }
  if (std::size_t hash = url.find('#'); hash != std::string_view::npos) url = url.substr(0, hash);
  std::string_view query;
  if (std::size_t question = url.find('?'); question != std::string_view::npos) {
    query = url.substr(question + 1);
    url = url.substr(0, question);
  }
  std::string_view path = url, params;
  if (uses_params(scheme) && path.find(';') != std::string_view::npos) {
    std::size_t slash = path.rfind('/');
    std::size_t semicolon = slash == std::string_view::npos ? path.find(';') : path.find(';', slash);
    if (semicolon != std::string_view::npos) {
      params = path.substr(semicolon + 1);
      path = path.substr(0, semicolon);
    }
  }

  std::string host;
  if (!netloc.empty()) {
    std::string idna;
    lower_ascii_into(host, !is_ascii(netloc) && idna_encode(netloc, idna) ? std::string_view(idna) : netloc);
    while (!host.empty() && host.back() == ':') host.pop_back();
  }
  std::string path_and_params;
  path_and_params.reserve(path.size() + 8);
  normalise_path_into(path_and_params, path);
  if (path_and_params.empty()) path_and_params = "/";
  if (!params.empty()) {
    path_and_params += ';';
    quote_into(path_and_params, params, safe_chars);
  }

  // urlunsplit
  std::string out;
  out.reserve(input.size() + 16);
  if (!scheme.empty()) {
    out += scheme;
    out += ':';
  }
  if (!host.empty() ||
      (!scheme.empty() && uses_netloc(scheme) && !path_and_params.starts_with("//"))) {
    out += "//";
    out += host;
    if (path_and_params.front() != '/') out += '/';
  }
  out += path_and_params;

  // parse_qsl_to_bytes(keep_blank_values=True), sort, urlencode.
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t start = 0;
  while (start <= query.size() && !query.empty()) {
    std::size_t end = query.find_first_of("&;", start);
    std::string_view piece = query.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!piece.empty()) {
      std::size_t equals = piece.find('=');
      auto& [key, value] = pairs.emplace_back();
      unquote_into(key, piece.substr(0, equals), true);
      if (equals != std::string_view::npos) unquote_into(value, piece.substr(equals + 1), true);
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (!pairs.empty()) {
    std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
      // Python compares bytes as unsigned; std::string compares char, which may be signed.
      auto as_bytes = [](const std::string& s) {
        return std::basic_string_view<unsigned char>(reinterpret_cast<const unsigned char*>(s.data()), s.size());
      };
      if (int c = as_bytes(a.first).compare(as_bytes(b.first)); c != 0) return c < 0;
      return as_bytes(a.second) < as_bytes(b.second);
    });
    out += '?';
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      if (i) out += '&';
      quote_plus_into(out, pairs[i].first);
      out += '=';
      quote_plus_into(out, pairs[i].second);
    }
  }
  return out;
}

}  // namespace crawler::dedup
