// A request: what to fetch, and which spider callback gets the response.
//
//   crawler::request next{"https://example.com/page/2"};
//   next.callback = "parse_page";            // a callback the spider registered by name
//   next.meta["page"] = 2;
//   next.priority = 10;                      // higher runs sooner
//
// It lives in the scheduler module because the scheduler's queues hold it, fingerprint it and
// write it to JOBDIR (and to Redis for fleets); spiders see it through crawler/spider.h.
// Callbacks are named, not pointers, so a queued request survives a restart, as in Scrapy's
// request_to_dict. A request is a value: copy and move it freely.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "request/fingerprint.h"

namespace crawler {

/// Header fields in the order they were set; names compare case-insensitively.
using header_list = std::vector<std::pair<std::string, std::string>>;

/// The value of the first header called `name` (any case), or "" when there is none.
std::string_view find_header(const header_list& headers, std::string_view name);
/// Replaces every header called `name` (any case) with one `name: value`.
void set_header(header_list& headers, std::string_view name, std::string_view value);

/// `value` as a log line or a :bad reason quotes input: whole up to `keep` bytes, else its first
/// `keep` bytes and "... (N bytes)", so a 20 MB entry costs a line, not 20 MB of it; control
/// bytes (NUL, ESC, newlines) as \xNN.
std::string quoted_for_log(std::string_view value, std::size_t keep = 300);

/// What is wrong with `cookies` as request::cookies ("" when nothing is): the form Scrapy takes.
std::string cookies_problem(const nlohmann::json& cookies);

/// The version of request::to_json's form, written as "v"; from_json refuses any other.
inline constexpr int request_format_version = 1;

/// Who wrote a request, which decides what it may ask for (scheduler/shared_request.h).
enum class request_origin : std::uint8_t {
  /// This crawl's operator (the crawl file, -a and -s, C++ start_requests), this process's spider
  /// and what follows from them: everything DOWNLOAD_SCHEMES allows, file:// included.
  local,
  /// Read from a queue that other programs can write (a fleet's Redis): http(s) only, no
  /// meta "proxy", and neither dont_filter nor meta "allow_offsite" passes the offsite filter.
  shared,
};

struct request {
  std::string url;
  std::string method = "GET";
  header_list headers;
  std::string body;
  /// Free-form data that travels with the request to its response (Scrapy's Request.meta). Keys the
  /// framework reads: depth, proxy, download_timeout, dont_redirect, dont_retry,
  /// handle_httpstatus_list, handle_httpstatus_all, redirect_times, retry_times, download_slot.
  nlohmann::json meta = nlohmann::json::object();
  /// Larger runs sooner; the retry and redirect middlewares adjust it as Scrapy's do.
  int priority = 0;
  /// Skips the dupefilter: the request is queued even if an equal one was seen.
  bool dont_filter = false;
  /// Set by whoever reads the request in (a fleet's queue marks what it takes `shared`); copies
  /// made of it for a retry or a redirect keep it. to_json writes "origin": "shared", which only
  /// a signed fleet entry is believed on (scheduler/entry_signature.h); from_json ignores it.
  request_origin origin = request_origin::local;
  /// The spider callback for the response; empty means the spider's `parse`.
  std::string callback;
  /// The spider callback for a failure (download error, ignored HTTP status); empty means none.
  std::string errback;
  /// Keyword arguments for the callback (Scrapy's Request.cb_kwargs), as a JSON object: callbacks
  /// are names, so what they are called with must travel with the request through JOBDIR and a
  /// fleet's queue. The callback reads them as response.cb_kwargs(); retries and redirects keep
  /// them.
  nlohmann::json cb_kwargs = nlohmann::json::object();
  /// Cookies to send (Scrapy's Request.cookies): {"name": "value", ...}, or a list of
  /// {"name", "value", and optionally "domain", "path", "secure"}. They join the request's cookie
  /// jar (meta "cookiejar", else the crawl's) for its host, so later requests there send them too;
  /// with meta "dont_merge_cookies" or COOKIES_ENABLED false they are not sent.
  nlohmann::json cookies = nlohmann::json::object();
  /// With SCHEDULER=redis, the lease that holds this request in the fleet's queue while this
  /// worker crawls it; the scheduler settles it with the request's outcome. Not serialized.
  std::string lease;
  /// The fingerprint worked out ahead, on the thread that made the request (remember_fingerprint),
  /// so the crawl thread finds it ready. `inputs` digests the method, URL, body and scheme it was
  /// worked out from; fingerprint_of uses it only while they still match, so a middleware that
  /// rewrites the URL in between costs a recomputation. Not serialized (nor kept by the memory
  /// queue, which packs its requests): the scheduler has used it by then.
  struct fingerprint_memo {
    dedup::fingerprint value;
    std::uint64_t inputs = 0;
  };
  std::shared_ptr<const fingerprint_memo> remembered_fingerprint;

  request() = default;
  explicit request(std::string url_, std::string callback_ = {})
      : url(std::move(url_)), callback(std::move(callback_)) {}

  /// "<GET https://example.com/>", as Scrapy prints a request; a URL read from input may be any
  /// size, so past 300 bytes it is cut, with its full length said (quoted_for_log).
  std::string describe() const;

  /// The JSON form kept in JOBDIR/requests.queue and Redis queues (Scrapy's request_to_dict keys;
  /// the body is hex-encoded as `body_hex`, so any bytes survive), with its format's version in
  /// "v", so a fleet's workers of different releases never misread each other's entries.
  nlohmann::json to_json() const;
  /// Reads to_json()'s form. Throws std::invalid_argument naming `where` and the bad field.
  static request from_json(const nlohmann::json& json, std::string_view where);
};

/// The request's fingerprint under `scheme` (method, URL and body; headers are ignored, as in
/// Scrapy). Throws dedup::url_error for a URL that cannot be canonicalized.
dedup::fingerprint fingerprint_of(const request& request, dedup::fingerprint_scheme scheme);

/// Works the fingerprint out now and keeps it in the request for fingerprint_of: the engine calls
/// it on its worker threads, next to the callback that made the request. A URL that cannot be
/// canonicalized keeps nothing, so the scheduler reports it as it would have.
void remember_fingerprint(request& request, dedup::fingerprint_scheme scheme);

/// Puts urlencoded form data (`field=value&...`) where Scrapy's FormRequest puts it: in the body of
/// a POST, with Content-Type application/x-www-form-urlencoded unless one is set; else as the
/// URL's query, replacing the one it had (a fragment stays).
void set_form_data(request& request, std::string encoded);

}  // namespace crawler
