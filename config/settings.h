// The settings model: Scrapy's names and defaults, loaded in three layers.
//
//   crawler::settings s;                       // built-in defaults (known_settings())
//   s.merge_json(file["settings"], "settings"); // the config file's "settings" object
//   s.set_from_string("DUPEFILTER_CLASS=bloom"); // each -s KEY=VALUE, last wins
//   auto capacity = s.get_int("BLOOMFILTER_CAPACITY");
//
// Every key must be declared (known_settings()); an unknown key is an error that suggests the
// nearest known name, a value of the wrong type names the key path and the expected type, and a
// number outside its range (or nan, inf) names the key path and the accepted range.
// Values are checked when they are set, so a crawl never starts on a setting it cannot read.
// A settings object is a value: copy it freely; it is not synchronised for concurrent writers.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace crawler {

/// A setting that cannot be accepted. what() names where it came from (a JSON path such as
/// `settings.BLOOMFILTER_BIT`, or `-s BLOOMFILTER_BIT`), the key and what is wrong with it.
class settings_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The types a setting can hold. `optional_string` also accepts null (e.g. JOBDIR, REDIS_URL).
/// `flag_or_dict`: true/false, or an object of options (Scrapy's PERIODIC_LOG_STATS = True or
/// {"include": [...]}).
enum class setting_type {
  boolean,
  integer,
  number,
  string,
  optional_string,
  list,
  dict,
  flag_or_dict
};

/// The values a numeric setting accepts. Numbers must also be finite: nan and inf are never a
/// delay, a timeout or a count.
struct setting_range {
  double min = -1e300;
  double max = 1e300;
  bool min_exclusive = false;  // true: the value must be greater than min (a timeout of 0)
  bool max_exclusive = false;  // true: the value must be less than max (an error rate of 1)
};

/// One declared setting: its name, type, built-in default, a one-line description and, for
/// numbers, the range of values it accepts.
struct setting_spec {
  std::string_view name;
  setting_type type;
  nlohmann::json default_value;
  std::string_view doc;
  setting_range range{};
};

/// Every setting the framework knows, with Scrapy's defaults (scrapy-redis's for the Redis ones);
/// README's settings table says where a default differs, and why.
std::span<const setting_spec> known_settings();

/// The candidate closest to `name` by edit distance, if close enough to be what was meant (at
/// most 2 edits, or a third of the name); "" otherwise. For "did you mean" messages.
std::string_view nearest_name(std::string_view name, std::span<const std::string_view> candidates);

/// A key template as scrapy-redis spells them ("%(spider)s:requests", "%(name)s:start_urls") for
/// the spider called `spider`: "books:requests".
std::string spider_key(std::string_view key_template, std::string_view spider);

/// The name of `type` as error messages spell it ("an integer", "a list", ...).
std::string_view describe(setting_type type);

class settings {
 public:
  /// Built-in defaults for every known setting.
  settings();

  /// Sets every member of the JSON object `object`; `path` (e.g. "settings") prefixes the key in
  /// errors. Throws settings_error on an unknown key or a value of the wrong type.
  void merge_json(const nlohmann::json& object, std::string_view path = "settings");

  /// Parses one command-line override `KEY=VALUE`. VALUE is read according to KEY's type: booleans
  /// accept true/false/1/0 (any case), lists a JSON array or comma-separated words, dicts a JSON
  /// object. Throws settings_error naming `-s KEY`.
  void set_from_string(std::string_view key_equals_value);

  /// Sets one value; `where` names its origin for error messages.
  void set(std::string_view key, nlohmann::json value, std::string_view where = "");

  bool get_bool(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  double get_double(std::string_view key) const;
  /// The string value; an unset optional string reads as "".
  std::string get_string(std::string_view key) const;
  std::vector<std::string> get_list(std::string_view key) const;
  const nlohmann::json& get(std::string_view key) const;

  /// True when the value differs from its built-in default's absence, i.e. is not null.
  bool has(std::string_view key) const;

  /// All values as one JSON object (sorted keys), e.g. for logging "Overridden settings".
  nlohmann::json to_json() const;

  /// Declares a setting of the user's own (a spider's or a crawl file's `user_settings`), typed
  /// by its default: true declares a boolean, 3 an integer, 0.5 a number, "x" a string, null a
  /// string or null, [] a list, {} an object. From then on it is set and read like one of ours,
  /// and an unknown name is still an error. Throws settings_error (naming `where.name`) when the
  /// name is already a setting.
  void declare(std::string_view name, nlohmann::json default_value, std::string_view where);

  /// What the crawl says once at start about what it was given and will not use: a line for each
  /// Scrapy setting that means nothing here (inert_settings.h), naming what to use instead. Empty
  /// when there is nothing to say.
  std::vector<std::string> warnings() const;

 private:
  // The spec of one of ours, or of one the user declared (its name views declared_'s key).
  std::optional<setting_spec> spec_of(std::string_view key) const;

  std::map<std::string, nlohmann::json, std::less<>> values_;
  std::map<std::string, setting_type, std::less<>> declared_;
};

/// The spider's name as its Redis keys carry it: "{books}" on a Redis Cluster (REDIS_CLUSTER_NODES
/// set), so that every key of the crawl lies in the hash slot of its name (a script's keys must
/// share one slot there), else "books", as scrapy-redis names them.
std::string key_spider_name(const settings& settings, std::string_view spider);

/// Whether `settings`' components dict `setting` (DOWNLOADER_MIDDLEWARES, ...) maps `name` to
/// null: Scrapy's way of turning a built-in off ({"...CookiesMiddleware": None}).
bool removes_component(const settings& settings, std::string_view setting, std::string_view name);

}  // namespace crawler
