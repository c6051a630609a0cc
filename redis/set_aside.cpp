#include "redis/set_aside.h"

namespace crawler::redis {

std::string encode_set_aside(const nlohmann::json& header, std::string_view value) {
  // ensure_ascii: a reason quoting input stays one line of ASCII whatever bytes it quotes.
  auto out = header.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  out += '\n';
  out.append(value);
  return out;
}

std::optional<set_aside_record> decode_set_aside(std::string_view record) {
  auto newline = record.find('\n');
  auto header = nlohmann::json::parse(record.substr(0, newline), nullptr, false);
  if (!header.is_object() || !header.contains("reason")) return std::nullopt;
  if (newline != std::string_view::npos) {
    return set_aside_record{std::move(header), std::string(record.substr(newline + 1))};
  }
  // The earlier form: the value inside, as text.
  auto entry = header.find("entry");
  if (entry == header.end() || !entry->is_string()) return std::nullopt;
  auto value = entry->get<std::string>();
  header.erase("entry");
  return set_aside_record{std::move(header), std::move(value)};
}

}  // namespace crawler::redis
