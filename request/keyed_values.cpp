#include "request/keyed_values.h"

namespace crawler {

const nlohmann::json& keyed_values::operator[](std::string_view key) const {
  if (values_.is_object()) {
    if (auto found = values_.find(key); found != values_.end()) return *found;
  }
  std::string held;
  if (values_.is_object()) {
    for (const auto& [name, value] : values_.items()) held += (held.empty() ? "" : ", ") + name;
  }
  throw missing_key("response." + std::string(what_) + "() has no key \"" + std::string(key) +
                    "\" (" + (held.empty() ? "it is empty" : "it holds " + held) +
                    "); .value(key, default) or .contains(key) read one that may be missing");
}

}  // namespace crawler
