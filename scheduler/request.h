// The request: now in request/request.h, the bottom module every layer shares.
// This header stays where DESIGN.md's layout put it, so code that includes it still compiles.
#pragma once

#include "request/request.h"
