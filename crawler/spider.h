// Spiders: a name, where to start, and callbacks that turn responses into items and requests.
//
//   class quotes : public crawler::spider {
//    public:
//     quotes() : spider("quotes") {
//       start_urls = {"https://quotes.toscrape.com/api/quotes?page=1"};
//       callback("parse_author", &quotes::parse_author);   // callbacks are named: see request.h
//     }
//     void parse(const crawler::response& response, crawler::output& out) override {
//       auto page = response.json();
//       for (auto& quote : page["quotes"]) out.item(quote);
//       out.follow(response, "/author/1", "parse_author");
//     }
//     void parse_author(const crawler::response& response, crawler::output& out);
//   };
//   CRAWLER_REGISTER_SPIDER(quotes, "Quotes from the JSON API");  // `crawler crawl quotes`
//
// A spider is used from the engine's loop, and its callbacks run there, one at a time, unless it
// sets concurrent_callbacks (below): then the callbacks of its 2xx HTML pages run on the parse
// pool's threads, several at a time. Either way a callback should not block: on the loop it holds
// up every download.
#pragma once

#include <spdlog/logger.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/stats.h"
#include "crawler/parse/form_request.h"
#include "crawler/parse/item_loader.h"
#include "crawler/parse/response.h"
#include "crawler/parse/selector.h"
#include "request/item.h"
#include "request/request.h"

namespace crawler {

class settings;

/// What a callback yields: requests to schedule and items to export, in order.
class output {
 public:
  /// Schedules `request`.
  void request(crawler::request request) {
    requests.push_back(std::move(request));
    if (requests.size() >= hand_over_at_ && take_) take_(requests);
  }
  /// Schedules `link` resolved against `from`'s URL; its response goes to `callback` (empty:
  /// parse). Returns false, after logging nothing, when the link cannot be resolved.
  bool follow(const response& from, std::string_view link, std::string callback = {});
  /// Schedules every link: strings as they are, elements by their href (as Scrapy's
  /// response.follow_all(css=...)). Links that cannot be resolved are skipped.
  void follow_all(const response& from, const selector_list& links, std::string callback = {});
  void follow_all(const response& from, const std::vector<std::string>& links,
                  std::string callback = {});
  /// Exports `item` (a JSON object) through the item pipelines and feeds.
  void item(crawler::item item) { items.push_back(std::move(item)); }
  /// What `more` yielded, after what this holds (a feed spider's node or row at a time).
  void append(output&& more) {
    for (auto& request : more.requests) requests.push_back(std::move(request));
    for (auto& item : more.items) items.push_back(std::move(item));
  }

  /// Set by the engine while a callback runs: each time `count` requests have gathered,
  /// request() and follow() give them to `take`, which empties `requests`, as Scrapy's engine
  /// takes each request a callback yields while the callback goes on. A page of a million links
  /// then never holds a million requests at once. An empty `take` ends it.
  void hand_over_every(std::size_t count,
                       std::function<void(std::vector<crawler::request>&)> take) {
    hand_over_at_ = count;
    take_ = std::move(take);
  }

  std::vector<crawler::request> requests;
  std::vector<crawler::item> items;

 private:
  std::size_t hand_over_at_ = 0;
  std::function<void(std::vector<crawler::request>&)> take_;
};

/// Why a request produced no response for its callback: a download error, or an HTTP status the
/// spider does not handle. Given to the request's errback.
struct failure {
  crawler::request request;
  /// What went wrong, as the stats name it: "TimeoutError", "ConnectionRefusedError",
  /// "DNSLookupError", "HttpError", ...
  std::string type;
  std::string message;
  /// The response, for an HttpError.
  std::optional<crawler::response> response;
};

class spider {
 public:
  using callback_fn = std::function<void(const response&, output&)>;
  using errback_fn = std::function<void(const failure&, output&)>;

  explicit spider(std::string name);
  virtual ~spider();
  spider(const spider&) = delete;
  spider& operator=(const spider&) = delete;

  const std::string& name() const { return name_; }

  /// The first requests. By default one GET per start URL, with dont_filter set, as Scrapy's.
  virtual void start_requests(output& out);
  /// The default callback. The base class logs an error: a spider must override it or name
  /// another callback on every request.
  virtual void parse(const response& response, output& out);
  /// Called once the crawl has opened, with the settings it runs on.
  virtual void opened(const crawler::settings& settings);
  /// Called once when the crawl ends, with its finish_reason.
  virtual void closed(std::string_view reason);

  /// Runs the callback `name` (empty: parse). Throws std::invalid_argument for an unknown name.
  void call(std::string_view name, const response& response, output& out);
  /// Runs the errback `name`; returns false when the spider has none by that name.
  bool call_errback(std::string_view name, const failure& failure, output& out);
  /// True when call() / call_errback() know `name` ("" and "parse" are always callbacks).
  bool has_callback(std::string_view name) const;
  bool has_errback(std::string_view name) const;
  /// Why this spider cannot answer `request`, read from a fleet's queue, beyond its callback and
  /// errback names (CrawlSpider: a rule index it does not have); "" when it can. Such a request
  /// is set aside before it is fetched.
  virtual std::string check_request(const request& request) const;
  /// Whether everything this spider does with `request`'s response reads the body through
  /// document() (css, xpath, link extractors) and nothing else. The engine then stops the
  /// download one byte past HTML_MAX_SIZE, where the parser would refuse the page as too large
  /// anyway: a huge page or a gzip bomb costs that much memory, not DOWNLOAD_MAXSIZE. False by
  /// default, since a callback may read the body itself; the crawl-file spider (`crawler run`)
  /// says true for every request but its sitemaps'.
  virtual bool reads_only_the_document(const request& request) const;

  /// The running crawl's stats (Scrapy's self.crawler.stats), from the engine's start (so in
  /// opened(), callbacks and closed()) to its end. Throws std::logic_error outside a crawl.
  crawler::stats& stats() const;
  /// The spider's logger (Scrapy's self.logger): its lines say "[NAME] LEVEL: ...", under
  /// LOG_LEVEL and LOG_FILE as every other.
  std::shared_ptr<spdlog::logger> logger() const;

  /// Spider arguments, `crawler crawl NAME -a key=value`.
  void set_argument(std::string key, std::string value) {
    arguments_[std::move(key)] = std::move(value);
  }
  /// The argument `key`, or `fallback` when it was not given.
  std::string argument(std::string_view key, std::string_view fallback = {}) const;
  /// Whether the argument `key` was given (even empty).
  bool has_argument(std::string_view key) const { return arguments_.contains(key); }
  /// Every argument given, by name.
  const std::map<std::string, std::string, std::less<>>& arguments() const { return arguments_; }

  /// Settings this spider needs whatever the command line says (Scrapy's custom_settings): applied
  /// over the defaults and the config file, under `-s` overrides.
  nlohmann::json custom_settings = nlohmann::json::object();
  /// Settings of this spider's own, name -> default (settings::declare types each by its
  /// default): -s and crawl files may then set them, and opened() reads them. A name of ours is
  /// refused, as a typo of ours still is.
  nlohmann::json user_settings = nlohmann::json::object();
  std::vector<std::string> start_urls;
  /// Hosts this spider may follow links to, subdomains included; empty allows every host
  /// (Scrapy's OffsiteMiddleware counts `offsite/domains` and `offsite/filtered`).
  std::vector<std::string> allowed_domains;
  /// Whether the callbacks read most pages through css() or document(). The engine then parses
  /// HTML responses on worker threads before their callback runs, so Gumbo uses every core and
  /// the event loop only selects. A spider that scans text or reads JSON leaves it false and
  /// pays nothing for pages it never parses. CrawlSpider (and so `crawler run`) sets it.
  bool parses_html = false;
  /// Whether callbacks may run on those worker threads (parsing or not), several at a time, with
  /// only the spider middlewares, items and requests handled on the loop. Only for a spider whose
  /// callbacks read nothing that anything writes during the crawl: the crawl-file spider (so
  /// `crawler run`) and the `site` spider set it. A C++ spider's callbacks keep to the loop, one
  /// at a time, as in Scrapy, unless it sets this itself.
  bool concurrent_callbacks = false;

 protected:
  /// Registers a member function as the callback `name`, for requests to name.
  template <class Spider>
  void callback(std::string name, void (Spider::*method)(const response&, output&)) {
    callbacks_[std::move(name)] = [this, method](const response& r, output& out) {
      (static_cast<Spider*>(this)->*method)(r, out);
    };
  }
  /// Registers any function as the callback `name` (for spiders built at run time).
  void callback(std::string name, callback_fn function) {
    callbacks_[std::move(name)] = std::move(function);
  }
  /// Registers a member function as the errback `name`.
  template <class Spider>
  void errback(std::string name, void (Spider::*method)(const failure&, output&)) {
    errbacks_[std::move(name)] = [this, method](const failure& f, output& out) {
      (static_cast<Spider*>(this)->*method)(f, out);
    };
  }
  /// Registers any function as the errback `name`.
  void errback(std::string name, errback_fn function) {
    errbacks_[std::move(name)] = std::move(function);
  }

 private:
  friend class engine;  // hands its stats to stats() for the crawl's length
  std::string name_;
  crawler::stats* crawl_stats_ = nullptr;
  std::map<std::string, callback_fn, std::less<>> callbacks_;
  std::map<std::string, errback_fn, std::less<>> errbacks_;
  std::map<std::string, std::string, std::less<>> arguments_;
};

/// One compiled-in spider: how `crawler list` shows it and how `crawler crawl` builds it.
struct spider_entry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<spider>()> make;
};

/// Why `name` cannot name a spider, or "" when it can. A name becomes part of paths
/// (HTTPCACHE_DIR/NAME, %(name)s in feed URIs) and of Redis keys, so it is [A-Za-z0-9_.-]+ and
/// does not start with a dot: never "..", "/abs" or "../x".
std::string spider_name_problem(std::string_view name);
/// The longest name spider_name_problem() lets through: a file name is at most 255 bytes, and a
/// feed or cache file adds to the spider's name.
inline constexpr std::size_t max_spider_name_size = 200;

/// Adds a spider to the registry; a second spider with the same name replaces the first.
bool register_spider(spider_entry entry);
/// Every registered spider, sorted by name.
std::vector<const spider_entry*> registered_spiders();
/// The spider called `name`, or null.
const spider_entry* find_spider(std::string_view name);

}  // namespace crawler

/// Registers `Class` (default-constructible, a crawler::spider) under its name at start-up.
#define CRAWLER_REGISTER_SPIDER(Class, description)                          \
  static const bool crawler_registered_##Class = ::crawler::register_spider( \
      {Class().name(), description, [] { return std::make_unique<Class>(); }})
