// The V8 runtime, Node.js (src/runtimes/runtime.h): its event source walks
// JavaScript frames with the sampler's program in each process that maps a
// V8 image (v8dbg_ symbols), and splices them into the native stacks,
// naming each function with proof as the records are drained.
#pragma once

#include "src/runtimes/runtime.h"

namespace microscope::runtimes::node {

extern const Runtime kRuntime;

}  // namespace microscope::runtimes::node
