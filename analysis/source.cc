#include "analysis/source.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "analysis/profile.h"

namespace microscope::analysis {
namespace {

using capture::kNone;

struct LineCost {
  Cost self, total;
};

}  // namespace

std::optional<ReportSource> BuildSource(const capture::Capture& c, const SampleFilter& filter,
                                        const std::string& function, uint64_t all) {
  ReportSource out;
  out.function = function;
  const std::vector<bool> named = FunctionsNamed(c, function);
  if (named.empty()) return std::nullopt;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, filter, &no_stack);
  // (file, line) -> costs; line 0: frames without a line.
  std::map<std::pair<capture::StringId, uint32_t>, LineCost> lines;
  Cost total;
  std::map<capture::StringId, Cost> file_costs;
  // This stack's lines and files, each counted once (recursion).
  std::vector<std::pair<capture::StringId, uint32_t>> seen;
  std::vector<capture::StringId> seen_files;
  for (size_t n = 0; n < per_stack.size(); ++n) {
    const Cost& cost = per_stack[n];
    if (cost.samples == 0 && cost.value == 0) continue;
    seen.clear();
    seen_files.clear();
    bool leaf = true, on_stack = false;
    for (uint32_t node = uint32_t(n); node != kNone; node = c.stacks.parent[node], leaf = false) {
      const capture::Frame& f = c.frames[c.stacks.frame[node]];
      if (f.function == kNone || !named[f.function]) continue;
      const bool has_line = f.line != 0 && f.file != kNone;
      std::pair<capture::StringId, uint32_t> key{has_line ? f.file : kNone, has_line ? f.line : 0};
      LineCost& lc = lines[key];
      if (leaf) lc.self.Add(cost.samples, cost.value);
      if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
        seen.push_back(key);
        lc.total.Add(cost.samples, cost.value);
      }
      if (key.second != 0 &&
          std::find(seen_files.begin(), seen_files.end(), key.first) == seen_files.end()) {
        seen_files.push_back(key.first);
        file_costs[key.first].Add(cost.samples, cost.value);
      }
      on_stack = true;
    }
    if (on_stack) total.Add(cost.samples, cost.value);
  }
  out.total = Share(total, all);
  std::map<capture::StringId, size_t> file_of;
  for (const auto& [key, lc] : lines) {
    if (key.second == 0) {
      out.without_lines = Share(lc.total, all);
      continue;
    }
    auto [it, inserted] = file_of.try_emplace(key.first, out.files.size());
    if (inserted) {
      out.files.push_back({});
      out.files.back().path = c.str(key.first);
      out.files.back().total = Share(file_costs[key.first], all);
    }
    out.files[it->second].lines.push_back({key.second, Share(lc.self, all), Share(lc.total, all)});
  }
  std::stable_sort(out.files.begin(), out.files.end(),
                   [](const ReportSourceFile& a, const ReportSourceFile& b) {
                     return a.total.value > b.total.value;
                   });
  return out;
}

}  // namespace microscope::analysis
