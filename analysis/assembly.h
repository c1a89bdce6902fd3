// A function's costs by address of its machine code (report --asm, as
// perf annotate): the addresses its native frames were at, over the
// samples a filter keeps. The instructions themselves are read where the
// report is shown (formats/assembly_text.h): analysis reads no file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/filter.h"
#include "analysis/report.h"
#include "capture/capture.h"

namespace microscope::analysis {

// Every native frame of a function named `function`, costed by its module
// and file offset; a caller's frame is at its call instruction (the
// recorder keeps a return address less one). Shares are of `all` (the
// view's total value). None when no function has that name.
std::optional<ReportAssembly> BuildAssembly(const capture::Capture& capture,
                                            const SampleFilter& filter, const std::string& function,
                                            uint64_t all);

}  // namespace microscope::analysis
