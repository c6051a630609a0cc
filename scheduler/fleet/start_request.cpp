#include "scheduler/fleet/start_request.h"

#include <boost/url/parse.hpp>
#include <cstdlib>
#include <stdexcept>

#include "request/canonical_url.h"
#include "scheduler/shared_request.h"

namespace crawler {
namespace {

void require_absolute(std::string_view url) {
  if (auto missing = missing_scheme_problem(url); !missing.empty()) {
    throw std::invalid_argument(missing);
  }
  if (!boost::urls::parse_uri(url)) {
    throw std::invalid_argument("\"" + std::string(url) + "\" is not an absolute URL");
  }
}

// Form data in the entry's key order; a list value repeats its key, as urlencode(doseq=True).
std::string form_query(const nlohmann::ordered_json& form) {
  std::string query;
  auto add = [&](const std::string& key, const nlohmann::ordered_json& value) {
    if (!value.is_string()) {
      throw std::invalid_argument("\"" + key +
                                  "\": form data must be a string or a list of strings, as "
                                  "scrapy-redis sends it");
    }
    if (!query.empty()) query += '&';
    dedup::append_quote_plus(query, key);
    query += '=';
    dedup::append_quote_plus(query, value.get_ref<const std::string&>());
  };
  for (const auto& [key, value] : form.items()) {
    if (value.is_array()) {
      for (const auto& each : value) add(key, each);
    } else {
      add(key, value);
    }
  }
  return query;
}

// The request an entry stands for, before the rules of shared requests are applied.
request read_entry(std::string_view entry) {
  auto text = entry;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  if (!text.starts_with('{')) {
    require_absolute(text);
    return request{std::string(text)};
  }
  // Ordered: form data keeps the entry's order, as in Python's dict.
  auto json = nlohmann::ordered_json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw std::invalid_argument("not a JSON object");
  auto take = [&json](const char* key) {
    std::optional<nlohmann::ordered_json> value;
    if (auto found = json.find(key); found != json.end()) {
      value = std::move(*found);
      json.erase(found);
    }
    return value;
  };
  take("hmac");  // a signature (entry_signature.h) is checked before, never form data
  auto url = take("url");
  if (!url || !url->is_string()) throw std::invalid_argument("\"url\" must be a string");
  require_absolute(url->get_ref<const std::string&>());
  request start{url->get<std::string>()};
  auto string_field = [&](const char* key, std::string& out) {
    if (auto value = take(key)) {
      if (!value->is_string()) {
        throw std::invalid_argument("\"" + std::string(key) + "\" must be a string");
      }
      out = value->get<std::string>();
    }
  };
  string_field("callback", start.callback);
  string_field("errback", start.errback);
  string_field("method", start.method);
  for (auto& c : start.method) {
    if (c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
  }
  if (auto meta = take("meta")) {
    if (!meta->is_object()) throw std::invalid_argument("\"meta\" must be an object");
    start.meta = nlohmann::json::parse(meta->dump());
  }
  if (auto priority = take("priority")) {
    if (!priority->is_number_integer() || std::abs(priority->get<std::int64_t>()) > 1000000) {
      throw std::invalid_argument("\"priority\" must be an integer within +-1000000");
    }
    start.priority = priority->get<int>();
  }
  if (auto dont_filter = take("dont_filter")) {
    if (!dont_filter->is_boolean()) {
      throw std::invalid_argument("\"dont_filter\" must be a boolean");
    }
    start.dont_filter = dont_filter->get<bool>();
  }
  if (json.empty()) return start;
  set_form_data(start, form_query(json));
  return start;
}

}  // namespace

std::string_view start_url_number(std::string_view entry) {
  if (entry.size() > 17 && entry[16] == '|' &&
      entry.substr(0, 16).find_first_not_of("0123456789") == std::string_view::npos) {
    return entry.substr(0, 16);
  }
  return {};
}

request start_request_from(std::string_view entry, const entry_signer* signer,
                           const entry_fields& allowed) {
  request start;
  std::string signed_body;
  // A signed start URL is numbered as a queue entry is, the number signed with it.
  auto number = signer ? start_url_number(entry) : std::string_view();
  auto verdict = signer ? signer->check(number.empty() ? entry : entry.substr(17), &signed_body,
                                        number)
                        : entry_signer::verdict::missing;
  if (verdict == entry_signer::verdict::forged) {
    throw std::invalid_argument(
        "forged signature: its \"hmac\" was not written with this fleet's "
        "SCHEDULER_SIGNING_KEY");
  }
  if (verdict == entry_signer::verdict::valid && number.empty()) {
    throw std::invalid_argument(
        "signed without a number (by a crawler push older than numbered start URLs), so a copy "
        "of it could not be told from it: push it again");
  }
  if (verdict == entry_signer::verdict::missing && !number.empty()) {
    throw std::invalid_argument("a number, but no signature: only a signed start URL has one");
  }
  if (verdict == entry_signer::verdict::valid) {
    start = read_entry(signed_body);  // the operator's, through crawler push with the key
  } else {
    start = read_entry(entry);
    start.origin = request_origin::shared;
  }
  if (auto problem = shared_request_problem(start, allowed); !problem.empty()) {
    throw std::invalid_argument(problem);
  }
  return start;
}

}  // namespace crawler
