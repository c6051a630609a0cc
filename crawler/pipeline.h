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
#pragma once

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

class item_pipeline {
 public:
  virtual ~item_pipeline() = default;
  virtual void open(spider&) {}
  /// Passes the item on (changed or not) by returning; drops it by throwing drop_item.
  virtual void process_item(crawler::item& item, spider& spider) = 0;
  virtual void close(spider&) {}
};

}  // namespace crawler
