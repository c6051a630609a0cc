#include "request/fingerprint.h"

#include <algorithm>

// SHA1_Init/Update/Final are deprecated in OpenSSL 3 but are the cheapest way to hash ~100 bytes:
// the EVP path fetches an algorithm object per call, which costs more than the hash itself.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "config/settings.h"
#include "request/canonical_url.h"

namespace crawler::dedup {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

// Python's json.dumps string encoding with ensure_ascii=True: quotes, backslash and control
// characters escaped, non-ASCII as \uXXXX (UTF-16 surrogate pairs above the BMP).
void append_json_string(std::string& out, std::string_view text) {
  auto append_u = [&out](unsigned code) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += hex_digits[(code >> shift) & 15];
  };
  out += '"';
  // Canonical URLs are percent-encoded ASCII: nearly always nothing to escape, so copy in one go.
  if (std::all_of(text.begin(), text.end(), [](char c) {
        auto b = static_cast<unsigned char>(c);
        return b >= 0x20 && b < 0x80 && c != '"' && c != '\\';
      })) {
    out += text;
    out += '"';
    return;
  }
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            append_u(c);
          } else {
            out += static_cast<char>(c);  // DEL included: json.dumps leaves it as it is
          }
      }
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence; a malformed byte is escaped as itself (U+0080..U+00FF).
    int length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    unsigned code = length == 4 ? c & 0x07 : length == 3 ? c & 0x0F : length == 2 ? c & 0x1F : c;
    bool valid = length > 1 && i + length <= text.size();
    for (int k = 1; valid && k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) valid = false;
      code = (code << 6) | (next & 0x3F);
    }
    if (!valid) {
      append_u(c);
      ++i;
      continue;
    }
    if (code >= 0x10000) {
      code -= 0x10000;
      append_u(0xD800 + (code >> 10));
      append_u(0xDC00 + (code & 0x3FF));
    } else {
      append_u(code);
    }
    i += length;
  }
  out += '"';
}

std::string upper_method(std::string_view method) {
  std::string out(method);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

}  // namespace

void fingerprint::write_hex(char* out) const {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = hex_digits[bytes[i] >> 4];
    out[2 * i + 1] = hex_digits[bytes[i] & 15];
  }
}

std::string fingerprint::hex() const {
  std::string out(40, '0');
  write_hex(out.data());
  return out;
}

std::optional<fingerprint> fingerprint::from_hex(std::string_view hex) {
  if (hex.size() != 40) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  fingerprint fp;
  for (std::size_t i = 0; i < 20; ++i) {
    int hi = value(hex[2 * i]), lo = value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    fp.bytes[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return fp;
}

std::optional<fingerprint_scheme> parse_fingerprint_scheme(std::string_view name) {
  if (name == "2.7") return fingerprint_scheme::scrapy_2_7;
  if (name == "2.6") return fingerprint_scheme::scrapy_2_6;
  if (name == "scrapy-redis-0.8") return fingerprint_scheme::scrapy_redis_0_8;
  return std::nullopt;
}

fingerprint_scheme fingerprint_scheme_from(const crawler::settings& settings) {
  std::string name = settings.get_string("REQUEST_FINGERPRINTER_IMPLEMENTATION");
  if (name.empty() && !settings.has("REQUEST_FINGERPRINTER_IMPLEMENTATION")) {
    // scrapy-redis's RFPDupeFilter fingerprints requests itself, and ScrapyRedisBloomFilter's
    // and scrapy-redis-bf's inherit its request_fingerprint: a settings.py that names one of
    // them shares its dupefilter only with that scheme.
    auto dupefilter = settings.get_string("DUPEFILTER_CLASS");
    return dupefilter.starts_with("scrapy_redis") ? fingerprint_scheme::scrapy_redis_0_8
                                                   : fingerprint_scheme::scrapy_2_7;
  }
  if (auto scheme = parse_fingerprint_scheme(name)) return *scheme;
  throw crawler::settings_error("REQUEST_FINGERPRINTER_IMPLEMENTATION: unknown value '" + name +
                                "' (expected \"2.7\", \"2.6\" or \"scrapy-redis-0.8\")");
}

fingerprint fingerprint_of_canonical(std::string_view method, std::string_view canonical_url,
                                     std::string_view body, fingerprint_scheme scheme) {
  std::string upper = upper_method(method);
  fingerprint fp;
  SHA_CTX sha;
  SHA1_Init(&sha);
  if (scheme == fingerprint_scheme::scrapy_2_6) {
    SHA1_Update(&sha, upper.data(), upper.size());
    SHA1_Update(&sha, canonical_url.data(), canonical_url.size());
    SHA1_Update(&sha, body.data(), body.size());
  } else {
    // json.dumps(..., sort_keys=True) with the default ", " and ": " separators.
    std::string document;
    document.reserve(64 + 2 * body.size() + canonical_url.size() + upper.size());
    document += "{\"body\": \"";
    std::size_t hex_at = document.size();
    document.resize(hex_at + 2 * body.size());
    for (std::size_t i = 0; i < body.size(); ++i) {
      auto b = static_cast<unsigned char>(body[i]);
      document[hex_at + 2 * i] = hex_digits[b >> 4];
      document[hex_at + 2 * i + 1] = hex_digits[b & 15];
    }
    // scrapy-redis 0.8 and later leave "headers" out; the rest is the same document.
    document += scheme == fingerprint_scheme::scrapy_redis_0_8
                    ? "\", \"method\": "
                    : "\", \"headers\": {}, \"method\": ";
    append_json_string(document, upper);
    document += ", \"url\": ";
    append_json_string(document, canonical_url);
    document += '}';
    SHA1_Update(&sha, document.data(), document.size());
  }
  SHA1_Final(fp.bytes.data(), &sha);
  return fp;
}

fingerprint request_fingerprint(std::string_view method, std::string_view url,
                                std::string_view body, fingerprint_scheme scheme) {
  return fingerprint_of_canonical(method, canonicalize_url(url), body, scheme);
}

}  // namespace crawler::dedup
