// Item pipelines: every scraped item passes through each, in order, before the feeds.
//
//   class require_price : public crawler::item_pipeline {
//     void process_item(crawler::item& item, crawler::spider&) override {
//       if (!item.contains("price")) throw crawler::drop_item("missing price");
//     }
//   };
//
// A dropped item counts `item_dropped_count` and `item_dropped_reasons_count/DropItem` and is
// logged as a warning ("Dropped: missing price"), as in Scrapy. Pipelines run on the engine's loop.
//
// A pipeline that must wait for something (files to download, a database to answer) derives from
// async_item_pipeline instead, as a Scrapy pipeline returns a Deferred: it hands the item on by
// calling `done` later, on the loop. Until every item a page yielded is through the pipelines the
// page counts as in flight (the spider stays open, CONCURRENT_REQUESTS holds it) and its items are
// exported together, in the order the callback yielded them.
#pragma once

#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "request/item.h"

namespace crawler {

class spider;

/// Thrown by process_item to drop an item; what() is the reason logged.
class drop_item : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How an asynchronous pipeline hands an item on: the item (changed or not) and no error, or the
/// error that stops it here (a drop_item drops it; anything else is logged as an item error).
using item_done = std::function<void(crawler::item item, std::exception_ptr error)>;

class item_pipeline {
 public:
  virtual ~item_pipeline() = default;
  virtual void open(spider&) {}
  /// Passes the item on (changed or not) by returning; drops it by throwing drop_item.
  virtual void process_item(crawler::item& item, spider& spider) = 0;
  virtual void close(spider&) {}

  /// Whether this pipeline answers later (an async_item_pipeline). A crawl whose pipelines all
  /// answer at once keeps to the plain call per item.
  virtual bool waits() const { return false; }
  /// Runs the item through this pipeline and calls `done` exactly once, on the loop. Here:
  /// process_item, at once.
  virtual void process_item_async(crawler::item item, spider& spider, item_done done);
};

/// A pipeline that answers later: process_item_async is its one job.
class async_item_pipeline : public item_pipeline {
 public:
  bool waits() const final { return true; }
  void process_item_async(crawler::item item, spider& spider, item_done done) override = 0;
  /// Never called: the engine calls process_item_async. Throws std::logic_error.
  void process_item(crawler::item& item, spider& spider) final;
};

}  // namespace crawler
