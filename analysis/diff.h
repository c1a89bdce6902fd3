// Differences between two compatible captures (same metric and unit),
// normalized per total: each function's and each call path's share of its
// capture, and the change in share from base to other. The call paths are
// the two call trees merged by function and pruned like any tree, so an
// answer is as large as the view it draws, not as the captures' stacks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/cancel.h"
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
  // Which capture has it: "base", "other" or "both".
  const char* side() const {
    return base_value == 0 ? "other" : other_value == 0 ? "base" : "both";
  }
};

// A node of the merged call tree: a function under the same callers in
// either capture.
struct DiffTreeNode {
  DiffRow row;                     // total values and shares; name and module
  std::vector<uint32_t> children;  // by the larger of the two shares desc, then name
};

struct DiffOptions {
  // Merged nodes under this share (in percent) of both captures' totals
  // are left out, and their subtrees with them.
  double min_percent = 0.5;
  // The most merged nodes kept (kTooLarge past them); 0: no bound.
  size_t max_nodes = 0;
  Cancel cancel;
};

struct DiffResult {
  std::string metric;
  std::string unit;
  uint64_t base_total = 0;
  uint64_t other_total = 0;
  std::vector<DiffRow> self;       // per function, self share; by |delta| desc, then name
  std::vector<DiffRow> total;      // per function, total share
  std::vector<DiffTreeNode> tree;  // the merged call tree, pruned
  std::vector<uint32_t> roots;
  size_t pruned = 0;           // merged nodes left out by min_percent
  std::vector<DiffRow> paths;  // per kept node of the tree, its call path; by |delta| desc
};

// Refuses captures whose metric or unit differ. Functions are matched by
// name (and module) across the two captures.
Result<DiffResult> Diff(const capture::Capture& base, const capture::Capture& other,
                        Granularity granularity = Granularity::kFunction,
                        const FilterSpec& filter = {}, const DiffOptions& options = {});

}  // namespace microscope::analysis
