// The program's probes (sdk/) as Chrome trace events, beside the samples'
// flame chart: zones and the program's labels as slices on tracks of their
// own under each thread ("zones of NAME"; a zone that overlaps another
// without nesting goes to a second track, so that every track nests),
// marks as instant events on the thread, counters as counter tracks of the
// process. A zone open at the end has a begin and no end; an end whose
// begin was not recorded is an instant event that says so.
#pragma once

#include <functional>
#include <string>

#include "analysis/filter.h"
#include "capture/capture.h"

namespace microscope::formats {

void AppendProbeEvents(const capture::Capture& c, const analysis::SampleFilter& filter,
                       const std::function<void(const std::string&)>& emit);

}  // namespace microscope::formats
