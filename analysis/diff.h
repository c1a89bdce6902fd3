// Differences between two compatible captures (same metric and unit),
// normalized per total: each function's and each call path's share of its
// capture, and the change in share from base to other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/filter.h"
#include "analysis/keys.h"
#include "base/status.h"
#include "capture/capture.h"

namespace microscope::analysis {

struct DiffRow {
  std::string name;    // a function, or a path "a;b;c" (callers first)
  std::string module;  // functions only
  uint64_t base_value = 0;
  uint64_t other_value = 0;
  double base_share = 0;   // of the base capture's total
  double other_share = 0;  // of the other capture's total
  double delta() const { return other_share - base_share; }
};

struct DiffResult {
  std::string metric;
  std::string unit;
  uint64_t base_total = 0;
  uint64_t other_total = 0;
  std::vector<DiffRow> self;   // per function, self share; by |delta| desc, then name
  std::vector<DiffRow> total;  // per function, total share
  std::vector<DiffRow> paths;  // per call path, total share
};

// Refuses captures whose metric or unit differ. Functions are matched by
// name (and module) across the two captures.
Result<DiffResult> Diff(const capture::Capture& base, const capture::Capture& other,
                        Granularity granularity = Granularity::kFunction,
                        const FilterSpec& filter = {});

}  // namespace microscope::analysis
