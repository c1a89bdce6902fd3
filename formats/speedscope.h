// speedscope's file format (https://www.speedscope.app/file-format-schema.json):
// one "sampled" profile per thread, stacks as frame indexes (callers first)
// with each sample's weight in the capture's unit.
// Not carried: modules, build IDs and addresses (names and module as "file"),
// sample times (order is kept), stack end reasons, lost counts, problems.
#pragma once

#include <cstdio>
#include <string>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "capture/capture.h"

namespace microscope::formats {

// Streamed to `out`. Cancelled (`cancel` set), it stops where it is: what
// it wrote is no whole profile.
void WriteSpeedscope(FILE* out, const capture::Capture& capture, const analysis::FunctionKeys& keys,
                     const analysis::SampleFilter& filter, analysis::Cancel cancel = {});

}  // namespace microscope::formats
