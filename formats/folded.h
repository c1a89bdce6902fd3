// Folded stacks ("caller;callee;leaf COUNT" per line), as FlameGraph's
// stackcollapse and inferno read and write them.
#pragma once

#include <string>
#include <string_view>

#include "analysis/filter.h"
#include "analysis/keys.h"
#include "capture/capture.h"
#include "capture/result.h"

namespace microscope::formats {

// One line per distinct stack of function keys (callers first) with its
// sample count; with `per_thread`, the thread ("name-tid") is the first
// frame. Lines sorted. ';' inside a name is written as ':'.
std::string WriteFolded(const capture::Capture& capture, const analysis::FunctionKeys& keys,
                        const analysis::SampleFilter& filter, bool per_thread);

// Reads folded text into a capture of named frames (metric "samples", unit
// "count"). Errors name the line.
Result<capture::Capture> ReadFolded(std::string_view text);

}  // namespace microscope::formats
