// The value of an Authorization header for HTTP Basic authentication (RFC 7617), as
// HttpAuthMiddleware sends it and `crawler serve` expects it:
//
//   crawler::basic_authorization("user", "pass")   -> "Basic dXNlcjpwYXNz"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace crawler {

/// "Basic " and the base64 of "user:password".
inline std::string basic_authorization(std::string_view user, std::string_view password) {
  static constexpr char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(user);
  bytes += ':';
  bytes += password;
  std::string out = "Basic ";
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    auto byte = [&](std::size_t at) -> std::uint32_t {
      return at < bytes.size() ? static_cast<unsigned char>(bytes[at]) : 0;
    };
    std::uint32_t chunk = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += digits[(chunk >> 18) & 63];
    out += digits[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? digits[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? digits[chunk & 63] : '=';
  }
  return out;
}

}  // namespace crawler
