// The program's own instrumentation (sdk/), as an event source of the
// recording (one line in src/cli/sources.cc): `record --probes`.
//
// Each executable mapping the recording learns of is looked up for the
// sections microscope_ctl and microscope_sites (a module built with
// sdk/c/microscope.h). In each process that maps such a module the source
// writes the selection into its control block and enables the static sites
// it selects; then, every round, it writes a heartbeat, reads the run-time
// sites defined since, and drains each thread's ring (process_vm_readv),
// storing how far it read. At the end it switches the sites off again.
// The program's words are untrusted: a bad site, ring or record is a
// counted problem, and the rest goes on.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::probes {

// Whether a selection ("all", or names and NAME* prefixes separated by
// commas) takes the site named `name`.
bool Selected(std::string_view selection, std::string_view name);

// The selection as the control block carries it: one name or prefix per
// line ("*" for all), or an error naming what is wrong with it.
Result<std::string> SelectionLines(std::string_view selection);

Result<std::unique_ptr<record::EventSource>> StartProbeSource(const record::SourceContext& context);

}  // namespace microscope::probes
