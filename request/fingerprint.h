// Request fingerprints: the 20-byte SHA-1 that identifies a request for duplicate filtering.
//
//   auto fp = crawler::dedup::request_fingerprint("GET", "http://example.com/");
//   fp.hex() == "cebe46deeab7ee5915824a38cf73ee6f7eb0aba5"   // Scrapy 2.7's scheme, the default
//
// Both of Scrapy's schemes, and scrapy-redis's own, are reproduced byte for byte, so JOBDIRs,
// Redis dupefilter keys and mixed Python/C++ fleets agree on what has been seen:
// - "2.7" (REQUEST_FINGERPRINTER_IMPLEMENTATION's default): SHA-1 of
//   json.dumps({"body": body.hex(), "headers": {}, "method": M, "url": canonical}, sort_keys=True);
// - "2.6": SHA-1 of method + canonical URL + body (Scrapy before 2.7, and scrapy-redis 0.7);
// - "scrapy-redis-0.8": the RFPDupeFilter of scrapy-redis 0.8 and later, which fingerprints
//   requests itself: the "2.7" document without its "headers" member.
// The canonical URL is canonicalize_url(url) (canonical_url.h); the method is upper-cased, as
// Scrapy's Request does. Functions here are pure and thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace crawler {
class settings;
}

namespace crawler::dedup {

/// A request's SHA-1: 20 raw bytes. Cheap to copy, hash and compare; shown as 40 lower-case hex.
struct fingerprint {
  std::array<std::uint8_t, 20> bytes{};

  /// The 40-hex form, as Scrapy's request_fingerprint(...).hex() and scrapy-redis store it.
  std::string hex() const;
  /// The same 40 characters written into `out` (no allocation), for hot paths that append them.
  void write_hex(char* out) const;
  /// Parses 40 hex digits (either case); nullopt for anything else.
  static std::optional<fingerprint> from_hex(std::string_view hex);

  /// The first 8 bytes as an integer: already uniformly distributed, as SHA-1 output is.
  std::uint64_t prefix64() const {
    std::uint64_t value;
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
  }
  friend bool operator==(const fingerprint&, const fingerprint&) = default;
};

/// REQUEST_FINGERPRINTER_IMPLEMENTATION's values: Scrapy's two, and scrapy-redis 0.8's.
enum class fingerprint_scheme { scrapy_2_6, scrapy_2_7, scrapy_redis_0_8 };

/// Reads REQUEST_FINGERPRINTER_IMPLEMENTATION ("2.7", "2.6" or "scrapy-redis-0.8"; unset:
/// "scrapy-redis-0.8" when DUPEFILTER_CLASS is a scrapy-redis class path, as the Python
/// dupefilter computes it, else "2.7"); throws settings_error otherwise.
fingerprint_scheme fingerprint_scheme_from(const crawler::settings& settings);
/// Parses "2.7" / "2.6" / "scrapy-redis-0.8"; nullopt for anything else.
std::optional<fingerprint_scheme> parse_fingerprint_scheme(std::string_view name);

/// The fingerprint of a request. Throws url_error for a URL that cannot be canonicalized.
fingerprint request_fingerprint(std::string_view method, std::string_view url,
                                std::string_view body = {},
                                fingerprint_scheme scheme = fingerprint_scheme::scrapy_2_7);

/// The same, for a URL that is already canonical (skips canonicalize_url).
fingerprint fingerprint_of_canonical(std::string_view method, std::string_view canonical_url,
                                     std::string_view body, fingerprint_scheme scheme);

}  // namespace crawler::dedup

template <>
struct std::hash<crawler::dedup::fingerprint> {
  std::size_t operator()(const crawler::dedup::fingerprint& fp) const noexcept {
    return static_cast<std::size_t>(fp.prefix64());
  }
};
