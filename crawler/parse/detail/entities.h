// Character references in markup read by pattern rather than by a parser (sitemaps, meta
// refresh): XML's five named entities and numeric references, the latter written as UTF-8.
// Other names are left as written.
#pragma once

#include <string>
#include <string_view>

namespace crawler::detail {

/// `text` with &amp; &lt; &gt; &quot; &apos; &#N; &#xH; decoded (U+FFFD for a code point that is
/// 0 or past U+10FFFF).
std::string decode_entities(std::string_view text);

}  // namespace crawler::detail
