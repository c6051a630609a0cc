// Character references in markup read by pattern rather than by a parser (sitemaps, meta
// refresh): XML's five named entities and numeric references, the latter written as UTF-8.
// Other names are left as written. Also the part of HTML's table the well-formed fast path of
// HTML_PARSER=gumbo decodes itself (well_formed_html.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace crawler::detail {

/// `code` written as UTF-8 at the end of `out`; U+FFFD for 0 or a code point past U+10FFFF.
void append_utf8(unsigned long code, std::string& out);

/// `text` with &amp; &lt; &gt; &quot; &apos; &#N; &#xH; decoded (U+FFFD for a code point that is
/// 0 or past U+10FFFF).
std::string decode_entities(std::string_view text);

/// HTML's named character reference `name` (written "&name;"), for the 66 that pages use most
/// (&amp;, &nbsp;, &copy;, &mdash;, &eacute;...); 0 for any other name. HTML's table has 2,231.
std::uint32_t common_named_reference(std::string_view name);
/// Whether `name` starts with one of the 106 references HTML also reads without their ';'
/// ("&copy 2024" is "© 2024", "&notit" is "¬it").
bool starts_with_legacy_reference(std::string_view name);
/// Whether `name` is one of those 106.
bool is_legacy_reference(std::string_view name);

}  // namespace crawler::detail
