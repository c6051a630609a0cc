#include "crawler/parse/plain_url.h"

#include "request/url_bytes.h"

namespace crawler {
namespace {

// Characters a URI reference holds unescaped (RFC 3986: unreserved, sub-delims, ':' '@' '/' '?').
constexpr bool is_plain(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
    case ':':
    case '@':
    case '/':
    case '?':
      return true;
    default:
      return false;
  }
}

// Plain characters, valid escapes and at most one '#'.
bool all_plain(std::string_view text) {
  bool fragment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (is_plain(c)) continue;
    if (c == '%' && dedup::is_escape(text, i)) continue;
    if (c == '#' && !fragment) {
      fragment = true;
      continue;
    }
    return false;
  }
  return true;
}

// The first of `a`, `b` or `c` in `text`, or npos; `text` has passed all_plain, so the default
// NUL never matches. (string_view::find_first_of calls memchr on the set for every character: a
// tenth of a links-only crawl.)
std::size_t find_any(std::string_view text, char a, char b, char c = '\0') {
  for (std::size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == a || ch == b || ch == c) return i;
  }
  return std::string_view::npos;
}

// The length of a lower-case scheme followed by "://" at the start of `text`, or 0.
std::size_t scheme_length(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    bool ok = (c >= 'a' && c <= 'z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) break;
    ++i;
  }
  return i > 0 && text.substr(i).starts_with("://") ? i : 0;
}

// The authority, path, query and fragment of what follows "scheme:" (text starts with "//").
plain_url_parts split_after_scheme(std::string_view scheme, std::string_view text) {
  plain_url_parts parts;
  parts.scheme = scheme;
  text.remove_prefix(2);
  auto authority_end = find_any(text, '/', '?', '#');
  if (authority_end == std::string_view::npos) authority_end = text.size();
  parts.authority = text.substr(0, authority_end);
  auto host = parts.authority;
  if (auto at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
  if (auto colon = host.rfind(':'); colon != std::string_view::npos) host = host.substr(0, colon);
  parts.host = host;
  auto rest = text.substr(authority_end);
  parts.path = rest.substr(0, find_any(rest, '?', '#'));
  rest.remove_prefix(parts.path.size());
  parts.query = rest.substr(0, rest.find('#'));
  parts.fragment = rest.substr(parts.query.size());
  return parts;
}

bool has_dot_segment(std::string_view path) {
  for (std::size_t at = path.find('.'); at != std::string_view::npos; at = path.find('.', at + 1)) {
    bool starts = at == 0 || path[at - 1] == '/';
    std::size_t end = at + 1;
    if (end < path.size() && path[end] == '.') ++end;
    if (starts && (end == path.size() || path[end] == '/')) return true;
  }
  return false;
}

// RFC 3986 section 5.2.4 for a path that starts with '/', appended to `out` after its origin.
void append_without_dot_segments(std::string& out, std::string_view in) {
  const auto root = out.size();
  auto drop_last_segment = [&] {
    auto slash = out.rfind('/');
    out.resize(slash == std::string::npos || slash < root ? root : slash);
  };
  while (!in.empty()) {
    if (in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../")) {
      in.remove_prefix(3);
      drop_last_segment();
    } else if (in == "/..") {
      in = "/";
      drop_last_segment();
    } else {
      auto end = in.find('/', 1);
      if (end == std::string_view::npos) end = in.size();
      out.append(in.substr(0, end));
      in.remove_prefix(end);
    }
  }
}

// scheme "://" authority, then `path` without dot segments, then `tail` (query and fragment).
std::string assemble(std::string_view scheme, std::string_view authority, std::string_view path,
                     std::string_view tail) {
  std::string out;
  out.reserve(scheme.size() + 3 + authority.size() + path.size() + tail.size());
  out.append(scheme).append("://").append(authority);
  append_without_dot_segments(out, path);
  out.append(tail);
  return out;
}

}  // namespace

std::optional<plain_url_parts> split_plain_url(std::string_view url) {
  auto scheme = scheme_length(url);
  if (scheme == 0 || !all_plain(url)) return std::nullopt;
  auto parts = split_after_scheme(url.substr(0, scheme), url.substr(scheme + 1));
  // The parser decodes an escaped host; callers compare hosts as names.
  if (parts.authority.find('%') != std::string_view::npos) return std::nullopt;
  return parts;
}

std::optional<std::string> plain_urljoin(std::string_view base_text, std::string_view link) {
  if (link.empty() || !all_plain(link)) return std::nullopt;
  if (auto scheme = scheme_length(link)) {
    // Absolute: the link itself, its path without dot segments.
    auto parts = split_after_scheme(link.substr(0, scheme), link.substr(scheme + 1));
    if (!has_dot_segment(parts.path)) return std::string(link);
    auto tail = link.substr(link.size() - parts.query.size() - parts.fragment.size());
    return assemble(parts.scheme, parts.authority, parts.path, tail);
  }
  // A ':' before any '/', '?' or '#' is a scheme the parser must judge (or a first segment).
  auto first = find_any(link, ':', '/', '?');
  if (first != std::string_view::npos && link[first] == ':' && first < link.find('#')) {
    return std::nullopt;
  }
  auto base = split_plain_url(base_text);
  if (!base) return std::nullopt;

  if (link.starts_with("//")) {
    auto parts = split_after_scheme(base->scheme, link);
    auto tail = link.substr(link.size() - parts.query.size() - parts.fragment.size());
    return assemble(base->scheme, parts.authority, parts.path, tail);
  }
  auto path = link.substr(0, find_any(link, '?', '#'));
  auto tail = link.substr(path.size());  // the link's ?query and #fragment
  if (path.empty()) {
    // Only a query or a fragment: the base's path, as it is.
    std::string out(
        base_text.substr(0, base_text.size() - base->query.size() - base->fragment.size()));
    if (!tail.starts_with('?')) out.append(base->query);
    out.append(tail);
    return out;
  }
  if (path.front() == '/') return assemble(base->scheme, base->authority, path, tail);
  std::string merged;
  auto slash = base->path.rfind('/');
  if (slash == std::string_view::npos) {
    merged = "/";
  } else {
    merged.append(base->path.substr(0, slash + 1));
  }
  merged.append(path);
  return assemble(base->scheme, base->authority, merged, tail);
}

}  // namespace crawler
