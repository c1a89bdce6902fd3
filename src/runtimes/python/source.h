// The CPython runtime as an event source of the recording (one line in
// src/record/sources.cc): loads the BPF walker onto the sampler's events,
// lays out each process whose interpreter module (a module carrying
// _PyRuntime) is mapped, keeps its thread map fresh, and splices the walks
// into the native stacks, naming code objects as the records are drained.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::runtimes::python {

Result<std::unique_ptr<record::EventSource>> StartPythonSource(
    const record::SourceContext& context);

}  // namespace microscope::runtimes::python
