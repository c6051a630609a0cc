// CSS selector parsing over arbitrary bytes: a bad selector is a selector_error.
#include <cstdint>
#include <string>

#include "crawler/parse/selector.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    crawler::validate_selector(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const crawler::selector_error&) {
  }
  return 0;
}
