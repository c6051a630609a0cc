// The URL byte helpers: now in request/url_bytes.h, the bottom module every layer shares.
// This header stays where DESIGN.md's layout put it, so code that includes it still compiles.
#pragma once

#include "request/url_bytes.h"
