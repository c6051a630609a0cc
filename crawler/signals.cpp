#include "crawler/signals.h"

#include <exception>

#include "config/log.h"

namespace crawler {

bool signal_bus::send_erased(std::size_t id, std::string_view name, const void* signal) const {
  bool close = true;
  for (const auto& handler : handlers_[id]) {
    try {
      handler(signal);
    } catch (const dont_close_spider&) {
      close = false;
    } catch (const std::exception& error) {
      // Scrapy's send_catch_log: a broken listener is logged, the crawl and the others go on.
      get_logger("signals")->error("Error caught on signal handler of {}: {}", name, error.what());
    }
  }
  return close;
}

}  // namespace crawler
