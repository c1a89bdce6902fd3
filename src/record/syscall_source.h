// The system-call event source (record --syscalls, microscope syscalls):
// every call of the target's threads, read from bpf/syscalls.bpf.c through
// SyscallTracer.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::record {

Result<std::unique_ptr<EventSource>> StartSyscallSource(const SourceContext& context);

}  // namespace microscope::record
