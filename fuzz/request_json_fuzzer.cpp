// The queues' request format (JOBDIR, Redis) and start URL entries over arbitrary bytes: what
// reads writes back to the same request; what does not read is std::invalid_argument.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "request/request.h"
#include "scheduler/fleet/start_request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_discarded()) {
    try {
      auto read = crawler::request::from_json(json, "fuzz");
      auto again = crawler::request::from_json(read.to_json(), "fuzz");
      if (again.url != read.url || again.body != read.body || again.headers != read.headers ||
          again.meta != read.meta || again.priority != read.priority) {
        std::abort();
      }
    } catch (const std::invalid_argument&) {
    }
  }
  try {
    crawler::start_request_from(text);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
