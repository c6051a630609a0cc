// Charset detection and decoding over arbitrary bytes, with the Content-Types servers send.
#include <cstdint>
#include <string_view>

#include "crawler/parse/html.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto type : {"", "text/html", "text/html; charset=iso-8859-1", "text/html; charset=utf-16",
                    "text/html; charset=\"shift_jis\"", "text/html; charset=nonsense"}) {
    auto encoding = crawler::sniff_encoding(body, type);
    crawler::decode_to_utf8(body, encoding);
  }
  return 0;
}
