// Crawls described by a JSON file, no C++: `crawler run FILE.json`.
//
//   {
//     "settings": {"CONCURRENT_REQUESTS": 32, "DUPEFILTER_CLASS": "bloom"},
//     "spider": {
//       "name": "books",
//       "start_urls": ["https://books.example/", {"sitemap": "https://books.example/sitemap.xml"}],
//       "allowed_domains": ["books.example"],
//       "rules": [
//         {"allow": ["/catalogue/page-\\d+\\.html"], "follow": true},
//         {"allow": ["/catalogue/[^/]+/index\\.html"], "callback": "book"}
//       ],
//       "callbacks": {
//         "book": {"fields": {"url": "$url", "title": "h1::text",
//                             "price": {"css": "p.price_color::text", "re": "[\\d.]+"},
//                             "tags": {"css": "ul.tags a::text", "all": true}}}
//       }
//     }
//   }
//
// The spider is a crawl_spider: rules as in Scrapy's CrawlSpider (each link to the first rule that
// extracts it; `follow` defaults to true without a callback); a callback named "parse_start_url"
// makes an item of each start page, as that CrawlSpider hook does. A rule takes the link
// extractor's options (allow, deny, allow_domains, deny_domains, restrict_css, tags, attrs,
// canonicalize, unique, deny_extensions, restrict_xpaths). A field is a CSS selector (the first
// match's text, trimmed) or an XPath expression (a string that can only be XPath, "//h1/text()",
// or {"xpath": ...}), {"css" or "xpath", "all": true} for every match, {..., "re"} for a regex's
// first match (every match with "all"), or $url, $status, $depth. A field with no match is null;
// the item is still exported, its fields in the file's order. A field may clean its values as an
// item loader does (item_loader.h): "input" names functions each match goes through
// (["remove_tags", "strip", "replace_escape_chars"], as MapCompose), and "output" makes the
// field of them ("TakeFirst", the default; "Identity", a list; "Join" or {"Join": ", "}). With
// either, the matches are what an item loader's add_css gets: a text or attribute untrimmed, an
// element's HTML.
//
// Everything is checked before anything is fetched: unknown keys (with a suggestion), wrong types,
// invalid regexes and selectors, callbacks that do not exist, each setting's value. Every problem
// is reported, a line each, naming its JSON path (`crawler check FILE.json` prints them):
//   spider.rules[1].allow[0]: invalid regex "(": ...
//   settings.DOWNLOAD_DELAY: expected a finite number >= 0 and <= 86400, got -1
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "crawler/crawl_spider.h"

namespace crawler {

/// A crawl file that cannot be used. what() holds every problem, a line each, starting with its
/// JSON path.
class config_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct crawl_config {
  /// The file's "settings" object (checked by the settings model when merged).
  nlohmann::json settings = nlohmann::json::object();
  /// The file's "user_settings": settings of the user's own and their defaults, which "settings"
  /// and -s may then set (settings::declare); also the spider's user_settings.
  nlohmann::json user_settings = nlohmann::json::object();
  std::unique_ptr<crawl_spider> spider;
  /// No start_urls: the file's settings say SCHEDULER redis, and its workers wait for URLs
  /// pushed to Redis (scrapy-redis's RedisSpider). A run whose -s picks another scheduler has
  /// nothing to start from.
  bool push_only = false;
  /// Callbacks no request can reach, a line each ("spider.callbacks.NAME: why"): no rule names
  /// them, and start pages go to parse_start_url. `crawler check` counts each as a problem, and
  /// `crawler run` warns of it before it starts.
  std::vector<std::string> unreachable;
};

/// Validates `document` and builds its spider; items have their fields in the document's order.
/// Throws config_error.
crawl_config load_crawl_config(const nlohmann::ordered_json& document);
/// Spider arguments (`-a NAME=VALUE`), by name.
using spider_arguments = std::map<std::string, std::string, std::less<>>;

/// Reads and validates the file at `path`; JSON syntax errors name the line and column. A start
/// URL may name spider arguments, `"%(start)s"` or `"https://%(host)s/"`: they are put in first,
/// and one the run was not given is an error naming it. Start URLs "file:PATH" are files
/// relative to the crawl file's folder.
crawl_config load_crawl_config_file(const std::string& path,
                                    const spider_arguments& arguments = {});

}  // namespace crawler
