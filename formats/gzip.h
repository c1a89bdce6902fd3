// gzip for pprof files and serve's answers over a network (zlib).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace microscope::formats {

// `level` as zlib's (1 fastest, 9 smallest).
std::vector<uint8_t> Gzip(std::span<const uint8_t> data, int level = 6);
bool IsGzip(std::span<const uint8_t> data);
// Inflates one gzip member to at most `limit` bytes; more is an error (a
// bomb, or not ours), and so is anything after the member (padding).
Result<std::vector<uint8_t>> Gunzip(std::span<const uint8_t> data, size_t limit);

}  // namespace microscope::formats
