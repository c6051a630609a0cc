#include "scheduler/fleet/entry_signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace crawler {
namespace {

constexpr std::string_view prefix = "{\"hmac\":\"";
constexpr std::size_t hex_digits = 64;  // SHA-256
constexpr std::size_t minimum_key = 16;

}  // namespace

std::optional<entry_signer> entry_signer::from_environment() {
  const char* key = std::getenv("SCHEDULER_SIGNING_KEY");
  if (!key || !*key) return std::nullopt;
  return entry_signer(key);
}

entry_signer::entry_signer(std::string_view key) {
  if (key.size() < minimum_key) {
    // The key itself is never quoted: only its length.
    throw std::invalid_argument("SCHEDULER_SIGNING_KEY: must be at least " +
                                std::to_string(minimum_key) + " bytes (it has " +
                                std::to_string(key.size()) +
                                "); e.g. export SCHEDULER_SIGNING_KEY=$(openssl rand -hex 32)");
  }
  digests_ = digests_for(key);
}

// HMAC (RFC 2104) with the key's inner and outer SHA-256 states worked out once, here: OpenSSL's
// one-shot HMAC() sets its context up anew for every call, which cost 2 us an entry, and a worker
// signs every link it queues.
struct entry_signer::keyed_digests {
  EVP_MD_CTX* inner = EVP_MD_CTX_new();
  EVP_MD_CTX* outer = EVP_MD_CTX_new();
  ~keyed_digests() {
    EVP_MD_CTX_free(inner);
    EVP_MD_CTX_free(outer);
  }
};

std::shared_ptr<const entry_signer::keyed_digests> entry_signer::digests_for(std::string_view key) {
  constexpr std::size_t block = 64;  // SHA-256's block size
  unsigned char padded[block] = {};
  unsigned int length = 0;
  if (key.size() > block) {
    EVP_Digest(key.data(), key.size(), padded, &length, EVP_sha256(), nullptr);
  } else {
    std::copy(key.begin(), key.end(), padded);
  }
  auto digests = std::make_shared<keyed_digests>();
  unsigned char pad[block];
  for (auto [context, byte] : {std::pair{digests->inner, 0x36}, std::pair{digests->outer, 0x5c}}) {
    for (std::size_t i = 0; i < block; ++i) pad[i] = padded[i] ^ byte;
    if (!context || EVP_DigestInit_ex(context, EVP_sha256(), nullptr) != 1 ||
        EVP_DigestUpdate(context, pad, block) != 1) {
      throw std::runtime_error("SCHEDULER_SIGNING_KEY: OpenSSL cannot set up SHA-256");
    }
  }
  OPENSSL_cleanse(padded, sizeof padded);
  OPENSSL_cleanse(pad, sizeof pad);
  return digests;
}

entry_signer entry_signer::bound_to(std::string_view scope) const {
  if (scope.empty() || scope.find('\n') != std::string_view::npos) {
    throw std::invalid_argument("SCHEDULER_SIGNING_KEY: entries are signed for a Redis key, and \"" +
                                std::string(scope.substr(0, 200)) +
                                "\" is none (empty, or holds a newline)");
  }
  entry_signer bound = *this;
  bound.scope_ = scope;
  return bound;
}

std::string entry_signer::mac_hex(std::string_view body, std::string_view id) const {
  if (scope_.empty()) throw std::logic_error("entry_signer: not bound to a Redis key (bound_to)");
  // One working context per thread, so a signer may be shared by threads.
  thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> work(EVP_MD_CTX_new(),
                                                                            &EVP_MD_CTX_free);
  unsigned char inner[EVP_MAX_MD_SIZE], mac[EVP_MAX_MD_SIZE];
  unsigned int inner_length = 0, length = 0;
  if (EVP_MD_CTX_copy_ex(work.get(), digests_->inner) != 1 ||
      EVP_DigestUpdate(work.get(), scope_.data(), scope_.size()) != 1 ||
      EVP_DigestUpdate(work.get(), "\n", 1) != 1 ||
      (!id.empty() && (EVP_DigestUpdate(work.get(), id.data(), id.size()) != 1 ||
                       EVP_DigestUpdate(work.get(), "|", 1) != 1)) ||
      EVP_DigestUpdate(work.get(), body.data(), body.size()) != 1 ||
      EVP_DigestFinal_ex(work.get(), inner, &inner_length) != 1 ||
      EVP_MD_CTX_copy_ex(work.get(), digests_->outer) != 1 ||
      EVP_DigestUpdate(work.get(), inner, inner_length) != 1 ||
      EVP_DigestFinal_ex(work.get(), mac, &length) != 1) {
    throw std::runtime_error("entry_signer: OpenSSL failed to compute an HMAC-SHA256");
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += digits[mac[i] >> 4];
    hex += digits[mac[i] & 15];
  }
  return hex;
}

std::string entry_signer::sign(std::string_view body, std::string_view id) const {
  if (body.size() < 2 || body.front() != '{') {
    throw std::invalid_argument("entry_signer::sign: not a JSON object");
  }
  std::string signed_body(prefix);
  signed_body += mac_hex(body, id);
  signed_body += '"';
  // {"hmac":"...","url":...} — or {"hmac":"..."} for an empty object.
  if (body.substr(1).find_first_not_of(" \t\r\n") != std::string_view::npos &&
      body[body.find_first_not_of(" \t\r\n", 1)] != '}') {
    signed_body += ',';
  }
  signed_body += body.substr(1);
  return signed_body;
}

entry_signer::verdict entry_signer::check(std::string_view entry, std::string* body,
                                          std::string_view id) const {
  if (!entry.starts_with(prefix)) return verdict::missing;
  auto mac = entry.substr(prefix.size(), hex_digits);
  auto rest = entry.substr(std::min(entry.size(), prefix.size() + hex_digits));
  if (mac.size() != hex_digits || !rest.starts_with('"')) return verdict::forged;
  rest.remove_prefix(1);
  std::string original = "{";
  original += rest.starts_with(',') ? rest.substr(1) : rest;
  auto expected = mac_hex(original, id);
  if (CRYPTO_memcmp(expected.data(), mac.data(), hex_digits) != 0) return verdict::forged;
  if (body) *body = std::move(original);
  return verdict::valid;
}

}  // namespace crawler
