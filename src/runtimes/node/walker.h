// The V8 walker of the sampler's program (src/runtimes/sampler.h,
// node_walk.bpf.h): says which processes run which V8 (v8_processes).
#pragma once

#include <cstdint>
#include <string>

#include <linux/types.h>

#include "base/status.h"
#include "src/runtimes/node/layout.h"
#include "src/runtimes/node/node.h"
#include "src/runtimes/sampler.h"

namespace microscope::runtimes::node {

// What the walk reads for a V8 laid out by `layout`; refused (with the
// reason) when a value does not fit the walk's fields.
Result<v8_process> ProcessOffsets(const V8Layout& layout);

Status SetProcess(Sampler& sampler, uint32_t pid, const v8_process& offsets);
// Processes that exec the file `path` (as stat sees it) are laid out by
// `offsets` at the exec, in BPF.
Status SetImage(Sampler& sampler, const std::string& path, const v8_process& offsets);
void ForgetProcess(Sampler& sampler, uint32_t pid);

}  // namespace microscope::runtimes::node
