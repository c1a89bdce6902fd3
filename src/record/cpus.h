// The CPUs a recording opens its per-CPU events and rings on: those the
// kernel says are possible (/sys/devices/system/cpu/possible) and online
// now, by their numbers, which need not be 0..N-1 (CPUs left out by a
// boot parameter or taken offline leave gaps). As perf record does, a CPU
// that comes online during the recording is not sampled.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"

namespace microscope::record {

// A kernel CPU list ("0-3,8,10-11\n"), ascending; refused, saying where,
// when it is not one (a range backwards, a number past 1 << 20).
Result<std::vector<int>> ParseCpuList(std::string_view text);

// Possible and online CPUs; with /sys unreadable, 0..N-1 for the online
// count sysconf gives.
std::vector<int> RecordedCpus();

}  // namespace microscope::record
