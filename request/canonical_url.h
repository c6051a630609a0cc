// canonicalize_url: the URL normal form that request fingerprints are computed over.
//
//   canonicalize_url("http://Example.com/do?c=3&b=5&b=2&a=50#top")
//     == "http://example.com/do?a=50&b=2&b=5&c=3"
//
// It follows w3lib 2.1's canonicalize_url(url, keep_blank_values=True, keep_fragments=False)
// byte for byte, because a fingerprint that differs from Scrapy's breaks fleets and JOBDIRs that
// mix Python and C++ workers:
// - surrounding whitespace and C0 controls are stripped, tab/CR/LF removed anywhere;
// - the scheme and the whole netloc (userinfo included) are lower-cased, trailing ':' dropped;
//   a non-ASCII host is IDNA-encoded as Python's idna codec does it (IDNA 2003, via libidn);
// - the query is split on '&' and ';', '+' read as space, blank values kept ("c" becomes "c="),
//   pairs sorted by (key, value) as bytes with duplicates kept, re-encoded as quote_plus does;
// - the path's percent-encoding is normalised (upper-case escapes, unreserved bytes decoded,
//   %2F and %3F kept); an empty path becomes "/";
// - the fragment is dropped.
// It does not remove default ports, resolve dot segments or strip "www", as w3lib does not.
//
// Known difference: when IDNA encoding fails (a label over 63 bytes, an empty label) w3lib keeps
// the raw netloc and lower-cases it with full Unicode rules; this lower-cases ASCII letters only.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace crawler::dedup {

/// A URL that cannot be canonicalized (e.g. an unbalanced '[' in the host). what() quotes it.
class url_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The canonical form of `url` (UTF-8). Throws url_error for a URL Python's urlparse rejects.
std::string canonicalize_url(std::string_view url);

/// Appends `bytes` as Python's quote_plus(bytes, safe='') writes them: letters, digits and "_.-~"
/// stay, a space becomes '+', every other byte %XX. What urlencode does to each form field, and
/// canonicalize_url to each query pair.
void append_quote_plus(std::string& out, std::string_view bytes);

}  // namespace crawler::dedup
