// Folded stacks ("caller;callee;leaf COUNT" per line), as FlameGraph's
// stackcollapse and inferno read and write them.
#pragma once

#include <string>
#include <string_view>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "base/status.h"
#include "capture/capture.h"

namespace microscope::formats {

// What a folded line counts: samples, or the rows' weight (nanoseconds)
// in microseconds, as offcputime -f writes off-CPU time.
enum class FoldedValue : uint8_t { kSamples, kMicroseconds };

// One line per distinct stack of function keys (callers first) with its
// sample count (or weight in µs, rounded; lines that round to 0 are left
// out); with `per_thread`, the thread ("name-tid") is the first frame.
// Lines sorted. ';' inside a name is written as ':'.
// Cancelled (`cancel` set), it stops counting and returns what it has.
std::string WriteFolded(const capture::Capture& capture, const analysis::FunctionKeys& keys,
                        const analysis::SampleFilter& filter, bool per_thread,
                        FoldedValue value = FoldedValue::kSamples, analysis::Cancel cancel = {});

// Reads folded text into a capture of named frames (metric "samples", unit
// "count"). Errors name the line.
Result<capture::Capture> ReadFolded(std::string_view text);

}  // namespace microscope::formats
