// The V8 runtime (Node.js) as an event source of the recording (one line in
// src/record/sources.cc): walks JavaScript frames with the sampler's
// program in each process that maps a V8 image (v8dbg_ symbols), and
// splices them into the native stacks, naming each function with proof as
// the records are drained.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::runtimes::node {

Result<std::unique_ptr<record::EventSource>> StartNodeSource(const record::SourceContext& context);

}  // namespace microscope::runtimes::node
