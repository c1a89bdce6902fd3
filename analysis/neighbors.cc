#include "analysis/neighbors.h"

#include <algorithm>
#include <map>

namespace microscope::analysis {

using capture::kNone;

namespace {

std::vector<Neighbor> Ranked(const FunctionKeys& keys, const std::map<KeyId, Cost>& costs,
                             size_t top, size_t* more) {
  std::vector<Neighbor> out;
  for (const auto& [key, cost] : costs) out.push_back({keys.Name(key), keys.ModuleName(key), cost});
  std::sort(out.begin(), out.end(), [](const Neighbor& a, const Neighbor& b) {
    if (a.cost.value != b.cost.value) return a.cost.value > b.cost.value;
    return a.name < b.name;
  });
  *more = out.size() > top ? out.size() - top : 0;
  out.resize(std::min(out.size(), top));
  return out;
}

}  // namespace

std::optional<Neighbors> ComputeNeighbors(const capture::Capture& c, const FunctionKeys& keys,
                                          const SampleFilter& filter, const std::string& name,
                                          size_t top, Cancel cancel) {
  // The keys of that name (one per module, or per line at a finer granularity).
  std::vector<uint8_t> target(keys.size());
  bool any = false;
  for (KeyId k = 0; k < keys.size(); ++k) {
    if (keys.Name(k) == name) target[k] = 1, any = true;
  }
  if (!any) return std::nullopt;
  Neighbors out;
  out.name = name;
  std::map<KeyId, Cost> callers, callees;
  std::vector<KeyId> above, below;  // this sample's, each once
  const capture::Samples& s = c.samples;
  for (size_t i = 0; i < s.size(); ++i) {
    if (cancel.At(i)) break;
    if (s.stack[i] == kNone || !filter.Keep(c, i)) continue;
    above.clear();
    below.clear();
    bool in = false;
    KeyId callee = kNone;  // the frame below (nearer the leaf)
    for (uint32_t n = s.stack[i]; n != kNone; n = c.stacks.parent[n]) {
      const KeyId key = keys.KeyOf(c.stacks.frame[n]);
      if (target[key]) {
        if (n == s.stack[i]) out.self.Add(s.CountAt(i), s.weight[i]);
        if (!in && out.module.empty()) out.module = keys.ModuleName(key);
        in = true;
        if (callee != kNone && !target[callee]) below.push_back(callee);
        const uint32_t up = c.stacks.parent[n];
        if (up != kNone) {
          const KeyId caller = keys.KeyOf(c.stacks.frame[up]);
          if (!target[caller]) above.push_back(caller);
        }
      }
      callee = key;
    }
    if (!in) continue;
    out.total.Add(s.CountAt(i), s.weight[i]);
    for (std::vector<KeyId>* side : {&above, &below}) {
      std::sort(side->begin(), side->end());
      side->erase(std::unique(side->begin(), side->end()), side->end());
    }
    for (KeyId k : above) callers[k].Add(s.CountAt(i), s.weight[i]);
    for (KeyId k : below) callees[k].Add(s.CountAt(i), s.weight[i]);
  }
  out.callers = Ranked(keys, callers, top, &out.more_callers);
  out.callees = Ranked(keys, callees, top, &out.more_callees);
  return out;
}

}  // namespace microscope::analysis
