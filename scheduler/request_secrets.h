// What of a request is never written down. A request's headers would otherwise go, in clear, to
// every place that outlives the crawl and that others read: JOBDIR's queue, a fleet's Redis
// entries and leases, the HTTP cache's request_headers files.
//
//   crawler::request_secrets secrets(settings);   // SENSITIVE_HEADERS, DEFAULT_REQUEST_HEADERS
//   out << secrets.to_json(request).dump();       // what may be written
//
// Left out: every header named in SENSITIVE_HEADERS (Authorization, Proxy-Authorization, Cookie
// and the common API-key headers by default), every header as DEFAULT_REQUEST_HEADERS gives it,
// and the credentials in meta "proxy". The downloader middlewares apply the settings' headers
// again at fetch time (DEFAULT_REQUEST_HEADERS, http_user/http_pass, cookies), so a request read
// back lacks nothing they give it; a secret header a spider set on one request itself is not
// kept (README: "What survives a restart").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.h"
#include "request/request.h"

namespace crawler {

class request_secrets {
 public:
  /// The defaults of SENSITIVE_HEADERS, and no DEFAULT_REQUEST_HEADERS.
  request_secrets();
  /// From SENSITIVE_HEADERS and DEFAULT_REQUEST_HEADERS. Throws settings_error naming the key
  /// for a value that is not a header name.
  explicit request_secrets(const settings& settings);

  /// Whether `name: value` is left out of what is written.
  bool is_secret(std::string_view name, std::string_view value) const;
  /// `headers` without the secret ones.
  header_list writable(const header_list& headers) const;
  /// request::to_json() without the secret headers and meta "proxy"'s user and password.
  nlohmann::json to_json(const request& request) const;
  /// A copy of `request` without them, for the forms that are not request::to_json's.
  request writable(const request& request) const;

 private:
  std::vector<std::string> sensitive_;  // lower case
  header_list from_settings_;           // DEFAULT_REQUEST_HEADERS
};

}  // namespace crawler
