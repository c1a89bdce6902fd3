// The registry of event sources: which the options ask for, how each
// starts, and what happens when the kernel refuses one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::record {

// Starts every source the options ask for, in registration order. A source
// the kernel refuses is left out: `warn` gets one line, and the capture's
// settings and notes say why; the recording goes on. Without CPU samples
// (options.samples false) the sources are the recording, and a refusal is
// an error.
Result<std::vector<std::unique_ptr<EventSource>>> StartSources(
    const SourceContext& context, const std::function<void(const std::string&)>& warn);

}  // namespace microscope::record
