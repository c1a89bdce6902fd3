// The system-call event source (record --syscalls, microscope syscalls):
// every call of the target's threads, read from bpf/syscalls.bpf.c through
// SyscallTracer.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"
#include "src/record/source_events.h"

namespace microscope::record {

Result<std::unique_ptr<EventSource>> StartSyscallSource(const SourceContext& context);

// The source's rows, apart from BPF so that tests can give them events: a
// call, in time order of its exit with the sink's other events (the sink
// puts them in start order at the end).
void AppendSyscall(const SyscallEvent& call, RowSink* sink);

}  // namespace microscope::record
