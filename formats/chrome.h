// Chrome's Trace Event JSON, as Perfetto UI and chrome://tracing open it.
// One track per thread: each run of adjacent samples sharing a frame becomes
// a complete event ("X") for that frame, nested like a flame chart; process
// and thread names are metadata events ("M"); the samples themselves follow
// in Chrome's sampling format ("stackFrames" + "samples"). Times in
// microseconds from the recording's start. Streamed to `out`.
// Off-CPU intervals are complete events of their own on the thread's track,
// named "off-CPU (sleeping)" and so on (category "off-cpu"), with args
// state, waker, incomplete (cut at the start or end, as stored), and the
// innermost user frame; slices before one end where it begins.
// Not carried: modules, build IDs and addresses (names only), sample
// weights (an event spans from its first sample to the end of its last),
// stack end reasons, lost counts, problems.
#pragma once

#include <cstdio>
#include <string>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "capture/capture.h"

namespace microscope::formats {

// Cancelled (`cancel` set), it stops where it is: what it wrote is no
// whole trace.
void WriteChromeTrace(FILE* out, const capture::Capture& capture,
                      const analysis::FunctionKeys& keys, const analysis::SampleFilter& filter,
                      analysis::Cancel cancel = {});

}  // namespace microscope::formats
