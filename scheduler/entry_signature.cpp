#include "scheduler/entry_signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdlib>
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

entry_signer::entry_signer(std::string key) : key_(std::move(key)) {
  if (key_.size() < minimum_key) {
    // The key itself is never quoted: only its length.
    throw std::invalid_argument("SCHEDULER_SIGNING_KEY: must be at least " +
                                std::to_string(minimum_key) + " bytes (it has " +
                                std::to_string(key_.size()) +
                                "); e.g. export SCHEDULER_SIGNING_KEY=$(openssl rand -hex 32)");
  }
}

std::string entry_signer::mac_hex(std::string_view body) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key_.data(), int(key_.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &length);
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += digits[mac[i] >> 4];
    hex += digits[mac[i] & 15];
  }
  return hex;
}

std::string entry_signer::sign(std::string_view body) const {
  if (body.size() < 2 || body.front() != '{') {
    throw std::invalid_argument("entry_signer::sign: not a JSON object");
  }
  std::string signed_body(prefix);
  signed_body += mac_hex(body);
  signed_body += '"';
  // {"hmac":"...","url":...} — or {"hmac":"..."} for an empty object.
  if (body.substr(1).find_first_not_of(" \t\r\n") != std::string_view::npos &&
      body[body.find_first_not_of(" \t\r\n", 1)] != '}') {
    signed_body += ',';
  }
  signed_body += body.substr(1);
  return signed_body;
}

entry_signer::verdict entry_signer::check(std::string_view entry, std::string* body) const {
  if (!entry.starts_with(prefix)) return verdict::missing;
  auto mac = entry.substr(prefix.size(), hex_digits);
  auto rest = entry.substr(std::min(entry.size(), prefix.size() + hex_digits));
  if (mac.size() != hex_digits || !rest.starts_with('"')) return verdict::forged;
  rest.remove_prefix(1);
  std::string original = "{";
  original += rest.starts_with(',') ? rest.substr(1) : rest;
  auto expected = mac_hex(original);
  if (CRYPTO_memcmp(expected.data(), mac.data(), hex_digits) != 0) return verdict::forged;
  if (body) *body = std::move(original);
  return verdict::valid;
}

}  // namespace crawler
