// HTTPCACHE_ENABLED: Scrapy's HttpCacheMiddleware with its default policy (keep every response)
// and filesystem storage, so a user developing selectors re-runs a crawl without touching the site.
//
//   crawler run books.json -s HTTPCACHE_ENABLED=true          # first run fills the cache
//   crawler run books.json -s HTTPCACHE_ENABLED=true          # later runs read it
//   crawler run books.json -s HTTPCACHE_ENABLED=true -s HTTPCACHE_IGNORE_MISSING=true  # offline
//
// Each response is stored under HTTPCACHE_DIR/<spider>/<fp[0:2]>/<fp>/ (fp: the request's
// fingerprint, as the dupefilter computes it; a relative HTTPCACHE_DIR is under `.crawler/`, as
// Scrapy's is under `.scrapy/`), in the files Scrapy writes: `response_body`, `response_headers`,
// `request_body`, `request_headers` (without the secret ones: request_secrets.h), and `meta`
// (JSON here: url, method, status, response_url, timestamp). Files are 0600 and the folders the
// cache makes 0700: only their owner reads them. An entry is written to a temporary folder and
// renamed into place, so a crash never leaves half an entry to be served.
//
// A request whose entry exists, and is younger than HTTPCACHE_EXPIRATION_SECS (0: never
// expires), is answered from it with the flag "cached" (`httpcache/hit`); otherwise it is
// downloaded (`httpcache/miss`), or with HTTPCACHE_IGNORE_MISSING dropped as IgnoreRequest
// (`httpcache/ignore`). Downloaded responses count `httpcache/firsthand` and are stored
// (`httpcache/store`) unless their status is in HTTPCACHE_IGNORE_HTTP_CODES
// (`httpcache/uncacheable`). Schemes in HTTPCACHE_IGNORE_SCHEMES (file) and requests with
// meta["dont_cache"] pass by the cache.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "crawler/middleware.h"
#include "request/fingerprint.h"
#include "scheduler/request_secrets.h"

namespace crawler {

class http_cache_middleware : public downloader_middleware {
 public:
  /// Throws settings_error for a bad HTTPCACHE_* value, naming it.
  http_cache_middleware(const settings& settings, stats& stats, const spider& spider);

  std::optional<response> answer(const request& request) override;
  std::optional<request> process_response(const request& request,
                                          const response& response) override;

  /// The folder the spider's entries are under: HTTPCACHE_DIR (under .crawler/ when relative)
  /// joined with the spider's name.
  const std::filesystem::path& folder() const { return folder_; }

 private:
  bool bypasses(const request& request) const;
  std::optional<std::filesystem::path> entry_of(const request& request) const;
  void store(const request& request, const response& response);

  stats& stats_;
  std::filesystem::path folder_;
  double expiration_seconds_;
  bool ignore_missing_;
  std::set<int> ignored_statuses_;
  std::vector<std::string> ignored_schemes_;
  request_secrets secrets_;  // left out of request_headers
  dedup::fingerprint_scheme fingerprint_scheme_;
};

}  // namespace crawler
