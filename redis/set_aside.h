// A record of a :bad or :dead list: a value the fleet could not use, kept byte for byte, with
// where it was and why.
//
//   {"key":"books:requests","reason":"...","worker":"host:4242"}
//   <the value's bytes, exactly as they were in Redis>
//
//   auto record = crawler::redis::decode_set_aside(stored);
//   if (record) put_back(record->header["key"], record->value);   // byte-equal to what was taken
//
// A Redis string holds any bytes: a scrapy-redis pickle, text in another encoding, NULs. JSON
// cannot (a JSON writer replaces what is not UTF-8), so the value is not inside the JSON: the
// header is one line of ASCII JSON (Lua's cjson and nlohmann with ensure_ascii never write a raw
// newline), and everything after the first newline is the value. Lua scripts write records with
// lua_set_aside_record, C++ with encode_set_aside; `crawler requeue` and `crawler status` read
// them with decode_set_aside.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace crawler::redis {

struct set_aside_record {
  /// "key" (where the value was) and "reason", plus what its writer knew: "field" (of a hash),
  /// "score" (in a sorted set), "worker", "deliveries".
  nlohmann::json header;
  std::string value;
};

/// The record of `value`, set aside with `header` (an object).
std::string encode_set_aside(const nlohmann::json& header, std::string_view value);

/// Reads a record; nullopt for a line that is not one (another program pushed it). Records of
/// releases before this form (one JSON object holding the value as its "entry") read too.
std::optional<set_aside_record> decode_set_aside(std::string_view record);

/// Lua: set_aside_record(header, value), the record of `value` as encode_set_aside writes it.
inline constexpr const char* lua_set_aside_record = R"lua(
local function set_aside_record(header, value)
  return cjson.encode(header) .. '\n' .. value
end
)lua";

}  // namespace crawler::redis
