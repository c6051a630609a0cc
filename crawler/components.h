// Components by name: item pipelines, downloader middlewares, spider middlewares and extensions
// written in C++, registered under a name, and enabled from settings the way Scrapy enables
// classes by their import path, with Scrapy's order numbers:
//
//   class require_price : public crawler::item_pipeline {
//    public:
//     explicit require_price(crawler::crawl_context& crawl) : stats_(crawl.stats) {}
//     void process_item(crawler::item& item, crawler::spider&) override {
//       if (!item.contains("price")) throw crawler::drop_item("missing price");
//       stats_.inc_value("price/checked");
//     }
//    private:
//     crawler::stats& stats_;
//   };
//   CRAWLER_REGISTER_ITEM_PIPELINE(require_price, "myproject.RequirePrice");
//
//   // crawl file "settings", -s, or a spider's custom_settings:
//   "ITEM_PIPELINES": {"myproject.RequirePrice": 300}
//
// Each enabled component is built once per crawl, before the spider opens: with the crawl's
// context when its constructor takes a crawl_context& (Scrapy's from_crawler), else by its default
// constructor. ITEM_PIPELINES, DOWNLOADER_MIDDLEWARES, SPIDER_MIDDLEWARES and EXTENSIONS map names
// to orders; a name no one registered is a settings error naming the registered ones (Scrapy fails
// on a class it cannot import), and an order of null leaves a component out.
//
// The built-in middlewares are registered the same way, under Scrapy's class paths and orders,
// which DOWNLOADER_MIDDLEWARES_BASE and SPIDER_MIDDLEWARES_BASE list (`crawler components` prints
// every registered name): `"DOWNLOADER_MIDDLEWARES": {"scrapy.downloadermiddlewares.retry.
// RetryMiddleware": null}` switches retries off, and a middleware of one's own at 543 runs between
// UserAgent (500) and Retry (550), as in Scrapy. Lower orders see requests first and responses
// last (downloader), responses first and their output last (spider); pipelines run lowest first.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "crawler/download_result.h"
#include "crawler/middleware.h"
#include "crawler/pipeline.h"
#include "crawler/signals.h"
#include "crawler/spider.h"

namespace crawler {

/// What a component may do to the running crawl (Scrapy's crawler.engine). On the loop only: from
/// signal handlers and component hooks.
class crawl_engine {
 public:
  virtual ~crawl_engine() = default;
  /// Schedules `request` through the dupefilter, as a callback's request (Scrapy's
  /// engine.crawl). From a spider_idle handler, this keeps the spider open.
  virtual void crawl(crawler::request request) = 0;
  /// Closes the spider with `reason` (Scrapy's engine.close_spider).
  virtual void close_spider(std::string reason) = 0;
  /// Downloads `request` past the scheduler and the spider (Scrapy's engine.download): through
  /// the robots.txt gate (ROBOTSTXT_OBEY), the downloader middlewares (retries, redirects, the
  /// HTTP cache) and the downloader's per-site politeness, then calls `done` on the loop with the
  /// outcome. A close lets a download the downloader holds finish; force_close, or a close while
  /// it waits for robots.txt, answers it with error_type "CancelledError".
  virtual void download(crawler::request request, std::function<void(download_result)> done) = 0;
};

/// What a component is built with: the crawl's settings, stats, signals, spider and engine. The
/// context and everything it names live for the whole crawl, so a component may keep a reference
/// to it (Scrapy's `self.crawler = crawler`) and use it from any later hook or signal.
struct crawl_context {
  const crawler::settings& settings;
  crawler::stats& stats;
  signal_bus& signals;
  crawler::spider& spider;
  crawl_engine& engine;
  /// The crawl's loop, on which every hook runs: for a component that waits on a timer or on a
  /// client of its own (an async_item_pipeline calls `done` from a handler posted here).
  boost::asio::any_io_executor executor;
};

/// A component that only listens: it connects to signals when it is built (Scrapy's extensions).
class extension {
 public:
  virtual ~extension();
};

/// Builds a component; null means "not in this crawl" (a built-in its own setting switched off,
/// as RETRY_ENABLED=false does for RetryMiddleware).
template <class Component>
using component_factory = std::function<std::unique_ptr<Component>(crawl_context&)>;

/// Registers `make` under `name` for Component (item_pipeline, downloader_middleware,
/// spider_middleware or extension). A second registration of a name replaces the first.
template <class Component>
bool register_component(std::string name, component_factory<Component> make);

/// Every name registered for Component, sorted.
template <class Component>
std::vector<std::string> registered_components();

/// The Components the settings enable (ITEM_PIPELINES, DOWNLOADER_MIDDLEWARES over
/// DOWNLOADER_MIDDLEWARES_BASE, SPIDER_MIDDLEWARES over SPIDER_MIDDLEWARES_BASE, EXTENSIONS), built
/// in order, lowest first. Throws settings_error naming the setting and the entry for a name no
/// one registered or an order that is not an integer or null.
template <class Component>
std::vector<std::unique_ptr<Component>> build_components(crawl_context& crawl);

/// Every problem build_components would stop at, over the four settings, a line each: names no
/// one registered, orders that are not integers (`crawler check`). Register the built-ins first
/// (register_builtin_middlewares).
std::vector<std::string> component_problems(const settings& settings);

/// What the settings call each kind of component: the setting that enables them, the one that
/// lists the built-ins with their orders ("" when there are none), and its name in errors.
template <class Component>
struct component_kind;
template <>
struct component_kind<item_pipeline> {
  static constexpr std::string_view setting = "ITEM_PIPELINES", base = "", what = "item pipeline";
};
template <>
struct component_kind<downloader_middleware> {
  static constexpr std::string_view setting = "DOWNLOADER_MIDDLEWARES",
                                    base = "DOWNLOADER_MIDDLEWARES_BASE",
                                    what = "downloader middleware";
};
template <>
struct component_kind<spider_middleware> {
  static constexpr std::string_view setting = "SPIDER_MIDDLEWARES",
                                    base = "SPIDER_MIDDLEWARES_BASE", what = "spider middleware";
};
template <>
struct component_kind<extension> {
  static constexpr std::string_view setting = "EXTENSIONS", base = "", what = "extension";
};

/// A factory for Class: from the crawl context when Class takes one, else default-constructed.
template <class Component, class Class>
component_factory<Component> factory_of() {
  return [](crawl_context& crawl) -> std::unique_ptr<Component> {
    if constexpr (std::is_constructible_v<Class, crawl_context&>) {
      return std::make_unique<Class>(crawl);
    } else {
      return std::make_unique<Class>();
    }
  };
}

}  // namespace crawler

#define CRAWLER_REGISTER_COMPONENT_(Component, Class, name) \
  static const bool crawler_registered_component_##Class =  \
      ::crawler::register_component<::crawler::Component>(  \
          name, ::crawler::factory_of<::crawler::Component, Class>())

/// Registers `Class` (a crawler::item_pipeline) as `name`, for ITEM_PIPELINES to enable.
#define CRAWLER_REGISTER_ITEM_PIPELINE(Class, name) \
  CRAWLER_REGISTER_COMPONENT_(item_pipeline, Class, name)
/// Registers `Class` (a crawler::downloader_middleware) as `name`, for DOWNLOADER_MIDDLEWARES.
#define CRAWLER_REGISTER_DOWNLOADER_MIDDLEWARE(Class, name) \
  CRAWLER_REGISTER_COMPONENT_(downloader_middleware, Class, name)
/// Registers `Class` (a crawler::spider_middleware) as `name`, for SPIDER_MIDDLEWARES.
#define CRAWLER_REGISTER_SPIDER_MIDDLEWARE(Class, name) \
  CRAWLER_REGISTER_COMPONENT_(spider_middleware, Class, name)
/// Registers `Class` (a crawler::extension) as `name`, for EXTENSIONS.
#define CRAWLER_REGISTER_EXTENSION(Class, name) CRAWLER_REGISTER_COMPONENT_(extension, Class, name)
