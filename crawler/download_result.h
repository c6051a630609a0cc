// What the downloader hands back for one request: the response, or the error that ended it. Its
// own header, so that the transfer layer underneath (detail/curl_transfers.h) need not include
// the downloader it serves.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "crawler/parse/response.h"
#include "request/request.h"

namespace crawler {

/// What a fetch produced: a response, or an error named as the stats and the retry middleware
/// name it ("TimeoutError", "ConnectionRefusedError", "DNSLookupError", "ConnectionLost",
/// "ResponseNeverReceived", "SSLError", "CancelledError" for DOWNLOAD_MAXSIZE, "NotSupported",
/// ...).
struct download_result {
  crawler::request request;
  std::optional<crawler::response> response;
  std::string error_type;
  std::string error_message;
  /// Bytes sent (request line, headers, body) and received (status line, headers, decoded body).
  std::size_t request_bytes = 0;
  std::size_t response_bytes = 0;
};

}  // namespace crawler
