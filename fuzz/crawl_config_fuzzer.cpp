// Crawl files: any JSON document is either a crawl or an error naming what is wrong.
#include <cstdint>
#include <exception>

#include "crawler/config_spider.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto document = nlohmann::json::parse(data, data + size, nullptr, false);
  if (document.is_discarded()) return 0;
  try {
    crawler::load_crawl_config(document);
  } catch (const std::exception&) {  // the validation's errors: settings_error and its kin
  }
  return 0;
}
