#include "crawler/config_spider.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/ascii.h"
#include "config/settings.h"
#include "crawler/detail/placeholders.h"
#include "crawler/parse/processors.h"
#include "crawler/parse/regex.h"
#include "crawler/parse/sitemap.h"
#include "scheduler/scheduler.h"
#include "scheduler/shared_request.h"

namespace crawler {
namespace {

using json = nlohmann::ordered_json;  // a callback's fields keep the file's order

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw config_error(path + ": " + what);
}

// Rejects keys outside `known`, each on a line of its own, suggesting the nearest one.
void check_keys(const json& object, const std::string& path,
                std::initializer_list<std::string_view> known) {
  if (!object.is_object()) fail(path, "must be an object");
  std::vector<std::string_view> names(known);
  std::string unknown;
  for (const auto& [key, value] : object.items()) {
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    std::string message = "unknown key \"" + key + "\"";
    if (auto best = nearest_name(key, names); !best.empty()) {
      message += " (did you mean \"" + std::string(best) + "\"?)";
    }
    if (!unknown.empty()) unknown += '\n';
    unknown += (path.empty() ? key : path + "." + key) + ": " + message;
  }
  if (!unknown.empty()) throw config_error(unknown);
}

// Every problem of a crawl file, so that one look lists them all: each part is checked on its
// own, and a part that fails is left out of the spider while the others are still checked.
class problem_list {
 public:
  /// Runs `check`; a config_error it throws is recorded (a line a problem) and false returned.
  template <typename Check>
  bool attempt(Check&& check) {
    try {
      check();
      return true;
    } catch (const config_error& error) {
      if (!text_.empty()) text_ += '\n';
      text_ += error.what();
      return false;
    }
  }
  /// Throws one config_error holding every problem, a line each, if there was any.
  void throw_if_any() const {
    if (!text_.empty()) throw config_error(text_);
  }

 private:
  std::string text_;
};

// Each setting through the settings model on its own, so every bad one is named.
// `declared`: our settings and the file's user_settings.
void check_settings(const json& object, const std::string& path, const settings& declared,
                    problem_list& problems) {
  for (const auto& entry : object.items()) {
    const auto& key = entry.key();
    const auto& value = entry.value();
    problems.attempt([&] {
      try {
        settings checked = declared;
        checked.merge_json(nlohmann::json{{key, value}}, path);
      } catch (const settings_error& error) {
        throw config_error(error.what());
      }
    });
  }
}

std::string child(const std::string& path, std::string_view key) {
  return path + "." + std::string(key);
}
std::string index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string get_string(const json& object, const std::string& path, std::string_view key,
                       bool required) {
  auto found = object.find(key);
  if (found == object.end()) {
    if (required) fail(child(path, key), "is required");
    return {};
  }
  if (!found->is_string()) fail(child(path, key), "must be a string");
  return found->get<std::string>();
}

std::vector<std::string> get_strings(const json& object, const std::string& path,
                                     std::string_view key) {
  std::vector<std::string> values;
  auto found = object.find(key);
  if (found == object.end()) return values;
  auto where = child(path, key);
  if (found->is_string()) return {found->get<std::string>()};  // a single value, as Scrapy allows
  if (!found->is_array()) fail(where, "must be a list of strings");
  for (std::size_t i = 0; i < found->size(); ++i) {
    if (!(*found)[i].is_string()) fail(index(where, i), "must be a string");
    values.push_back((*found)[i].get<std::string>());
  }
  return values;
}

bool get_bool(const json& object, const std::string& path, std::string_view key, bool fallback) {
  auto found = object.find(key);
  if (found == object.end()) return fallback;
  if (!found->is_boolean()) fail(child(path, key), "must be true or false");
  return found->get<bool>();
}

void check_selector(const std::string& query, const std::string& where, bool xpath = false) {
  try {
    if (xpath) {
      validate_xpath(query);
    } else {
      validate_selector(query);
    }
  } catch (const selector_error& error) {
    fail(where, error.what());
  }
}

// One item field, as the file describes it.
struct field {
  std::string name;
  enum class kind { css, xpath, url, status, depth } source = kind::css;
  std::string css;  // the CSS selector or XPath expression
  bool all = false;
  std::shared_ptr<const re2::RE2> re;  // null: none
  // "input" and "output", as an item loader's: empty when the file gives none.
  processors::processor input, output;
};

// "input": value functions by name, as MapCompose(remove_tags, str.strip) applies them.
processors::processor read_input(const json& spec, const std::string& where) {
  std::vector<processors::value_function> functions;
  auto names = get_strings(spec, where, "input");
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto function = processors::value_function_named(names[i]);
    if (!function) {
      auto known = processors::value_function_names();
      std::string message = "unknown function \"" + names[i] + "\"";
      if (auto best = nearest_name(names[i], known); !best.empty()) {
        message += " (did you mean \"" + std::string(best) + "\"?)";
      }
      std::string listed;
      for (auto name : known) listed += (listed.empty() ? "" : ", ") + std::string(name);
      fail(index(child(where, "input"), i), message + "; the functions are " + listed);
    }
    functions.push_back(std::move(*function));
  }
  return processors::map_compose(std::move(functions));
}

// "output": "TakeFirst", "Identity", "Join" or {"Join": separator}, as Scrapy's processors.
processors::processor read_output(const json& output, const std::string& where) {
  if (output == "TakeFirst") return processors::take_first();
  if (output == "Identity") return processors::identity();
  if (output == "Join") return processors::join();
  if (output.is_object() && output.size() == 1 && output.contains("Join")) {
    if (!output["Join"].is_string()) fail(child(where, "Join"), "must be a string");
    return processors::join(output["Join"].get<std::string>());
  }
  fail(where, "must be \"TakeFirst\", \"Identity\", \"Join\" or {\"Join\": separator}");
}

field read_field(const std::string& name, const json& spec, const std::string& where) {
  field result{name};
  std::string css;
  if (spec.is_string()) {
    css = spec.get<std::string>();
    if (css.starts_with("$")) {
      static const std::vector<std::string_view> variables = {"$url", "$status", "$depth"};
      if (css == "$url") {
        result.source = field::kind::url;
      } else if (css == "$status") {
        result.source = field::kind::status;
      } else if (css == "$depth") {
        result.source = field::kind::depth;
      } else {
        std::string message = "unknown variable \"" + css + "\"";
        if (auto best = nearest_name(css, variables); !best.empty()) {
          message += " (did you mean \"" + std::string(best) + "\"?)";
        }
        fail(where, message + "; $url, $status and $depth exist");
      }
      return result;
    }
  } else if (spec.is_object()) {
    check_keys(spec, where, {"css", "xpath", "all", "re", "input", "output"});
    bool xpath = spec.contains("xpath");
    if (xpath == spec.contains("css")) fail(where, "needs one of \"css\" and \"xpath\"");
    css = get_string(spec, where, xpath ? "xpath" : "css", true);
    if (xpath) result.source = field::kind::xpath;
    result.all = get_bool(spec, where, "all", false);
    if (spec.contains("input")) result.input = read_input(spec, where);
    if (spec.contains("output")) {
      if (spec.contains("all")) {
        fail(child(where, "all"),
             "does not go with \"output\" (\"output\": \"Identity\" keeps every value)");
      }
      result.output = read_output(spec["output"], child(where, "output"));
    }
    if (auto re = get_string(spec, where, "re", false); !re.empty()) {
      try {
        result.re = compile_regex(re);
      } catch (const std::invalid_argument& error) {
        fail(child(where, "re"), error.what());
      }
    }
    check_selector(css, child(where, xpath ? "xpath" : "css"), xpath);
    result.css = css;
    return result;
  } else {
    fail(where,
         "must be a CSS selector, an XPath expression, $url/$status/$depth, or {\"css\" or "
         "\"xpath\": ..., \"all\", \"re\", \"input\", \"output\"}");
  }
  if (looks_like_xpath(css)) result.source = field::kind::xpath;
  check_selector(css, where, result.source == field::kind::xpath);
  result.css = css;
  return result;
}

json extract(const field& spec, const response& response) {
  switch (spec.source) {
    case field::kind::url:
      return response.url;
    case field::kind::status:
      return response.status;
    case field::kind::depth:
      // As stored, not converted to int: a request read from a shared queue may carry any number
      // there, and one past int's range does not convert.
      return response.meta().value("depth", nlohmann::json(0));
    case field::kind::css:
    case field::kind::xpath:
      break;
  }
  json values = json::array();
  auto selection =
      spec.source == field::kind::xpath ? response.xpath(spec.css) : response.css(spec.css);
  // With processors, a match is what an item loader's add_css/add_xpath hands them: a text's or
  // attribute's value as it is, an element's HTML; they do the cleaning. Without, a field is a
  // convenience: an element's text, whitespace collapsed, or a value trimmed.
  bool as_loader = spec.input || spec.output;
  for (const auto& selected : selection) {
    auto text = as_loader               ? selected.get()
                : selected.is_element() ? selected.text_content()
                                        : std::string(trim_ascii_space(selected.get()));
    if (spec.re) {
      // The first group when there is one, else the whole match; every match with "all".
      for_each_match(*spec.re, text, [&](std::span<const std::string_view> groups) {
        values.push_back(std::string(groups.size() > 1 ? groups[1] : groups[0]));
        return spec.all;
      });
    } else {
      values.push_back(std::move(text));
    }
    // With processors, every match goes through them, as an item loader's add_css.
    if (!spec.all && !as_loader && !values.empty()) break;
  }
  if (spec.input || spec.output) {
    auto collected = spec.input ? spec.input(processors::value(values)) : processors::value(values);
    auto output = spec.output ? spec.output
                  : spec.all  ? processors::identity()
                              : processors::take_first();
    return json(output(collected));
  }
  if (spec.all) return values;
  return values.empty() ? json(nullptr) : values.front();
}

class config_spider : public crawl_spider {
 public:
  explicit config_spider(std::string name) : crawl_spider(std::move(name)) {
    concurrent_callbacks = true;  // its rules and fields are fixed once the file is loaded
    callback("_sitemap", [this](const response& response, output& out) { sitemap(response, out); });
  }

  void add_callback(const std::string& name, std::vector<field> fields) {
    callback(name, [fields = std::move(fields)](const response& response, output& out) {
      crawler::item item = crawler::item::object();
      for (const auto& spec : fields) item[spec.name] = extract(spec, response);
      out.item(std::move(item));
    });
  }

  // Fields and rules read pages through their document; a sitemap is read whole.
  bool reads_only_the_document(const request& request) const override {
    return request.callback != "_sitemap";
  }

  // A callback named as Scrapy's CrawlSpider hook runs on the start pages (and sitemap pages).
  void parse_start_url(const response& response, output& out) override {
    if (has_callback("parse_start_url")) call("parse_start_url", response, out);
  }

  void start_requests(output& out) override {
    crawl_spider::start_requests(out);
    for (const auto& url : sitemap_urls) {
      crawler::request request{url, "_sitemap"};
      request.dont_filter = true;
      out.request(std::move(request));
    }
  }

  std::vector<std::string> sitemap_urls;

 private:
  // Pages listed in a sitemap are start pages: their links go through the rules.
  void sitemap(const response& response, output& out) {
    auto found = read_sitemap(response);
    for (auto& url : found.urls) out.request(crawler::request{std::move(url)});
    for (auto& nested : found.sitemaps)
      out.request(crawler::request{std::move(nested), "_sitemap"});
  }
};

link_extractor_options read_extractor(const json& rule, const std::string& where) {
  link_extractor_options options;
  options.allow = get_strings(rule, where, "allow");
  options.deny = get_strings(rule, where, "deny");
  options.allow_domains = get_strings(rule, where, "allow_domains");
  options.deny_domains = get_strings(rule, where, "deny_domains");
  options.restrict_css = get_strings(rule, where, "restrict_css");
  options.restrict_xpaths = get_strings(rule, where, "restrict_xpaths");
  if (rule.contains("tags")) options.tags = get_strings(rule, where, "tags");
  if (rule.contains("attrs")) options.attrs = get_strings(rule, where, "attrs");
  options.canonicalize = get_bool(rule, where, "canonicalize", false);
  options.unique = get_bool(rule, where, "unique", true);
  if (rule.contains("deny_extensions")) {
    options.deny_extensions = get_strings(rule, where, "deny_extensions");
  }
  return options;
}

}  // namespace

crawl_config load_crawl_config(const json& document) {
  problem_list problems;
  if (!document.is_object()) fail("(top)", "must be an object with \"settings\" and \"spider\"");
  problems.attempt([&] { check_keys(document, "", {"settings", "user_settings", "spider"}); });
  crawl_config config;
  settings declared;
  if (auto own = document.find("user_settings"); own != document.end()) {
    if (problems.attempt([&] {
          if (!own->is_object()) {
            fail("user_settings", "must be an object: your own settings and their defaults");
          }
        })) {
      for (const auto& entry : own->items()) {
        problems.attempt([&, &key = entry.key(), &value = entry.value()] {
          try {
            declared.declare(key, value, "user_settings");
            config.user_settings[key] = value;
          } catch (const settings_error& error) {
            throw config_error(error.what());
          }
        });
      }
    }
  }
  if (auto settings = document.find("settings"); settings != document.end()) {
    if (problems.attempt([&] {
          if (!settings->is_object()) fail("settings", "must be an object");
        })) {
      config.settings = *settings;
      check_settings(*settings, "settings", declared, problems);
    }
  }
  auto spider_json = document.find("spider");
  if (spider_json == document.end() || !spider_json->is_object()) {
    problems.attempt([&] {
      fail("spider", spider_json == document.end() ? "is required" : "must be an object");
    });
    problems.throw_if_any();
  }
  const std::string path = "spider";
  problems.attempt([&] {
    check_keys(*spider_json, path,
               {"name", "start_urls", "allowed_domains", "rules", "callbacks", "custom_settings"});
  });
  std::string name = "spider";
  problems.attempt([&] {
    name = get_string(*spider_json, path, "name", true);
    if (auto problem = spider_name_problem(name); !problem.empty()) {
      fail(child(path, "name"), problem);
    }
  });
  auto spider = std::make_unique<config_spider>(name);

  auto start = spider_json->find("start_urls");
  // scrapy-redis's RedisSpider: a fleet's workers may start from URLs pushed to Redis alone.
  auto scheduler = config.settings.find("SCHEDULER");
  bool push_only = scheduler != config.settings.end() && scheduler->is_string() &&
                   scheduler_is_redis(scheduler->get<std::string>());
  if (start == spider_json->end() && !push_only) {
    problems.attempt([&] {
      fail(child(path, "start_urls"),
           "is required, unless settings.SCHEDULER is \"redis\" (workers that wait for URLs "
           "pushed with crawler push)");
    });
  }
  config.push_only = start == spider_json->end() && push_only;
  bool start_ok = start != spider_json->end() && problems.attempt([&] {
    if (!start->is_array() || start->empty()) {
      fail(child(path, "start_urls"), "must be a non-empty list of URLs or {\"sitemap\": URL}");
    }
  });
  for (std::size_t i = 0; start_ok && i < start->size(); ++i) {
    problems.attempt([&] {
      const auto& entry = (*start)[i];
      auto where = index(child(path, "start_urls"), i);
      if (entry.is_string()) {
        auto url = entry.get<std::string>();
        if (auto missing = missing_scheme_problem(url); !missing.empty()) {
          fail(where, missing + " (a file beside the crawl file is file:PATH)");
        }
        spider->start_urls.push_back(std::move(url));
      } else if (entry.is_object()) {
        check_keys(entry, where, {"sitemap"});
        auto url = get_string(entry, where, "sitemap", true);
        if (auto missing = missing_scheme_problem(url); !missing.empty()) {
          fail(child(where, "sitemap"), missing);
        }
        spider->sitemap_urls.push_back(std::move(url));
      } else {
        fail(where, "must be a URL or {\"sitemap\": URL}");
      }
    });
  }
  problems.attempt(
      [&] { spider->allowed_domains = get_strings(*spider_json, path, "allowed_domains"); });
  if (auto custom = spider_json->find("custom_settings"); custom != spider_json->end()) {
    if (problems.attempt([&] {
          if (!custom->is_object()) fail(child(path, "custom_settings"), "must be an object");
        })) {
      spider->custom_settings = *custom;
      check_settings(*custom, child(path, "custom_settings"), declared, problems);
    }
  }

  std::vector<std::string> callback_names;
  if (auto callbacks = spider_json->find("callbacks"); callbacks != spider_json->end()) {
    auto where = child(path, "callbacks");
    bool callbacks_ok = problems.attempt([&] {
      if (!callbacks->is_object()) fail(where, "must be an object of callback names");
    });
    static const json none = json::object();
    const json& listed = callbacks_ok ? *callbacks : none;
    for (const auto& entry : listed.items()) {
      const std::string& callback_name = entry.key();
      const json& spec = entry.value();
      // A callback with a bad field still exists: rules naming it are not a second problem.
      callback_names.push_back(callback_name);
      auto callback_path = child(where, callback_name);
      auto fields_path = child(callback_path, "fields");
      auto fields_json = spec.is_object() ? spec.find("fields") : spec.end();
      bool spec_ok = problems.attempt([&] {
        check_keys(spec, callback_path, {"fields"});
        if (fields_json == spec.end()) fail(fields_path, "is required");
        if (!fields_json->is_object()) fail(fields_path, "must be an object");
      });
      if (!spec_ok) continue;
      std::vector<field> fields;
      for (const auto& field_entry : fields_json->items()) {
        const std::string& field_name = field_entry.key();
        const json& field_spec = field_entry.value();
        problems.attempt([&] {
          fields.push_back(read_field(field_name, field_spec, child(fields_path, field_name)));
        });
      }
      spider->add_callback(callback_name, std::move(fields));
    }
  }

  if (auto rules = spider_json->find("rules"); rules != spider_json->end()) {
    auto where = child(path, "rules");
    bool rules_ok = problems.attempt([&] {
      if (!rules->is_array()) fail(where, "must be a list of rules");
    });
    for (std::size_t i = 0; rules_ok && i < rules->size(); ++i) {
      const auto& rule_json = (*rules)[i];
      auto rule_path = index(where, i);
      if (!problems.attempt([&] {
            if (!rule_json.is_object()) fail(rule_path, "must be an object");
          })) {
        continue;
      }
      // Each part of a rule on its own, so that a misspelt key does not hide a bad callback.
      bool keys_ok = problems.attempt([&] {
        check_keys(
            rule_json, rule_path,
            {"allow", "deny", "allow_domains", "deny_domains", "restrict_css", "restrict_xpaths",
             "tags", "attrs", "canonicalize", "unique", "deny_extensions", "callback", "follow"});
      });
      std::optional<link_extractor> extractor;
      problems.attempt([&] {
        // The link extractor checks its own regexes and selectors ("allow[1]: invalid regex
        // ..."); the rule's path in front makes that a path into the file.
        try {
          extractor.emplace(read_extractor(rule_json, rule_path));
        } catch (const std::invalid_argument& error) {
          throw config_error(rule_path + "." + error.what());
        }
      });
      std::string callback;
      bool callback_ok = problems.attempt([&] {
        callback = get_string(rule_json, rule_path, "callback", false);
        if (!callback.empty() && std::find(callback_names.begin(), callback_names.end(),
                                           callback) == callback_names.end()) {
          std::vector<std::string_view> names(callback_names.begin(), callback_names.end());
          std::string message = "no callback \"" + callback + "\" in spider.callbacks";
          if (auto best = nearest_name(callback, names); !best.empty()) {
            message += " (did you mean \"" + std::string(best) + "\"?)";
          }
          fail(child(rule_path, "callback"), message);
        }
      });
      std::optional<bool> follow;
      bool follow_ok = problems.attempt([&] {
        if (rule_json.contains("follow")) follow = get_bool(rule_json, rule_path, "follow", true);
      });
      if (!keys_ok || !extractor || !callback_ok || !follow_ok) continue;
      rule made{std::move(*extractor)};
      made.callback = std::move(callback);
      if (follow) made.follow = *follow;
      spider->rules.push_back(std::move(made));
    }
  }
  problems.throw_if_any();
  // A callback only a rule or the start pages reach: any other never runs, and its crawl ends
  // with no item and no word of why but the selectors'.
  for (const auto& name : callback_names) {
    bool named = name == "parse_start_url" ||
                 std::any_of(spider->rules.begin(), spider->rules.end(),
                             [&name](const rule& r) { return r.callback == name; });
    if (named) continue;
    std::string why = child(child(path, "callbacks"), name) +
                      ": no rule names it (rules[].callback), and the start pages go to "
                      "parse_start_url, so it never runs";
    if (name == "parse") {
      why += " (a CrawlSpider keeps parse for itself, as Scrapy's does: name the start pages' "
             "callback parse_start_url)";
    }
    config.unreachable.push_back(std::move(why));
  }
  spider->user_settings = config.user_settings;
  config.spider = std::move(spider);
  return config;
}

// Where byte `offset` of `content` is, as people look for it: "LINE:COLUMN".
std::string line_and_column(const std::string& content, std::size_t offset) {
  offset = std::min(offset, content.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (content[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// A crawl file is a small regular file: /dev/zero, a FIFO or a 1 GB file is refused before it is
// read.
constexpr std::uintmax_t max_crawl_file_size = 16 << 20;

crawl_config load_crawl_config_file(const std::string& path, const spider_arguments& arguments) {
  std::error_code error;
  auto status = std::filesystem::status(path, error);
  if (!error && status.type() != std::filesystem::file_type::regular &&
      status.type() != std::filesystem::file_type::not_found) {
    throw config_error(path + ": not a regular file; a crawl file is a JSON file");
  }
  if (auto size = std::filesystem::file_size(path, error); !error && size > max_crawl_file_size) {
    throw config_error(path + ": " + std::to_string(size) + " bytes, over the " +
                       std::to_string(max_crawl_file_size >> 20) + " MiB a crawl file may hold");
  }
  std::ifstream in(path);
  if (!in) throw config_error(path + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  json document;
  try {
    document = json::parse(text.str());
  } catch (const json::parse_error& error) {
    // nlohmann reports a byte offset, past the byte it stopped at.
    throw config_error(path + ":" + line_and_column(text.str(), error.byte ? error.byte - 1 : 0) +
                       ": not valid JSON: " + error.what());
  } catch (const json::out_of_range& error) {
    // A number no double holds (1e400): nlohmann names it, not where it is.
    std::string what = error.what();
    auto quoted = what.find('\'');
    auto number = quoted == std::string::npos
                      ? std::string()
                      : what.substr(quoted + 1, what.rfind('\'') - quoted - 1);
    auto at = number.empty() ? std::string::npos : text.str().find(number);
    throw config_error(path +
                       (at == std::string::npos ? "" : ":" + line_and_column(text.str(), at)) +
                       ": the number " + number +
                       " is out of range: settings and fields take "
                       "finite numbers");
  }
  // A relative file URL ("file:books/index.html") names a file beside the crawl file, so examples
  // run offline from any working directory. A URL without a scheme is an error, as in Scrapy,
  // never taken for a path.
  auto folder = std::filesystem::absolute(std::filesystem::path(path)).parent_path();
  std::string argument_problems;
  auto resolve = [&](json& url, const std::string& where) {
    if (!url.is_string()) return;
    std::string text;
    try {
      text = detail::expand_placeholders(url.get<std::string>(), arguments);
    } catch (const detail::placeholder_error& error) {
      std::string why = error.what();
      if (!error.name.empty()) {
        why = "%(" + error.name + ")s names a spider argument this run was not given (-a " +
              error.name + "=VALUE)";
      }
      argument_problems += path + ": " + where + ": " + why + "\n";
      return;
    }
    url = text;
    if (text.starts_with("file:") && !text.starts_with("file:/")) {
      url = "file://" + (folder / text.substr(5)).lexically_normal().string();
    }
  };
  if (document.is_object() && document.contains("spider") && document["spider"].is_object()) {
    auto& start = document["spider"]["start_urls"];
    if (start.is_array()) {
      for (std::size_t i = 0; i < start.size(); ++i) {
        auto where = "spider.start_urls[" + std::to_string(i) + "]";
        if (start[i].is_object() && start[i].contains("sitemap")) {
          resolve(start[i]["sitemap"], where + ".sitemap");
        } else {
          resolve(start[i], where);
        }
      }
    } else if (start.is_null()) {
      document["spider"].erase("start_urls");
    }
  }
  if (!argument_problems.empty()) {
    argument_problems.pop_back();
    throw config_error(argument_problems);
  }
  try {
    return load_crawl_config(document);
  } catch (const config_error& error) {
    // Each problem on its own line, each with the file in front.
    std::string problems, line;
    std::istringstream lines(error.what());
    while (std::getline(lines, line)) {
      if (!problems.empty()) problems += '\n';
      problems += path + ": " + line;
    }
    throw config_error(problems);
  }
}

}  // namespace crawler
