#include "request/python_json.h"

namespace crawler {

std::string with_python_separators(std::string_view compact) {
  std::string out;
  out.reserve(compact.size() + compact.size() / 8);
  bool in_string = false, escaped = false;
  for (char c : compact) {
    out += c;
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == ',' || c == ':') {
      out += ' ';
    }
  }
  return out;
}

}  // namespace crawler
