// JSON as Python's json.dumps writes it by default: keys sorted (nlohmann's objects are), ", "
// and ": " between members, everything past ASCII escaped as \uXXXX. What Python programs that
// read our output (scrapy-redis's item consumers, an API that compares bodies) expect byte for
// byte.
//
//   crawler::python_json_dumps({{"b", 1}, {"a", "é"}})   // {"a": "\u00e9", "b": 1}
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace crawler {

/// `value` as json.dumps(value, sort_keys=True) writes it; invalid UTF-8 becomes U+FFFD.
std::string python_json_dumps(const nlohmann::json& value);

}  // namespace crawler
