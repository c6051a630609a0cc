// Reading a string another program may have written (a marker, a version, a filter's
// parameters) without taking all of it: a value a hundred megabytes long would otherwise cross
// the wire and sit in the reader's memory only to be found wrong.
//
//   client->async_command(crawler::redis::bounded_get("books:requests:shards", 256), ...);
//   // nil when the key is missing; else its first 256 bytes (STRLEN says if there is more)
#pragma once

#include <cstddef>
#include <string>

#include "redis/reply.h"

namespace crawler::redis {

/// KEYS the key; ARGV the last byte to return (most - 1). Nil for a missing key.
inline constexpr const char* bounded_get_script = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[1]))
)lua";

/// The command that answers the first `most` bytes of the string at `key` (at least 1), or nil.
inline command bounded_get(const std::string& key, std::size_t most) {
  return {"EVAL", bounded_get_script, "1", key, std::to_string(most > 0 ? most - 1 : 0)};
}

}  // namespace crawler::redis
