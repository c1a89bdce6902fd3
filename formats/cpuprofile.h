// V8's CPU profiles (.cpuprofile: `node --cpu-prof`, Chrome DevTools'
// Performance panel saved as a profile) read as sampled stacks: each sample
// its node's call path (functions named with their script and first line),
// at the time V8 took it, weighted by the time until the next sample.
#pragma once

#include <string_view>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::formats {

// A JSON object whose first key is "nodes" holding call frames.
bool LooksLikeCpuProfile(std::string_view text);

// Errors name what is wrong and where (the node or sample, by index).
Result<capture::Capture> ReadCpuProfile(std::string_view text);

}  // namespace microscope::formats
