// `perf script` text, as people paste it into issues: each sample's header
// line (command, pid/tid, CPU, time, period, event) and its frames (address,
// symbol+offset, DSO), one per line, a blank line between samples.
#pragma once

#include <string_view>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::formats {

// The first line that is not a '#' comment looks like a perf script
// sample header ("COMM PID[/TID] [CPU] SECONDS.MICROS: ...").
bool LooksLikePerfScript(std::string_view text);

// A capture of the samples: threads by pid/tid with their command, frames
// by symbol within their DSO (addresses as printed: virtual addresses of
// the recorded process, not file offsets, so they are not symbolized
// again), weight the period where printed (nanoseconds for cpu-clock and
// task-clock), or 1 per sample. Errors name the line.
Result<capture::Capture> ReadPerfScript(std::string_view text);

}  // namespace microscope::formats
