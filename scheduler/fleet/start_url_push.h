// `crawler push`'s work, where the fleet's keys are known: start URL entries checked before
// anything is sent, signed and numbered when the fleet has a signing key, and written to the
// spider's start key (REDIS_START_URLS_KEY, as a list, set or sorted set as REDIS_START_URLS_AS_*
// say).
//
//   crawler::start_url_push push(settings, "books");
//   push.add("https://books.example/", "argument 1");     // a bad entry throws, naming its place
//   push.add(R"({"url": "https://books.example/s", "q": "dune"})", "stdin:2");
//   auto pushed = push.send(client);                     // how many; push.key() names the key
//
// With SCHEDULER_SIGNING_KEY in the environment every entry is signed (a plain URL as {"url":
// ...}) and numbered from <start key>:seq, so the workers take it as the operator's own rather
// than anyone's, and read it once however often it is copied (start_request.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "redis/client.h"
#include "scheduler/fleet/entry_signature.h"

namespace crawler {

class start_url_push {
 public:
  /// The start key of `spider`'s fleet under `settings` (a cluster's hash tag included).
  start_url_push(const settings& settings, std::string_view spider);

  /// Queues `entry` for send(). An unsigned entry is checked now, a signed one once it has its
  /// number: each throws std::invalid_argument "WHERE: what is wrong" (start_request_from's
  /// reasons, or an entry over SCHEDULER_MAX_ENTRY_SIZE, which every worker would set aside).
  void add(std::string entry, const std::string& where);
  /// Numbers and signs the entries (with a signing key), then writes them, a thousand per round
  /// trip. Returns how many; throws std::invalid_argument for an entry that does not check and
  /// std::runtime_error naming the key and Redis's answer when Redis refuses.
  std::size_t send(redis::client& client);
  /// The key the entries go to.
  const std::string& key() const { return key_; }

 private:
  void check(std::string& entry, const std::string& where, std::uint64_t number) const;

  std::string key_;
  std::string type_;  // list, set or zset
  std::size_t largest_;
  std::optional<entry_signer> signer_;
  std::vector<std::string> entries_, places_;
};

}  // namespace crawler
