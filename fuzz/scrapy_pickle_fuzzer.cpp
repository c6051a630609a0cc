// scrapy-redis's queue form over arbitrary bytes: the pickle reader refuses what is not data with
// pickle::error and never crashes, loops or grows without bound; a request dict it reads writes
// back to a pickle that reads into the same request.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "scheduler/fleet/pickle.h"
#include "scheduler/fleet/scrapy_request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  crawler::pickle::value value;
  try {
    value = crawler::pickle::read(bytes);
  } catch (const crawler::pickle::error&) {
    return 0;
  }
  // What was read writes back to a pickle that reads the same.
  auto again = crawler::pickle::read(crawler::pickle::write(value));
  if (crawler::pickle::write(again) != crawler::pickle::write(value)) std::abort();
  try {
    auto request = crawler::request_from_scrapy_dict(value, "fuzz");
    auto written = crawler::pickle::write(crawler::scrapy_dict_of(request));
    auto back = crawler::request_from_scrapy_dict(crawler::pickle::read(written), "fuzz");
    // Written grouped by name, as Scrapy's Headers keep them.
    auto by_name = [](crawler::header_list headers) {
      std::stable_sort(headers.begin(), headers.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      return headers;
    };
    if (back.url != request.url || back.body != request.body ||
        by_name(back.headers) != by_name(request.headers) || back.meta != request.meta ||
        back.priority != request.priority || back.callback != request.callback ||
        back.method != request.method) {
      std::abort();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
