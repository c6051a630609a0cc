#include "crawler/scheme_policy.h"

#include <curl/curl.h>

#include <algorithm>

#include "config/ascii.h"

namespace crawler {
namespace {

bool curl_has_protocol(std::string_view name) {
  const auto* info = curl_version_info(CURLVERSION_NOW);
  for (auto* protocol = info->protocols; protocol && *protocol; ++protocol) {
    if (name == *protocol) return true;
  }
  return false;
}

bool is_local(std::string_view scheme) {
  return scheme == "file";
}

}  // namespace

scheme_policy::scheme_policy(const settings& settings) {
  for (const auto& value : settings.get("DOWNLOAD_SCHEMES")) {
    auto name = value.is_string() ? ascii_lower(value.get<std::string>()) : std::string();
    if (name.empty() || !curl_has_protocol(name)) {
      throw settings_error("DOWNLOAD_SCHEMES: " + value.dump() +
                           " is not a URL scheme the downloader can fetch");
    }
    if (std::find(schemes_.begin(), schemes_.end(), name) != schemes_.end()) continue;
    if (!curl_protocols_.empty()) curl_protocols_ += ',';
    curl_protocols_ += name;
    schemes_.push_back(std::move(name));
  }
  if (schemes_.empty()) {
    throw settings_error(
        "DOWNLOAD_SCHEMES: must list at least one scheme, e.g. [\"http\", \"https\"]");
  }
}

bool scheme_policy::fetches(std::string_view url) const {
  auto scheme = url_scheme(url);
  return std::find(schemes_.begin(), schemes_.end(), scheme) != schemes_.end();
}

bool scheme_policy::fetches_remote(std::string_view url) const {
  return fetches(url) && !is_local(url_scheme(url));
}

bool scheme_policy::may_follow(std::string_view from, std::string_view to) const {
  if (!fetches(to)) return false;
  auto target = url_scheme(to);
  return !is_local(target) || url_scheme(from) == target;
}

}  // namespace crawler
