// The one grammar for lengths of time on every command line: a decimal
// number and a unit, ns, us (or µs), ms, s, m, h or d; a bare number is
// seconds. "500ns", "20us", "1.5s", "2m", "1h", "7d". And the one for sizes.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace microscope {

// Nanoseconds, rounded down. Zero is allowed (callers that need a positive
// length say so); negative, non-finite and out-of-range values are refused.
Result<uint64_t> ParseDuration(std::string_view text);

// Bytes: a whole number and K, M, G or T (powers of 1024; "KiB", "MB" read
// the same); a bare number is bytes. "4096", "500M", "2G".
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace microscope
