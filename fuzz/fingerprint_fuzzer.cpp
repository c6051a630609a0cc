// canonicalize_url and request_fingerprint over arbitrary bytes: an error is a url_error, never a
// crash. (Canonical forms are not checked to be fixed points: w3lib's are not either, e.g.
// "ht:////exam=&a=", and matching w3lib is the contract.)
#include <cstdint>
#include <cstdlib>
#include <string>

#include "request/canonical_url.h"
#include "request/fingerprint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string url(reinterpret_cast<const char*>(data), size);
  using crawler::dedup::fingerprint_scheme;
  try {
    crawler::dedup::canonicalize_url(url);
    for (auto scheme : {fingerprint_scheme::scrapy_2_6, fingerprint_scheme::scrapy_2_7,
                        fingerprint_scheme::scrapy_redis_0_8}) {
      auto fp = crawler::dedup::request_fingerprint("GET", url, url, scheme);
      if (crawler::dedup::fingerprint::from_hex(fp.hex()) != fp) std::abort();
    }
  } catch (const crawler::dedup::url_error&) {
  }
  return 0;
}
