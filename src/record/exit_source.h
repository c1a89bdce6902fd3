// The process-exit event source: the exit status of every process of the
// recording (bpf/exits.bpf.c on sched_process_exit), not only of the
// launched program the recorder waits for. On whenever BPF can be loaded;
// without it only the launched program has a status (the settings say why).
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::record {

Result<std::unique_ptr<EventSource>> StartExitSource(const SourceContext& context);

}  // namespace microscope::record
