// The off-CPU event source (record --off-cpu): the intervals the target's
// threads spend off CPU, read from bpf/offcpu.bpf.c through OffCpuTracer.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"
#include "src/record/source_events.h"

namespace microscope::record {

Result<std::unique_ptr<EventSource>> StartOffCpuSource(const SourceContext& context);

// The source's rows, apart from BPF so that tests can give them events:
// an interval (in time order with the sink's other events) and a
// thread's short intervals (at the end).
void AppendOffCpu(const OffCpuInterval& iv, RowSink* sink);
void AppendOffCpuShort(const OffCpuShortCount& c, RowSink* sink);

}  // namespace microscope::record
