// Signed fleet entries (SCHEDULER_SIGNING_KEY): the fleet's own queue entries carry an HMAC, so a
// worker can tell them from what anyone else who reaches Redis wrote.
//
//   export SCHEDULER_SIGNING_KEY=$(openssl rand -hex 32)   # the same on every worker, producer
//   auto signer = crawler::entry_signer::from_environment(); // nullopt when the variable is unset
//   auto queue = signer->bound_to("books:requests");          // signatures valid in that key only
//   auto body = queue.sign(request.to_json().dump());          // {"hmac":"<64 hex>","meta":...}
//   queue.check(body);                                         // entry_signer::verdict::valid
//
// With a key, every queue and lease entry a worker writes, and every start URL `crawler push`
// writes, is signed. A queue entry without a valid signature is set aside in :bad and never runs;
// a signed one is the fleet's own and may do what the request that made it could (meta "proxy",
// dont_filter and "allow_offsite" past the offsite filter), though still only over http(s). A
// start URL without a signature is read as every start URL is without a key (a Python producer
// cannot sign): a shared request (shared_request.h). Without a key nothing is signed or checked.
//
// The signature is HMAC-SHA256 of the Redis key the entry is written to, a newline, the entry's
// number (16 digits, written before it as "<number>|") and '|', and the entry's JSON text. It is
// written as the JSON's first member, so the bytes checked are the bytes written: nothing is
// re-serialized. The key is in the signature so that an entry copied from one queue (another
// spider's, a start-URL list) into another is forged there, and the number so that a copy
// renumbered is (each number runs once: lua/settled.lua, settle_once; start URLs are read
// once: start_request.h). Any producer can sign: hmac.new(key,
// f"{redis_key}\n{number}|{body}".encode(), "sha256").hexdigest() in Python.
// The key is read from the environment only, never from settings, and is never logged.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace crawler {

class entry_signer {
 public:
  /// The key the environment variable SCHEDULER_SIGNING_KEY holds, or nullopt when it is unset
  /// or empty. Throws std::invalid_argument when it is shorter than 16 bytes.
  static std::optional<entry_signer> from_environment();
  /// Throws std::invalid_argument when `key` is shorter than 16 bytes. Keeps no copy of the key,
  /// only SHA-256 states derived from it. Copies share them; any thread may sign and check.
  explicit entry_signer(std::string_view key);

  /// This signer, its signatures bound to `scope`: the Redis key its entries are written to and
  /// read from. Throws std::invalid_argument for an empty scope or one that holds a newline.
  entry_signer bound_to(std::string_view scope) const;
  /// The key its signatures are bound to; "" until bound_to.
  const std::string& scope() const { return scope_; }

  /// `body`, the text of a JSON object, with {"hmac":"<hex>", in front of its first member.
  /// With an `id` (a queue entry's number, written before it as "<id>|"), the signature covers
  /// it too: the HMAC of "<scope>\n<id>|<body>". Throws std::logic_error when the signer is not
  /// bound to a key.
  std::string sign(std::string_view body, std::string_view id = {}) const;

  enum class verdict {
    valid,    // signed with this key
    missing,  // no "hmac" member in front
    forged,   // an "hmac" member that this key did not write
  };
  /// Whether `entry` is signed with this key for this scope; with valid, `body` is set to the
  /// JSON object that was signed (the entry without its "hmac" member). Throws std::logic_error
  /// when the signer is not bound to a key.
  verdict check(std::string_view entry, std::string* body = nullptr,
                std::string_view id = {}) const;

 private:
  struct keyed_digests;
  static std::shared_ptr<const keyed_digests> digests_for(std::string_view key);
  std::string mac_hex(std::string_view body, std::string_view id) const;
  std::shared_ptr<const keyed_digests> digests_;
  std::string scope_;
};

}  // namespace crawler
