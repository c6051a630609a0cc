#include "crawler/detail/host_hold.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <string>

namespace crawler::detail {

double hold_asked(int status, std::string_view retry_after) {
  if (status != 429 && status != 503) return 0;
  constexpr double least = 1, most = 3600;
  while (!retry_after.empty() && retry_after.front() == ' ') retry_after.remove_prefix(1);
  while (!retry_after.empty() && retry_after.back() == ' ') retry_after.remove_suffix(1);
  if (retry_after.empty()) return least;
  double seconds = least;
  if (retry_after.find_first_not_of("0123456789") == std::string_view::npos) {
    long long given = 0;
    auto [end, error] =
        std::from_chars(retry_after.data(), retry_after.data() + retry_after.size(), given);
    seconds = error == std::errc{} ? double(given) : most;  // too many digits: a long time
  } else {
    // An HTTP date; curl_getdate reads the three forms RFC 9110 allows.
    auto when = curl_getdate(std::string(retry_after).c_str(), nullptr);
    if (when != -1) seconds = double(when - std::time(nullptr));
  }
  return std::clamp(seconds, least, most);
}

}  // namespace crawler::detail
