#include "crawler/parse/detail/plain_urljoin.h"

#include "dedup/url_bytes.h"

namespace crawler::detail {
namespace {

// Characters a URI reference holds unescaped (RFC 3986: unreserved, sub-delims, ':' '@' '/' '?').
constexpr bool is_plain(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '-': case '.': case '_': case '~': case '!': case '$': case '&': case '\'': case '(':
    case ')': case '*': case '+': case ',': case ';': case '=': case ':': case '@': case '/':
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

// RFC 3986 section 5.2.4, for a path that starts with '/'.
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

}  // namespace

std::optional<std::string> plain_urljoin(std::string_view base, std::string_view link) {
  if (link.empty() || link.starts_with("//") || !all_plain(link) || !all_plain(base)) {
    return std::nullopt;
  }
  // A ':' before any '/', '?' or '#' is a scheme (or a first segment the parser must judge).
  auto first = link.find_first_of(":/?#");
  if (first != std::string_view::npos && link[first] == ':') return std::nullopt;

  auto scheme_end = base.find("://");
  if (scheme_end == 0 || scheme_end == std::string_view::npos) return std::nullopt;
  for (std::size_t i = 0; i < scheme_end; ++i) {
    char c = base[i];
    bool ok = (c >= 'a' && c <= 'z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return std::nullopt;
  }
  auto path_start = base.find_first_of("/?#", scheme_end + 3);
  if (path_start == std::string_view::npos) path_start = base.size();
  auto origin = base.substr(0, path_start);
  auto base_rest = base.substr(path_start);
  auto base_path = base_rest.substr(0, base_rest.find_first_of("?#"));
  auto base_query = base_rest.substr(base_path.size());
  base_query = base_query.substr(0, base_query.find('#'));

  auto path = link.substr(0, link.find_first_of("?#"));
  auto tail = link.substr(path.size());  // the link's ?query and #fragment

  std::string joined;
  joined.reserve(origin.size() + base_path.size() + link.size() + base_query.size());
  joined.append(origin);
  if (path.empty()) {
    joined.append(base_path);
    if (!tail.starts_with('?')) joined.append(base_query);
  } else if (path.front() == '/') {
    append_without_dot_segments(joined, path);
  } else {
    std::string merged;
    auto slash = base_path.rfind('/');
    if (slash == std::string_view::npos) {
      merged = "/";
    } else {
      merged.append(base_path.substr(0, slash + 1));
    }
    merged.append(path);
    append_without_dot_segments(joined, merged);
  }
  joined.append(tail);
  return joined;
}

}  // namespace crawler::detail
