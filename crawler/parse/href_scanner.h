// Finds the links of a page (the href of every <a> and <area> tag) without building a DOM.
//
//   crawler::for_each_href(response.text(), [&](std::string_view href) {
//     out.follow(response, href);
//   });
//
// One pass over the bytes: tags other than <a>/<area>, comments, <script> and <style> contents
// are skipped; attribute values may be double-quoted, single-quoted or bare; names compare in any
// case; "&amp;" (and "&#38;") in a value reads as "&". This is the fast path for spiders that
// follow every link; rules (allow, deny, restrict to a region of the page) belong to a link
// extractor built on a parsed document.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace crawler {

/// Calls `visit` with each href value in document order (entity-decoded, not resolved, not
/// trimmed). The view is valid during the call only.
void for_each_href(std::string_view html, const std::function<void(std::string_view)>& visit);

}  // namespace crawler
