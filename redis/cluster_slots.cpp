#include "redis/cluster_slots.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace crawler::redis {
namespace {

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum the cluster spec names.
constexpr std::array<std::uint16_t, 256> crc16_table = [] {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    std::uint16_t crc = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    table[byte] = crc;
  }
  return table;
}();

std::uint16_t crc16(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (unsigned char c : bytes)
    crc = static_cast<std::uint16_t>((crc << 8) ^ crc16_table[((crc >> 8) ^ c) & 0xff]);
  return crc;
}

bool named(std::string_view word, std::string_view name) {
  return word.size() == name.size() &&
         std::equal(word.begin(), word.end(), name.begin(), [](char a, char b) {
           return std::toupper(static_cast<unsigned char>(a)) == b;
         });
}

}  // namespace

std::optional<std::string_view> hash_tag(std::string_view key) {
  auto open = key.find('{');
  if (open == std::string_view::npos) return std::nullopt;
  auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return std::nullopt;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) {
  return crc16(hash_tag(key).value_or(key)) & (cluster_slot_count - 1);
}

std::optional<std::string_view> routing_key(const std::vector<std::string>& args) {
  if (args.size() < 2) return std::nullopt;
  const std::string& name = args[0];
  if (named(name, "EVAL") || named(name, "EVALSHA") || named(name, "EVAL_RO") ||
      named(name, "EVALSHA_RO") || named(name, "FCALL") || named(name, "FCALL_RO")) {
    // EVAL script numkeys key...: the first key, when the count says there is one and it is there.
    if (args.size() < 4) return std::nullopt;
    unsigned keys = 0;
    auto [end, ec] = std::from_chars(args[2].data(), args[2].data() + args[2].size(), keys);
    if (ec != std::errc() || keys == 0) return std::nullopt;
    return std::string_view(args[3]);
  }
  // The commands whose second word is not a key, or that name no key at all.
  for (std::string_view keyless :
       {"PING", "TIME", "INFO", "SCRIPT", "CLUSTER", "CLIENT", "CONFIG", "COMMAND", "DBSIZE",
        "FLUSHDB", "FLUSHALL", "SCAN", "KEYS", "ECHO", "MODULE", "SELECT", "AUTH", "HELLO",
        "ASKING", "READONLY", "READWRITE", "RANDOMKEY", "WAIT", "DEBUG", "SLOWLOG", "LATENCY",
        "FUNCTION", "MULTI", "EXEC", "DISCARD", "SHUTDOWN", "MONITOR", "LASTSAVE", "SAVE",
        "BGSAVE", "BGREWRITEAOF", "ROLE", "SWAPDB", "ACL"}) {
    if (named(name, keyless)) return std::nullopt;
  }
  if (named(name, "OBJECT") || named(name, "MEMORY") || named(name, "BITOP") ||
      named(name, "XINFO") || named(name, "XGROUP")) {
    if (args.size() < 3) return std::nullopt;
    return std::string_view(args[2]);
  }
  return std::string_view(args[1]);
}

}  // namespace crawler::redis
