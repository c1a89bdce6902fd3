// The one grammar for lengths of time on every command line: a decimal
// number and a unit, ns, us (or µs), ms, s, m or h; a bare number is seconds.
// "500ns", "20us", "1.5s", "2m", "1h".
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace microscope {

// Nanoseconds, rounded down. Zero is allowed (callers that need a positive
// length say so); negative, non-finite and out-of-range values are refused.
Result<uint64_t> ParseDuration(std::string_view text);

}  // namespace microscope
