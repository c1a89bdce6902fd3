// The CPython runtime (src/runtimes/runtime.h): its event source loads the
// BPF walker onto the sampler's events, lays out each process whose
// interpreter module (a module carrying _PyRuntime) is mapped, keeps its
// thread map fresh, and splices the walks into the native stacks, naming
// code objects as the records are drained.
#pragma once

#include "src/runtimes/runtime.h"

namespace microscope::runtimes::python {

extern const Runtime kRuntime;

}  // namespace microscope::runtimes::python
