// Imported traces (capture::Trace) in the Chrome trace export, as tracks
// beside microscope's own: a track mapped to one of the capture's threads
// is a thread of its process named "TOOL: track (of thread N)", the rest
// are processes of their own named after the trace's; spans, instants,
// counters and flows as the trace had them, on the capture's clock. A
// trace on its own axis is a process of its own that says so, its first
// event at the recording's start.
#pragma once

#include <functional>
#include <string>

#include "capture/capture.h"

namespace microscope::formats {

void AppendImportedTraceEvents(const capture::Capture& c,
                               const std::function<void(const std::string&)>& emit);

}  // namespace microscope::formats
