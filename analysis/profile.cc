#include "analysis/profile.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace microscope::analysis {

using capture::kNone;

FunctionKeys::FunctionKeys(const capture::Capture& capture) : capture_(capture) {
  frame_key_.resize(capture.frames.size());
  const KeyId nf = KeyId(capture.functions.size());
  for (size_t i = 0; i < capture.frames.size(); ++i) {
    const capture::Frame& f = capture.frames[i];
    frame_key_[i] = f.function != kNone ? f.function : nf + KeyId(i);
  }
}

std::string FunctionKeys::ModuleName(KeyId key) const {
  capture::ModuleId m;
  if (key < capture_.functions.size()) {
    m = capture_.functions[key].module;
  } else {
    m = capture_.frames[key - capture_.functions.size()].module;
  }
  if (m == kNone) return "[unmapped]";
  const std::string& path = capture_.str(capture_.modules[m].path);
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string FunctionKeys::Name(KeyId key) const {
  if (key < capture_.functions.size()) return capture_.str(capture_.functions[key].name);
  const capture::Frame& f = capture_.frames[key - capture_.functions.size()];
  char buf[32];
  snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(f.address));
  if (f.module == kNone) return buf;
  return ModuleName(key) + "+" + buf;
}

std::vector<Cost> CostPerStack(const capture::Capture& c, Cost* no_stack) {
  std::vector<Cost> per(c.stacks.size());
  const auto& s = c.samples;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.stack[i] == kNone) {
      no_stack->Add(1, s.weight[i]);
    } else {
      per[s.stack[i]].Add(1, s.weight[i]);
    }
  }
  return per;
}

Flat ComputeFlat(const capture::Capture& c, const FunctionKeys& keys) {
  Flat flat;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, &no_stack);
  std::vector<Cost> self(keys.size()), total(keys.size());
  std::vector<uint32_t> seen(keys.size(), kNone);  // last stack node that counted a key
  flat.all = no_stack;
  for (uint32_t node = 0; node < per_stack.size(); ++node) {
    const Cost& cost = per_stack[node];
    if (cost.samples == 0) continue;
    flat.all.Add(cost.samples, cost.time_ns);
    self[keys.KeyOf(c.stacks.frame[node])].Add(cost.samples, cost.time_ns);
    // Total counts a function once per stack, however often it recurses.
    for (uint32_t n = node; n != kNone; n = c.stacks.parent[n]) {
      KeyId k = keys.KeyOf(c.stacks.frame[n]);
      if (seen[k] == node) continue;
      seen[k] = node;
      total[k].Add(cost.samples, cost.time_ns);
    }
  }
  for (KeyId k = 0; k < keys.size(); ++k) {
    if (total[k].samples > 0) flat.rows.push_back({k, self[k], total[k]});
  }
  std::vector<std::string> names(keys.size());
  for (const FlatRow& r : flat.rows) names[r.key] = keys.Name(r.key);
  std::sort(flat.rows.begin(), flat.rows.end(), [&](const FlatRow& a, const FlatRow& b) {
    if (a.self.samples != b.self.samples) return a.self.samples > b.self.samples;
    if (a.total.samples != b.total.samples) return a.total.samples > b.total.samples;
    if (names[a.key] != names[b.key]) return names[a.key] < names[b.key];
    return a.key < b.key;
  });
  return flat;
}

CallTree ComputeTree(const capture::Capture& c, const FunctionKeys& keys) {
  CallTree tree;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, &no_stack);
  tree.all = no_stack;
  // Stack nodes become tree nodes merged by function key under the same
  // parent; parents precede children in both, so one forward pass suffices.
  std::vector<uint32_t> tree_of_stack(c.stacks.size());
  std::map<std::pair<uint32_t, KeyId>, uint32_t> index;
  for (uint32_t node = 0; node < c.stacks.size(); ++node) {
    uint32_t parent = c.stacks.parent[node] == kNone ? kNone : tree_of_stack[c.stacks.parent[node]];
    KeyId key = keys.KeyOf(c.stacks.frame[node]);
    auto [it, inserted] = index.try_emplace({parent, key}, uint32_t(tree.nodes.size()));
    if (inserted) {
      tree.nodes.push_back({key, parent, {}, {}, {}});
      if (parent == kNone) {
        tree.roots.push_back(it->second);
      } else {
        tree.nodes[parent].children.push_back(it->second);
      }
    }
    tree_of_stack[node] = it->second;
    tree.nodes[it->second].self.Add(per_stack[node].samples, per_stack[node].time_ns);
    tree.all.Add(per_stack[node].samples, per_stack[node].time_ns);
  }
  for (uint32_t i = uint32_t(tree.nodes.size()); i-- > 0;) {
    TreeNode& n = tree.nodes[i];
    n.total.Add(n.self.samples, n.self.time_ns);
    if (n.parent != kNone) tree.nodes[n.parent].total.Add(n.total.samples, n.total.time_ns);
  }
  std::vector<std::string> names(keys.size());
  for (const TreeNode& n : tree.nodes) {
    if (names[n.key].empty()) names[n.key] = keys.Name(n.key);
  }
  auto order = [&](uint32_t a, uint32_t b) {
    const TreeNode& x = tree.nodes[a];
    const TreeNode& y = tree.nodes[b];
    if (x.total.samples != y.total.samples) return x.total.samples > y.total.samples;
    if (names[x.key] != names[y.key]) return names[x.key] < names[y.key];
    return a < b;
  };
  std::sort(tree.roots.begin(), tree.roots.end(), order);
  for (TreeNode& n : tree.nodes) std::sort(n.children.begin(), n.children.end(), order);
  return tree;
}

}  // namespace microscope::analysis
