// The event sources a recording can have, in the order they start: the one
// place where record/'s own sources, the runtimes and the probes are wired
// into a recording.
#pragma once

#include <span>

#include "src/record/sources.h"

namespace microscope::cli {

std::span<const record::SourceKind> RecordingSources();

}  // namespace microscope::cli
