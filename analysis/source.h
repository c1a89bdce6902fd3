// A function's costs by source line (report --source): the lines its
// frames were at, over the samples a filter keeps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/filter.h"
#include "analysis/report.h"
#include "capture/capture.h"

namespace microscope::analysis {

// Every frame of a function named `function` (in any module) costed by
// its file and line; shares are of `all` (the view's total value). None
// when no function has that name.
std::optional<ReportSource> BuildSource(const capture::Capture& capture, const SampleFilter& filter,
                                        const std::string& function, uint64_t all);

}  // namespace microscope::analysis
