// Redis Cluster's key space: 16384 hash slots, a key's slot from CRC16 of its name (or of its hash
// tag, the text between the first '{' and the next '}' when that is not empty), and which word of
// a command is the key a cluster routes it by.
//
//   redis::key_slot("books:requests");                  // 0..16383
//   redis::key_slot("{books}:requests") == redis::key_slot("{books}:dupefilter");   // one node
//   redis::routing_key({"EVALSHA", sha, "2", "k1", "k2"});   // "k1"
//
// Keys that one script or one multi-key command touches must share a slot: give them one hash
// tag. Redis answers CROSSSLOT to a command whose keys do not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crawler::redis {

inline constexpr std::uint16_t cluster_slot_count = 16384;

/// The hash slot of `key`, as every Redis Cluster node computes it.
std::uint16_t key_slot(std::string_view key);

/// The hash tag of `key` ("books" in "{books}:requests"), or nullopt when it has none, so that
/// its slot follows from the whole name and the keys a suffix derives from it lie elsewhere.
std::optional<std::string_view> hash_tag(std::string_view key);

/// The key `args` is routed by: its first key (EVAL and EVALSHA: the first of their KEYS), or
/// nullopt for a command that names none (PING, TIME, INFO, an EVAL with no keys...).
std::optional<std::string_view> routing_key(const std::vector<std::string>& args);

}  // namespace crawler::redis
