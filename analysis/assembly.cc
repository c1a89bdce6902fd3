#include "analysis/assembly.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "analysis/profile.h"
#include "base/hex.h"

namespace microscope::analysis {
namespace {

using capture::kNone;

struct AddressCost {
  Cost self, total;
};

}  // namespace

std::optional<ReportAssembly> BuildAssembly(const capture::Capture& c, const SampleFilter& filter,
                                            const std::string& function, uint64_t all) {
  const std::vector<bool> named = FunctionsNamed(c, function);
  if (named.empty()) return std::nullopt;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, filter, &no_stack);
  // (module, file offset) -> costs.
  std::map<std::pair<capture::ModuleId, uint64_t>, AddressCost> addresses;
  std::map<capture::ModuleId, Cost> module_costs;
  Cost total, not_native;
  // This stack's addresses and modules, each counted once (recursion).
  std::vector<std::pair<capture::ModuleId, uint64_t>> seen;
  std::vector<capture::ModuleId> seen_modules;
  for (size_t n = 0; n < per_stack.size(); ++n) {
    const Cost& cost = per_stack[n];
    if (cost.samples == 0 && cost.value == 0) continue;
    seen.clear();
    seen_modules.clear();
    // The sample's own instruction is the first frame from the leaf that is
    // no inlined call (those share their holder's address).
    bool leaf = true, on_stack = false, in_code = false;
    for (uint32_t node = uint32_t(n); node != kNone; node = c.stacks.parent[node]) {
      const capture::Frame& f = c.frames[c.stacks.frame[node]];
      const bool inline_frame = f.kind == capture::FrameKind::kInline;
      if (f.function != kNone && named[f.function]) {
        on_stack = true;
        const bool code = f.kind == capture::FrameKind::kNative && f.module != kNone &&
                          c.modules[f.module].kind == capture::ModuleKind::kFile;
        if (code) {
          in_code = true;
          std::pair<capture::ModuleId, uint64_t> key{f.module, f.address};
          AddressCost& ac = addresses[key];
          if (leaf) ac.self.Add(cost.samples, cost.value);
          if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
            seen.push_back(key);
            ac.total.Add(cost.samples, cost.value);
          }
          if (std::find(seen_modules.begin(), seen_modules.end(), f.module) == seen_modules.end()) {
            seen_modules.push_back(f.module);
            module_costs[f.module].Add(cost.samples, cost.value);
          }
        }
      }
      if (!inline_frame) leaf = false;
    }
    if (on_stack) total.Add(cost.samples, cost.value);
    if (on_stack && !in_code) not_native.Add(cost.samples, cost.value);
  }
  ReportAssembly out;
  out.function = function;
  out.total = Share(total, all);
  out.not_native = Share(not_native, all);
  std::map<capture::ModuleId, size_t> index;
  for (const auto& [key, ac] : addresses) {
    auto [it, inserted] = index.try_emplace(key.first, out.modules.size());
    if (inserted) {
      const capture::Module& m = c.modules[key.first];
      out.modules.push_back({});
      out.modules.back().path = c.str(m.path);
      out.modules.back().build_id = HexBytes(m.build_id);
      out.modules.back().total = Share(module_costs[key.first], all);
    }
    out.modules[it->second].addresses.push_back(
        {key.second, Share(ac.self, all), Share(ac.total, all)});
  }
  std::stable_sort(out.modules.begin(), out.modules.end(),
                   [](const ReportAssemblyModule& a, const ReportAssemblyModule& b) {
                     return a.total.value > b.total.value;
                   });
  return out;
}

}  // namespace microscope::analysis
