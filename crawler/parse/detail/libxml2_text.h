// libxml2 hands out text as `xmlChar*` (UTF-8, maybe null); the tree builder and the XPath
// evaluator read it as a view.
#pragma once

#include <libxml/xmlstring.h>

#include <string_view>

namespace crawler::detail {

/// `text` as a view of its UTF-8 bytes; empty for null.
inline std::string_view libxml2_text(const xmlChar* text) {
  return text ? std::string_view(reinterpret_cast<const char*>(text)) : std::string_view();
}

}  // namespace crawler::detail
