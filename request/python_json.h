// JSON as Python's json.dumps writes it by default: ", " and ": " between members, everything past
// ASCII escaped as \uXXXX. What Python programs that read our output (scrapy-redis's item
// consumers, an API that compares bodies) expect byte for byte. Keys come in the value's own
// order: sorted for nlohmann::json (json.dumps(..., sort_keys=True)), as inserted for
// nlohmann::ordered_json (a dict's order, as an item's fields).
//
//   crawler::python_json_dumps(nlohmann::json{{"b", 1}, {"a", "é"}})   // {"a": "\u00e9", "b": 1}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace crawler {

/// `compact` (nlohmann's dump with no indent, ASCII only) with Python's separators.
std::string with_python_separators(std::string_view compact);

/// `value` as json.dumps writes it; invalid UTF-8 becomes U+FFFD.
template <typename Json>
std::string python_json_dumps(const Json& value) {
  return with_python_separators(value.dump(-1, ' ', true, Json::error_handler_t::replace));
}

}  // namespace crawler
