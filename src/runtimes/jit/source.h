// JIT code named at record time, as an event source of the recording (one
// line in src/cli/sources.cc): the perf map (/tmp/perf-PID.map) and the
// jitdump (the jit-PID.dump file the process maps, else /tmp/jit-PID.dump)
// of every recorded process, read when a sample lands in anonymous code
// nothing names yet; a jitdump's names first, then the map's, then the
// objects a JIT registered through the GDB JIT interface.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::runtimes::jit {

Result<std::unique_ptr<record::EventSource>> StartJitSource(const record::SourceContext& context);

}  // namespace microscope::runtimes::jit
