#include "request/request.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

#include "request/canonical_url.h"
#include "request/url_bytes.h"

namespace crawler {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

}  // namespace

std::string_view find_header(const header_list& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

void set_header(header_list& headers, std::string_view name, std::string_view value) {
  std::erase_if(headers, [name](const auto& field) { return iequals(field.first, name); });
  headers.emplace_back(name, value);
}

namespace {

// Control bytes (a NUL, a terminal's escape sequences) come from input too: written as \xNN, so a
// quoted value can neither cut a C string short nor drive the terminal that shows the log.
void append_quoted(std::string& out, std::string_view value, std::size_t keep) {
  auto kept = value.substr(0, keep);
  auto is_control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  if (std::none_of(kept.begin(), kept.end(), is_control)) {
    out += kept;
  } else {
    static constexpr char hex[] = "0123456789abcdef";
    for (char c : kept) {
      if (!is_control(c)) {
        out += c;
        continue;
      }
      out += "\\x";
      out += hex[static_cast<unsigned char>(c) >> 4];
      out += hex[c & 15];
    }
  }
  if (value.size() > keep) out += "... (" + std::to_string(value.size()) + " bytes)";
}

}  // namespace

std::string quoted_for_log(std::string_view value, std::size_t keep) {
  std::string out;
  append_quoted(out, value, keep);
  return out;
}

// One allocation: duplicates are described once each, a page's worth at a time.
std::string request::describe() const {
  std::string out;
  out.reserve(std::min<std::size_t>(method.size(), 20) + std::min<std::size_t>(url.size(), 300) +
              32);
  out += '<';
  append_quoted(out, method, 20);
  out += ' ';
  append_quoted(out, url, 300);
  out += '>';
  return out;
}

void set_form_data(request& request, std::string encoded) {
  if (request.method == "POST") {
    request.body = std::move(encoded);
    if (find_header(request.headers, "Content-Type").empty())
      set_header(request.headers, "Content-Type", "application/x-www-form-urlencoded");
    return;
  }
  auto hash = request.url.find('#');
  auto fragment = hash == std::string::npos ? std::string() : request.url.substr(hash);
  request.url.resize(std::min(request.url.find('?'), std::min(hash, request.url.size())));
  request.url += "?" + encoded + fragment;
}

std::string cookies_problem(const nlohmann::json& cookies) {
  auto scalar = [](const nlohmann::json& v) { return v.is_string() || v.is_number(); };
  if (cookies.is_object()) {
    for (const auto& [name, value] : cookies.items())
      if (!scalar(value)) return "\"cookies\": the value of " + name + " must be a string or number";
    return "";
  }
  if (!cookies.is_array())
    return "\"cookies\" must be an object of name: value, or a list of {\"name\", \"value\"}";
  for (const auto& cookie : cookies) {
    if (!cookie.is_object() || !cookie.contains("name") || !cookie["name"].is_string() ||
        !cookie.contains("value") || !scalar(cookie["value"]))
      return "\"cookies\": each in the list must be an object with a string \"name\" and a "
             "\"value\", got " +
             quoted_for_log(cookie.dump(), 100);
    for (const char* text : {"domain", "path"})
      if (cookie.contains(text) && !cookie[text].is_string())
        return std::string("\"cookies\": \"") + text + "\" must be a string";
  }
  return "";
}

nlohmann::json request::to_json() const {
  nlohmann::json json{
      {"v", request_format_version}, {"url", url},  {"method", method}, {"priority", priority},
      {"dont_filter", dont_filter},  {"meta", meta}};
  if (!callback.empty()) json["callback"] = callback;
  if (!errback.empty()) json["errback"] = errback;
  if (cb_kwargs.is_object() && !cb_kwargs.empty()) json["cb_kwargs"] = cb_kwargs;
  if (!cookies.empty()) json["cookies"] = cookies;
  if (!body.empty()) json["body_hex"] = to_hex(body);
  if (!headers.empty()) {
    auto& fields = json["headers"] = nlohmann::json::array();
    for (const auto& [name, value] : headers) fields.push_back({name, value});
  }
  // Read back only from a signed fleet entry: a shared request signed by the worker that queued
  // it must stay shared, not gain the rights of the fleet's own.
  if (origin == request_origin::shared) json["origin"] = "shared";
  return json;
}

request request::from_json(const nlohmann::json& json, std::string_view where) {
  auto fail = [where](std::string_view what) {
    throw std::invalid_argument(std::string(where) + ": " + std::string(what));
  };
  if (!json.is_object()) fail("a request must be a JSON object");
  auto url = json.find("url");
  if (url == json.end() || !url->is_string() || url->get_ref<const std::string&>().empty()) {
    fail("\"url\" must be a non-empty string");
  }
  // Missing: written before entries carried their format (JOBDIR files of older runs), which is 1.
  if (auto version = json.find("v"); version != json.end() && *version != request_format_version) {
    fail("written in request format " + version->dump() + ", and this crawler reads format " +
         std::to_string(request_format_version) +
         ": run a crawler as new as the one that wrote it");
  }
  request result{url->get<std::string>()};
  try {
    result.method = json.value("method", "GET");
    if (auto priority = json.find("priority"); priority != json.end()) {
      // Scrapy refuses a priority that is not an int; ours is an int, so a number past its range
      // (or one with a fraction) is refused too rather than converted into something else.
      constexpr auto lowest = std::numeric_limits<int>::min();
      constexpr auto highest = std::numeric_limits<int>::max();
      if (!priority->is_number_integer() ||
          (priority->is_number_unsigned() ? priority->get<std::uint64_t>() > std::uint64_t(highest)
                                          : priority->get<std::int64_t>() < lowest ||
                                                priority->get<std::int64_t>() > highest)) {
        fail("\"priority\" must be an integer from " + std::to_string(lowest) + " to " +
             std::to_string(highest) + ", not " + priority->dump());
      }
      result.priority = priority->get<int>();
    }
    result.dont_filter = json.value("dont_filter", false);
    result.callback = json.value("callback", "");
    result.errback = json.value("errback", "");
    if (auto meta = json.find("meta"); meta != json.end() && !meta->is_null()) {
      if (!meta->is_object()) fail("\"meta\" must be an object");
      result.meta = *meta;
    }
    if (auto kwargs = json.find("cb_kwargs"); kwargs != json.end() && !kwargs->is_null()) {
      if (!kwargs->is_object()) fail("\"cb_kwargs\" must be an object");
      result.cb_kwargs = *kwargs;
    }
    if (auto cookies = json.find("cookies"); cookies != json.end() && !cookies->is_null()) {
      if (auto problem = cookies_problem(*cookies); !problem.empty()) fail(problem);
      result.cookies = *cookies;
    }
    if (auto headers = json.find("headers"); headers != json.end()) {
      for (const auto& field : *headers) {
        result.headers.emplace_back(field.at(0).get<std::string>(), field.at(1).get<std::string>());
      }
    }
    auto hex = json.value("body_hex", "");
    if (hex.size() % 2) fail("\"body_hex\" has an odd number of digits");
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      int high = dedup::hex_value(hex[i]), low = dedup::hex_value(hex[i + 1]);
      if (high < 0 || low < 0) fail("\"body_hex\" holds a character that is not a hex digit");
      result.body += char(high * 16 + low);
    }
  } catch (const nlohmann::json::exception& error) {
    fail(error.what());
  }
  return result;
}

namespace {

// Cheap next to canonicalizing and hashing with SHA-1: the memo is worth checking every time.
std::uint64_t fingerprint_inputs(const request& request, dedup::fingerprint_scheme scheme) {
  std::hash<std::string_view> hash;
  std::uint64_t digest = hash(request.url);
  for (std::uint64_t part : {std::uint64_t(hash(request.method)), std::uint64_t(hash(request.body)),
                             std::uint64_t(scheme)}) {
    digest ^= part + 0x9e3779b97f4a7c15ULL + (digest << 6) + (digest >> 2);
  }
  return digest;
}

}  // namespace

dedup::fingerprint fingerprint_of(const request& request, dedup::fingerprint_scheme scheme) {
  if (request.remembered_fingerprint &&
      request.remembered_fingerprint->inputs == fingerprint_inputs(request, scheme)) {
    return request.remembered_fingerprint->value;
  }
  return dedup::request_fingerprint(request.method, request.url, request.body, scheme);
}

void remember_fingerprint(request& request, dedup::fingerprint_scheme scheme) {
  try {
    auto value = dedup::request_fingerprint(request.method, request.url, request.body, scheme);
    request.remembered_fingerprint = std::make_shared<const request::fingerprint_memo>(
        request::fingerprint_memo{value, fingerprint_inputs(request, scheme)});
  } catch (const dedup::url_error&) {
    request.remembered_fingerprint.reset();
  }
}

}  // namespace crawler
