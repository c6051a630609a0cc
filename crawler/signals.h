// Signals: what happens during a crawl, told to whoever connected to it, with Scrapy's signal
// names and meanings (scrapy.signals).
//
//   crawl.signals.connect<crawler::signals::item_scraped>(
//       [&](const crawler::signals::item_scraped& scraped) { log_price(scraped.item); });
//
// Each signal is a struct whose fields are the arguments Scrapy passes with it. Handlers run on the
// engine's loop, in the order they were connected. A handler that throws is logged at ERROR,
// naming the signal, and the other handlers still run (Scrapy's send_catch_log); only
// spider_idle's handlers may throw dont_close_spider, which keeps the spider open.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "crawler/spider.h"
#include "request/item.h"
#include "request/request.h"

namespace crawler {

/// Thrown by a spider_idle handler to keep the spider open though nothing is queued or in flight
/// (Scrapy's DontCloseSpider). The engine asks again every 5 seconds while the spider stays idle.
class dont_close_spider : public std::runtime_error {
 public:
  dont_close_spider() : std::runtime_error("dont_close_spider") {}
};

namespace signals {

/// The spider has opened: start requests are next.
struct spider_opened {
  static constexpr std::size_t id = 0;
  static constexpr std::string_view name = "spider_opened";
  crawler::spider& spider;
};

/// Nothing is queued, downloading or being parsed: the spider closes after this signal unless a
/// handler scheduled requests (crawl_engine::crawl) or threw dont_close_spider.
struct spider_idle {
  static constexpr std::size_t id = 1;
  static constexpr std::string_view name = "spider_idle";
  crawler::spider& spider;
};

/// The spider has closed, with its finish reason ("finished", "closespider_itemcount", ...).
struct spider_closed {
  static constexpr std::size_t id = 2;
  static constexpr std::string_view name = "spider_closed";
  crawler::spider& spider;
  std::string_view reason;
};

/// A callback threw: its exception's type and message, and the response it was given.
struct spider_error {
  static constexpr std::size_t id = 3;
  static constexpr std::string_view name = "spider_error";
  std::string_view type;
  std::string_view message;
  const crawler::response& response;
  crawler::spider& spider;
};

/// A request was handed to the scheduler (it may still be filtered as a duplicate).
struct request_scheduled {
  static constexpr std::size_t id = 4;
  static constexpr std::string_view name = "request_scheduled";
  const crawler::request& request;
  crawler::spider& spider;
};

/// A request reached the downloader, past every downloader middleware's process_request.
struct request_reached_downloader {
  static constexpr std::size_t id = 5;
  static constexpr std::string_view name = "request_reached_downloader";
  const crawler::request& request;
  crawler::spider& spider;
};

/// A response came back from the downloader (or a middleware such as the HTTP cache), before the
/// spider middlewares and the callback.
struct response_received {
  static constexpr std::size_t id = 6;
  static constexpr std::string_view name = "response_received";
  const crawler::response& response;
  const crawler::request& request;
  crawler::spider& spider;
};

/// An item went through every pipeline and is exported to the feeds.
struct item_scraped {
  static constexpr std::size_t id = 7;
  static constexpr std::string_view name = "item_scraped";
  const crawler::item& item;
  const crawler::response* response;  // null for an item of the start requests
  crawler::spider& spider;
};

/// A pipeline dropped an item (drop_item), with its reason.
struct item_dropped {
  static constexpr std::size_t id = 8;
  static constexpr std::string_view name = "item_dropped";
  const crawler::item& item;
  const crawler::response* response;
  std::string_view reason;
  crawler::spider& spider;
};

/// A pipeline threw something other than drop_item: the item is lost, the crawl goes on.
struct item_error {
  static constexpr std::size_t id = 9;
  static constexpr std::string_view name = "item_error";
  const crawler::item& item;
  const crawler::response* response;
  std::string_view message;
  crawler::spider& spider;
};

/// The scheduler dropped a request as a duplicate (the dupefilter had seen it): Scrapy sends it
/// when enqueue_request refuses one. With SCHEDULER=redis, for the duplicates the fleet's
/// dupefilter answered this worker.
struct request_dropped {
  static constexpr std::size_t id = 10;
  static constexpr std::string_view name = "request_dropped";
  const crawler::request& request;
  crawler::spider& spider;
};

inline constexpr std::size_t count = 11;

}  // namespace signals

/// Where signals are connected and sent: one per crawl (Scrapy's crawler.signals).
class signal_bus {
 public:
  /// Calls `handler(const Signal&)` each time `Signal` is sent, after the handlers connected
  /// before it.
  template <class Signal, class Handler>
  void connect(Handler handler) {
    handlers_[Signal::id].push_back([handler = std::move(handler)](const void* signal) {
      handler(*static_cast<const Signal*>(signal));
    });
  }

  /// Whether anyone listens for `Signal`: the engine builds a signal only when someone does.
  template <class Signal>
  bool connected() const {
    return !handlers_[Signal::id].empty();
  }

  /// Calls every handler of `Signal`. One that throws is logged and the rest still run; returns
  /// false when one of them threw dont_close_spider.
  template <class Signal>
  bool send(const Signal& signal) const {
    return send_erased(Signal::id, Signal::name, &signal);
  }

 private:
  using erased_handler = std::function<void(const void*)>;
  bool send_erased(std::size_t id, std::string_view name, const void* signal) const;

  std::array<std::vector<erased_handler>, signals::count> handlers_;
};

}  // namespace crawler
