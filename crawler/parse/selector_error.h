// The error a CSS selector that cannot be used raises, wherever it is parsed: by the selectors
// (selector.h), by crawl-file validation, and by the CSS engine underneath (detail/css.h).
#pragma once

#include <stdexcept>

namespace crawler {

/// A selector that cannot be used. what(): `invalid CSS selector "a[" at position 2: ...`.
class selector_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace crawler
