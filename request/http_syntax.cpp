#include "request/http_syntax.h"

#include <string_view>

namespace crawler {
namespace {

// RFC 9110, section 5.6.2: tchar.
bool is_token_byte(unsigned char c) {
  if (c <= 0x20 || c >= 0x7f) return false;
  return std::string_view("\"(),/:;<=>?@[\\]{}").find(char(c)) == std::string_view::npos;
}

std::string describe_byte(unsigned char c) {
  switch (c) {
    case '\r':
      return "a carriage return";
    case '\n':
      return "a line feed";
    case '\0':
      return "a NUL";
    case ' ':
      return "a space";
    case '\t':
      return "a tab";
  }
  static constexpr char hex[] = "0123456789ABCDEF";
  if (c < 0x20 || c == 0x7f) return std::string("control byte 0x") + hex[c >> 4] + hex[c & 15];
  return std::string("\"") + char(c) + "\"";
}

std::string token_problem(std::string_view text, const char* what, const char* rfc) {
  if (text.empty()) return std::string("it is empty; a ") + what + " is a token (" + rfc + ")";
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (!is_token_byte(c)) {
      return "it holds " + describe_byte(c) + " (byte " + std::to_string(i) + "); a " + what +
             " is a token (" + rfc + ")";
    }
  }
  return {};
}

}  // namespace

std::string field_name_problem(std::string_view name) {
  return token_problem(name, "field name", "RFC 9110, section 5.1");
}

std::string method_problem(std::string_view method) {
  return token_problem(method, "method", "RFC 9110, section 9.1");
}

std::string field_value_problem(std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return "its value holds " + describe_byte(c) + " (byte " + std::to_string(i) +
             "); a field value is visible characters, spaces and tabs (RFC 9110, section 5.5)";
    }
  }
  return {};
}

std::string url_problem(std::string_view url) {
  for (std::size_t i = 0; i < url.size(); ++i) {
    auto c = static_cast<unsigned char>(url[i]);
    if (c < 0x20 || c == 0x7f) {
      return "its URL holds " + describe_byte(c) + " (byte " + std::to_string(i) +
             "), which a request line cannot carry";
    }
  }
  return {};
}

std::string request_syntax_problem(const request& request) {
  if (auto problem = url_problem(request.url); !problem.empty()) return problem;
  if (auto problem = method_problem(request.method); !problem.empty()) return "method: " + problem;
  for (const auto& [name, value] : request.headers) {
    if (auto problem = field_name_problem(name); !problem.empty()) {
      return "a header name: " + problem;
    }
    if (auto problem = field_value_problem(value); !problem.empty()) {
      return "header \"" + name + "\": " + problem;
    }
  }
  return {};
}

}  // namespace crawler
