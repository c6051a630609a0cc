#include "crawler/http_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <stdexcept>

#include "config/log.h"
#include "crawler/detail/whole_file.h"
#include "config/ascii.h"

namespace crawler {
namespace {

namespace fs = std::filesystem;

// The cache holds what the crawl sent and got: its files are its owner's only (0600), as are the
// folders it makes (0700), whatever the umask.
void write_whole(const fs::path& path, std::string_view content) {
  detail::write_whole_file(path, content, 0600);
}

void create_private_directories(const fs::path& path) {
  fs::path made;
  for (const auto& part : path) {
    made /= part;
    if (made.empty() || made == made.root_path()) continue;
    if (::mkdir(made.c_str(), 0700) != 0 && errno != EEXIST) {
      throw std::runtime_error("cannot create " + made.string() + ": " + std::strerror(errno));
    }
  }
}

// Headers as Scrapy's headers_dict_to_raw writes them: "Name: value" lines joined by \r\n.
std::string raw_headers(const header_list& headers) {
  std::string raw;
  for (const auto& [name, value] : headers) {
    if (!raw.empty()) raw += "\r\n";
    raw += name + ": " + value;
  }
  return raw;
}

header_list parse_raw_headers(std::string_view raw) {
  header_list headers;
  while (!raw.empty()) {
    auto end = raw.find('\n');
    auto line = raw.substr(0, end);
    raw = end == std::string_view::npos ? std::string_view() : raw.substr(end + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    headers.emplace_back(std::string(line.substr(0, colon)),
                         std::string(trim_ascii_space(line.substr(colon + 1))));
  }
  return headers;
}

fs::path cache_folder(const settings& settings, const spider& spider) {
  fs::path dir = settings.get_string("HTTPCACHE_DIR");
  if (dir.empty()) throw settings_error("HTTPCACHE_DIR: must name a folder");
  if (dir.is_relative()) dir = fs::path(".crawler") / dir;
  return dir / spider.name();
}

}  // namespace

http_cache_middleware::http_cache_middleware(const settings& settings, stats& stats,
                                             const spider& spider)
    : stats_(stats),
      folder_(cache_folder(settings, spider)),
      expiration_seconds_(settings.get_double("HTTPCACHE_EXPIRATION_SECS")),
      ignore_missing_(settings.get_bool("HTTPCACHE_IGNORE_MISSING")),
      ignored_schemes_(settings.get_list("HTTPCACHE_IGNORE_SCHEMES")),
      secrets_(settings),
      fingerprint_scheme_(dedup::fingerprint_scheme_from(settings)) {
  const auto& codes = settings.get("HTTPCACHE_IGNORE_HTTP_CODES");
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (!codes[i].is_number_integer()) {
      throw settings_error("HTTPCACHE_IGNORE_HTTP_CODES[" + std::to_string(i) +
                           "]: must be an HTTP status (a whole number), got " + codes[i].dump());
    }
    ignored_statuses_.insert(codes[i].get<int>());
  }
  get_logger("httpcache")->debug("Using filesystem cache storage in {}", folder_.string());
}

bool http_cache_middleware::bypasses(const request& request) const {
  if (request.meta.value("dont_cache", false)) return true;
  auto colon = request.url.find(':');
  auto scheme = ascii_lower(std::string_view(request.url).substr(0, colon));
  return colon == std::string::npos || std::find(ignored_schemes_.begin(), ignored_schemes_.end(),
                                                 scheme) != ignored_schemes_.end();
}

std::optional<fs::path> http_cache_middleware::entry_of(const request& request) const {
  std::string key;
  try {
    key = dedup::request_fingerprint(request.method, request.url, request.body, fingerprint_scheme_)
              .hex();
  } catch (const std::exception&) {
    return std::nullopt;  // a URL with no canonical form: the download reports it
  }
  return folder_ / key.substr(0, 2) / key;
}

std::optional<response> http_cache_middleware::answer(const request& request) {
  auto found = bypasses(request) ? std::nullopt : entry_of(request);
  if (!found) return std::nullopt;
  const auto& entry = *found;
  std::error_code missing;
  auto stored_at = fs::last_write_time(entry / "meta", missing);
  bool fresh = !missing &&
               (expiration_seconds_ <= 0 || fs::file_time_type::clock::now() - stored_at <
                                                std::chrono::duration<double>(expiration_seconds_));
  if (fresh) {
    try {
      auto meta = nlohmann::json::parse(detail::read_whole_file(entry / "meta"));
      response cached;
      cached.url = meta.at("response_url").get<std::string>();
      const auto& status = meta.at("status");
      // Checked before the conversion: a number past int's range does not convert, it is
      // undefined behaviour, and a status outside 100..999 is no HTTP status at all.
      if (!status.is_number_integer() || status.get<std::int64_t>() < 100 ||
          status.get<std::int64_t>() > 999) {
        throw std::invalid_argument("\"status\" " + status.dump() +
                                    " is not an HTTP status (an integer from 100 to 999)");
      }
      cached.status = status.get<int>();
      cached.protocol = meta.value("protocol", std::string());
      cached.headers = parse_raw_headers(detail::read_whole_file(entry / "response_headers"));
      cached.body = detail::read_whole_file(entry / "response_body");
      cached.request = request;
      cached.flags.push_back("cached");
      stats_.inc_value("httpcache/hit");
      return cached;
    } catch (const std::exception& error) {
      // A damaged entry (edited by hand, a disk error) is a miss: the page is fetched again.
      get_logger("httpcache")
          ->warn("Cannot read the cached response of {} in {}: {}", request.describe(),
                 entry.string(), error.what());
    }
  }
  stats_.inc_value("httpcache/miss");
  if (ignore_missing_) {
    stats_.inc_value("httpcache/ignore");
    throw ignore_request("Ignored request not in cache: " + request.describe());
  }
  return std::nullopt;
}

std::optional<request> http_cache_middleware::process_response(const request& request,
                                                               const response& response) {
  if (bypasses(request) ||
      std::find(response.flags.begin(), response.flags.end(), "cached") != response.flags.end()) {
    return std::nullopt;
  }
  stats_.inc_value("httpcache/firsthand");
  // A body cut where the spider stops reading (downloader::fetch's body_limit) is not the
  // page: a later crawl that reads further would take it for the whole.
  bool cut = std::find(response.flags.begin(), response.flags.end(), "truncated") !=
             response.flags.end();
  if (ignored_statuses_.contains(response.status) || cut) {
    stats_.inc_value("httpcache/uncacheable");
    return std::nullopt;
  }
  store(request, response);
  return std::nullopt;
}

// Written beside its place and renamed into it: a reader sees a whole entry or none.
void http_cache_middleware::store(const request& request, const response& response) {
  auto found = entry_of(request);
  if (!found) return;
  const auto& entry = *found;
  fs::path temporary;
  try {
    create_private_directories(entry.parent_path());
    // A folder of its own under a name nobody can guess (mkdtemp: 0700, made by this call), so
    // no link planted in the cache is ever written through.
    std::string name = entry.string() + ".tmp-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) {
      throw std::runtime_error("cannot create " + name + ": " + std::strerror(errno));
    }
    temporary = name;
    nlohmann::json meta{{"url", request.url},
                        {"method", request.method},
                        {"status", response.status},
                        {"response_url", response.url},
                        {"protocol", response.protocol},
                        {"timestamp", std::chrono::duration<double>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count()}};
    write_whole(temporary / "response_body", response.body);
    write_whole(temporary / "response_headers", raw_headers(response.headers));
    write_whole(temporary / "request_body", request.body);
    // Secrets stay out of the cache folder, which outlives the crawl and gets shared.
    write_whole(temporary / "request_headers", raw_headers(secrets_.writable(request.headers)));
    write_whole(temporary / "meta", meta.dump());
    fs::remove_all(entry);
    fs::rename(temporary, entry);
    stats_.inc_value("httpcache/store");
  } catch (const std::exception& error) {
    std::error_code ignored;
    if (!temporary.empty()) fs::remove_all(temporary, ignored);
    get_logger("httpcache")
        ->warn("Cannot store {} in the HTTP cache: {}", request.describe(), error.what());
  }
}

}  // namespace crawler
