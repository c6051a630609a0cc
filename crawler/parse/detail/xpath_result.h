// What an XPath expression gives, whichever engine answered it (detail/xpath.h,
// detail/xpath_paths.h).
#pragma once

#include <string>

#include "crawler/parse/html.h"

namespace crawler::detail {

/// One result: a node of the page (an element or a comment), or a string.
struct xpath_result {
  const html_node* node = nullptr;
  std::string text;  // when node is null
};

}  // namespace crawler::detail
