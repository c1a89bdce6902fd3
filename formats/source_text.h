// Reads the source files a report's source view names (report --source,
// serve's source view), on the host that shows the report: the lines
// around the costed ones, or why they cannot be shown. A capture names
// files of the host it was recorded on; only regular files it names are
// read (base/open_file.h), at most kMaxSourceBytes each, never blocking on
// a FIFO or device.
#pragma once

#include <cstdint>

#include "analysis/report.h"

namespace microscope::formats {

inline constexpr uint64_t kMaxSourceBytes = 8 << 20;
// Lines shown before the first costed line and after the last, and at most
// in all (a function inlined from far apart in one file shows its first
// lines).
inline constexpr uint32_t kSourceContext = 3;
inline constexpr uint32_t kMaxSourceLines = 2000;

// Fills each file's text (or unreadable) of `source`.
void ReadSourceText(analysis::ReportSource* source);

}  // namespace microscope::formats
