#include "scheduler/fleet/scrapy_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace crawler {
namespace {

using pickle::value;
using kind = pickle::value::kind;

[[noreturn]] void refuse(std::string_view where, std::string_view member, std::string_view what) {
  throw std::invalid_argument(std::string(where) + ": \"" + std::string(member) + "\" " +
                              std::string(what));
}

// Well-formed UTF-8 sequences (nlohmann::json and every JSON reader need it).
bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    auto byte = static_cast<unsigned char>(text[i]);
    std::size_t extra = byte < 0x80             ? 0
                        : (byte & 0xe0) == 0xc0 ? 1
                        : (byte & 0xf0) == 0xe0 ? 2
                        : (byte & 0xf8) == 0xf0 ? 3
                                                : 4;
    if (extra == 4 || text.size() - i <= extra) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    }
    i += extra + 1;
  }
  return true;
}

// A str or bytes member as bytes (Scrapy accepts either for headers and bodies).
std::string bytes_of(const value& v, std::string_view where, std::string_view member) {
  if (v.type == kind::text || v.type == kind::bytes) return v.text;
  refuse(where, member, "is a " + std::string(v.type_name()) + ", not bytes or str");
}

nlohmann::json to_json(const value& v, std::string_view where, const std::string& path,
                       std::size_t depth = 0) {
  switch (v.type) {
    case kind::none:
      return nullptr;
    case kind::boolean:
      return v.boolean;
    case kind::integer:
      return v.integer;
    case kind::real:
      if (!std::isfinite(v.real)) refuse(where, path, "holds a float that is not finite");
      return v.real;
    case kind::text:
    case kind::bytes:
      if (!is_utf8(v.text)) refuse(where, path, "holds text that is not UTF-8");
      return v.text;
    case kind::list:
    case kind::tuple: {
      auto out = nlohmann::json::array();
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        out.push_back(to_json(v.items[i], where, path + "[" + std::to_string(i) + "]", depth + 1));
      }
      return out;
    }
    case kind::dict: {
      auto out = nlohmann::json::object();
      for (std::size_t i = 0; i + 1 < v.items.size(); i += 2) {
        const auto& key = v.items[i];
        std::string name;
        if (key.type == kind::text) {
          name = key.text;
        } else if (key.type == kind::integer) {
          name = std::to_string(key.integer);  // as json.dumps writes an int key
        } else {
          refuse(where, path, "has a " + std::string(key.type_name()) + " key");
        }
        out[name] = to_json(v.items[i + 1], where, path + "." + name, depth + 1);
      }
      return out;
    }
  }
  return nullptr;
}

value from_json(const nlohmann::json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::null:
      return {};
    case nlohmann::json::value_t::boolean:
      return value::of(json.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return value::of(json.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto n = json.get<std::uint64_t>();
      if (n > std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
        return value::of(double(n));
      }
      return value::of(std::int64_t(n));
    }
    case nlohmann::json::value_t::number_float:
      return value::of(json.get<double>());
    case nlohmann::json::value_t::string:
      return value::str(json.get<std::string>());
    case nlohmann::json::value_t::array: {
      auto out = value::list();
      for (const auto& item : json) out.items.push_back(from_json(item));
      return out;
    }
    case nlohmann::json::value_t::object: {
      auto out = value::dict();
      for (const auto& [name, item] : json.items()) out.set(name, from_json(item));
      return out;
    }
    default:
      return {};
  }
}

// What Scrapy's request_to_dict writes for a plain Request that did not set the member (as
// JSON: an empty tuple of flags is the empty list it is written back as).
// Whether a scrapy-redis worker could find a method by this name (Python's identifiers; bytes of
// non-ASCII letters are let through, as Python lets those letters through).
bool is_method_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    auto byte = static_cast<unsigned char>(c);
    return byte >= 0x80 || byte == '_' || (byte >= 'a' && byte <= 'z') ||
           (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9');
  });
}

bool is_default(std::string_view member, const nlohmann::json& v) {
  if (member == "cookies" || member == "cb_kwargs") return v.is_object() && v.empty();
  if (member == "flags") return v.is_array() && v.empty();
  if (member == "encoding") return v == "utf-8";
  return false;
}

}  // namespace

request request_from_scrapy_dict(const value& dict, std::string_view where) {
  if (dict.type != kind::dict) {
    throw std::invalid_argument(std::string(where) + ": a pickled " +
                                std::string(dict.type_name()) +
                                ", not a Scrapy request dict (request_to_dict)");
  }
  request out;
  auto carried = nlohmann::json::object();
  bool has_url = false;
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const auto& key = dict.items[i];
    const auto& member = dict.items[i + 1];
    if (key.type != kind::text) refuse(where, key.text, "is a key that is not a str");
    const auto& name = key.text;
    if (name == "url") {
      if (member.type != kind::text || member.text.empty())
        refuse(where, name, "must be a non-empty str");
      if (!is_utf8(member.text)) refuse(where, name, "is not UTF-8");
      out.url = member.text;
      has_url = true;
    } else if (name == "method") {
      if (member.type != kind::text || member.text.empty())
        refuse(where, name, "must be a non-empty str");
      out.method = member.text;
      for (auto& c : out.method) {
        if (c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
      }
    } else if (name == "callback" || name == "errback") {
      if (member.type != kind::none && member.type != kind::text) {
        refuse(where, name, "must be a method name or None");
      }
      (name == "callback" ? out.callback : out.errback) = member.text;
    } else if (name == "headers") {
      if (member.type == kind::none) continue;
      if (member.type != kind::dict) refuse(where, name, "must be a dict");
      for (std::size_t h = 0; h + 1 < member.items.size(); h += 2) {
        auto header = bytes_of(member.items[h], where, "headers");
        const auto& values = member.items[h + 1];
        if (values.type == kind::list || values.type == kind::tuple) {
          for (const auto& one : values.items) {
            out.headers.emplace_back(header, bytes_of(one, where, "headers." + header));
          }
        } else if (values.type != kind::none) {
          out.headers.emplace_back(header, bytes_of(values, where, "headers." + header));
        }
      }
    } else if (name == "body") {
      if (member.type != kind::none) out.body = bytes_of(member, where, name);
    } else if (name == "meta") {
      if (member.type == kind::none) continue;
      if (member.type != kind::dict) refuse(where, name, "must be a dict");
      out.meta = to_json(member, where, "meta");
    } else if (name == "cb_kwargs") {
      if (member.type == kind::none) continue;
      if (member.type != kind::dict) refuse(where, name, "must be a dict");
      out.cb_kwargs = to_json(member, where, "cb_kwargs");
    } else if (name == "cookies") {
      if (member.type == kind::none) continue;
      auto cookies = to_json(member, where, "cookies");
      if (auto problem = cookies_problem(cookies); !problem.empty())
        throw std::invalid_argument(std::string(where) + ": " + problem);
      out.cookies = std::move(cookies);
    } else if (name == "priority") {
      if (member.type != kind::integer || member.integer < std::numeric_limits<int>::min() ||
          member.integer > std::numeric_limits<int>::max()) {
        refuse(where, name, "must be an int");
      }
      out.priority = int(member.integer);
    } else if (name == "dont_filter") {
      if (member.type != kind::boolean) refuse(where, name, "must be True or False");
      out.dont_filter = member.boolean;
    } else if (auto kept = to_json(member, where, name); !is_default(name, kept)) {
      carried[name] = std::move(kept);
    }
  }
  if (!has_url) throw std::invalid_argument(std::string(where) + ": no \"url\"");
  if (!carried.empty()) out.meta[std::string(scrapy_request_meta_key)] = std::move(carried);
  return out;
}

value scrapy_dict_of(const request& request) {
  const nlohmann::json* carried = nullptr;
  if (auto found = request.meta.find(scrapy_request_meta_key);
      found != request.meta.end() && found->is_object()) {
    carried = &*found;
  }
  auto kept = [&](const char* member, value fallback) {
    if (carried) {
      if (auto found = carried->find(member); found != carried->end()) return from_json(*found);
    }
    return fallback;
  };
  // scrapy-redis pops an entry before it looks its callback up: a name no spider method can
  // have would be lost on that side, so it is refused here, before it is written.
  auto name_or_none = [&request](const char* member, const std::string& name) {
    if (name.empty()) return value{};
    if (!is_method_name(name)) {
      throw std::invalid_argument(
          request.describe() + ": its " + member + " \"" + name +
          "\" cannot be the name of a Python spider's method, which a scrapy-redis worker "
          "would look it up as (SCHEDULER_SERIALIZER = \"scrapy_redis.picklecompat\")");
    }
    return value::str(name);
  };
  auto out = value::dict();
  out.set("url", value::str(request.url));
  out.set("callback", name_or_none("callback", request.callback));
  out.set("errback", name_or_none("errback", request.errback));
  auto headers = value::dict();
  for (const auto& [name, field] : request.headers) {
    value* values = nullptr;
    for (std::size_t i = 0; i + 1 < headers.items.size(); i += 2) {
      if (headers.items[i].text == name) values = &headers.items[i + 1];
    }
    if (!values) {
      headers.items.push_back(value::bytes(name));
      headers.items.push_back(value::list());
      values = &headers.items.back();
    }
    values->items.push_back(value::bytes(field));
  }
  out.set("headers", std::move(headers));
  out.set("method", value::str(request.method));
  out.set("body", value::bytes(request.body));
  out.set("cookies", request.cookies.empty() ? value::dict() : from_json(request.cookies));
  auto meta = value::dict();
  if (request.meta.is_object()) {
    for (const auto& [name, item] : request.meta.items()) {
      if (name != scrapy_request_meta_key) meta.set(name, from_json(item));
    }
  }
  out.set("meta", std::move(meta));
  out.set("encoding", kept("encoding", value::str("utf-8")));
  out.set("priority", value::of(std::int64_t(request.priority)));
  out.set("dont_filter", value::of(request.dont_filter));
  out.set("flags", kept("flags", value::list()));
  auto kwargs = value::dict();
  if (request.cb_kwargs.is_object()) {
    for (const auto& [name, item] : request.cb_kwargs.items()) kwargs.set(name, from_json(item));
  }
  out.set("cb_kwargs", std::move(kwargs));
  if (carried) {
    for (const auto& [name, item] : carried->items()) {
      if (name != "cookies" && name != "encoding" && name != "flags" && name != "cb_kwargs" &&
          name != "_class") {
        out.set(name, from_json(item));
      }
    }
    if (auto found = carried->find("_class"); found != carried->end()) {
      out.set("_class", from_json(*found));
    }
  }
  return out;
}

}  // namespace crawler
