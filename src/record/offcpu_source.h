// The off-CPU event source (record --off-cpu): the intervals the target's
// threads spend off CPU, read from bpf/offcpu.bpf.c through OffCpuTracer.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::record {

Result<std::unique_ptr<EventSource>> StartOffCpuSource(const SourceContext& context);

}  // namespace microscope::record
