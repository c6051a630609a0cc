#include "crawler/pipeline.h"

namespace crawler {

void item_pipeline::process_item_async(crawler::item item, spider& spider, item_done done) {
  try {
    process_item(item, spider);
  } catch (...) {
    return done(std::move(item), std::current_exception());
  }
  done(std::move(item), nullptr);
}

void async_item_pipeline::process_item(crawler::item&, spider&) {
  throw std::logic_error("an async_item_pipeline is called through process_item_async");
}

}  // namespace crawler
