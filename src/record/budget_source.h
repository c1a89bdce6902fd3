// record --budget: measures the recorder's own cost every second and
// applies the budget controller's levels (budget.h) through the sample gate
// (bpf_gate.h) and the processor.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::record {

Result<std::unique_ptr<EventSource>> StartBudgetSource(const SourceContext& context);

}  // namespace microscope::record
