#include "scheduler/request_secrets.h"

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include "config/ascii.h"

namespace crawler {
namespace {

bool valid_header_name(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    // RFC 9110 token characters.
    if (!(std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(char(c)) !=
                                 std::string_view::npos)) {
      return false;
    }
  }
  return true;
}

// meta "proxy" with its user and password taken out.
void without_proxy_credentials(nlohmann::json& meta) {
  if (!meta.is_object()) return;
  if (auto proxy = meta.find("proxy"); proxy != meta.end() && proxy->is_string()) {
    if (auto parsed = boost::urls::parse_uri_reference(proxy->get_ref<const std::string&>());
        parsed && parsed->has_userinfo()) {
      boost::urls::url without(*parsed);
      without.remove_userinfo();
      *proxy = std::string(without.buffer());
    }
  }
}

}  // namespace

request_secrets::request_secrets() : request_secrets(settings{}) {}

request_secrets::request_secrets(const settings& settings) {
  const auto& names = settings.get("SENSITIVE_HEADERS");
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string() || !valid_header_name(names[i].get<std::string>())) {
      throw settings_error("SENSITIVE_HEADERS[" + std::to_string(i) +
                           "]: must be a header name, got " + names[i].dump());
    }
    sensitive_.push_back(ascii_lower(names[i].get<std::string>()));
  }
  for (const auto& [name, value] : settings.get("DEFAULT_REQUEST_HEADERS").items()) {
    if (value.is_string()) from_settings_.emplace_back(ascii_lower(name), value.get<std::string>());
  }
}

bool request_secrets::is_secret(std::string_view name, std::string_view value) const {
  auto key = ascii_lower(name);
  for (const auto& sensitive : sensitive_) {
    if (key == sensitive) return true;
  }
  for (const auto& [default_name, default_value] : from_settings_) {
    if (key == default_name && value == default_value) return true;
  }
  return false;
}

header_list request_secrets::writable(const header_list& headers) const {
  header_list kept;
  kept.reserve(headers.size());
  for (const auto& [name, value] : headers) {
    if (!is_secret(name, value)) kept.emplace_back(name, value);
  }
  return kept;
}

nlohmann::json request_secrets::to_json(const request& request) const {
  auto json = request.to_json();
  if (auto headers = json.find("headers"); headers != json.end()) {
    auto& fields = *headers;
    for (auto field = fields.begin(); field != fields.end();) {
      if (is_secret(field->at(0).get_ref<const std::string&>(),
                    field->at(1).get_ref<const std::string&>())) {
        field = fields.erase(field);
      } else {
        ++field;
      }
    }
    if (fields.empty()) json.erase(headers);
  }
  without_proxy_credentials(json["meta"]);
  return json;
}

request request_secrets::writable(const request& request) const {
  auto kept = request;
  kept.headers = writable(request.headers);
  without_proxy_credentials(kept.meta);
  return kept;
}

}  // namespace crawler
