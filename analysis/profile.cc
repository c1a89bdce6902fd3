#include "analysis/profile.h"

#include <algorithm>
#include <map>

namespace microscope::analysis {

using capture::kNone;

std::vector<Cost> CostPerStack(const capture::Capture& c, const SampleFilter& filter,
                               Cost* no_stack) {
  std::vector<Cost> per(c.stacks.size());
  const auto& s = c.samples;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!filter.Keep(c, i)) continue;
    Cost& target = s.stack[i] == kNone ? *no_stack : per[s.stack[i]];
    target.Add(s.CountAt(i), s.weight[i]);
  }
  return per;
}

Flat ComputeFlat(const capture::Capture& c, const FunctionKeys& keys, const SampleFilter& filter) {
  Flat flat;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, filter, &no_stack);
  std::vector<Cost> self(keys.size()), total(keys.size());
  std::vector<uint32_t> seen(keys.size(), kNone);  // last stack node that counted a key
  flat.all = no_stack;
  for (uint32_t node = 0; node < per_stack.size(); ++node) {
    const Cost& cost = per_stack[node];
    if (cost.samples == 0 && cost.value == 0) continue;
    flat.all.Add(cost);
    self[keys.KeyOf(c.stacks.frame[node])].Add(cost);
    // Total counts a function once per stack, however often it recurses.
    for (uint32_t n = node; n != kNone; n = c.stacks.parent[n]) {
      KeyId k = keys.KeyOf(c.stacks.frame[n]);
      if (seen[k] == node) continue;
      seen[k] = node;
      total[k].Add(cost);
    }
  }
  for (KeyId k = 0; k < keys.size(); ++k) {
    if (total[k].samples > 0 || total[k].value > 0) flat.rows.push_back({k, self[k], total[k]});
  }
  std::sort(flat.rows.begin(), flat.rows.end(), [&](const FlatRow& a, const FlatRow& b) {
    if (a.self.value != b.self.value) return a.self.value > b.self.value;
    if (a.total.value != b.total.value) return a.total.value > b.total.value;
    if (a.self.samples != b.self.samples) return a.self.samples > b.self.samples;
    return keys.Name(a.key) < keys.Name(b.key);
  });
  return flat;
}

namespace {

class TreeBuilder {
 public:
  explicit TreeBuilder(CallTree* tree) : tree_(tree) {}
  uint32_t Child(uint32_t parent, KeyId key) {
    auto [it, inserted] = index_.try_emplace({parent, key}, uint32_t(tree_->nodes.size()));
    if (inserted) {
      tree_->nodes.push_back({key, parent, {}, {}, {}});
      if (parent == kNone) {
        tree_->roots.push_back(it->second);
      } else {
        tree_->nodes[parent].children.push_back(it->second);
      }
    }
    return it->second;
  }

 private:
  CallTree* tree_;
  std::map<std::pair<uint32_t, KeyId>, uint32_t> index_;
};

}  // namespace

CallTree ComputeTree(const capture::Capture& c, const FunctionKeys& keys,
                     const SampleFilter& filter, TreeOptions options) {
  CallTree tree;
  tree.inverted = options.inverted;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, filter, &no_stack);
  tree.all = no_stack;
  TreeBuilder builder(&tree);
  if (!options.inverted) {
    // Stack nodes become tree nodes merged by key under the same parent;
    // parents precede children in both, so one forward pass suffices.
    std::vector<uint32_t> tree_of_stack(c.stacks.size());
    for (uint32_t node = 0; node < c.stacks.size(); ++node) {
      uint32_t sp = c.stacks.parent[node];
      uint32_t parent = sp == kNone ? kNone : tree_of_stack[sp];
      KeyId key = keys.KeyOf(c.stacks.frame[node]);
      uint32_t t = (options.collapse_recursion && parent != kNone && tree.nodes[parent].key == key)
                       ? parent
                       : builder.Child(parent, key);
      tree_of_stack[node] = t;
      tree.nodes[t].self.Add(per_stack[node]);
      tree.all.Add(per_stack[node]);
    }
    for (uint32_t i = uint32_t(tree.nodes.size()); i-- > 0;) {
      TreeNode& n = tree.nodes[i];
      n.total.Add(n.self);
      if (n.parent != kNone) tree.nodes[n.parent].total.Add(n.total);
    }
  } else {
    // Each sampled stack, read from its leaf outwards, is a path from a
    // root (the sampled function) through its callers.
    for (uint32_t node = 0; node < c.stacks.size(); ++node) {
      const Cost& cost = per_stack[node];
      if (cost.samples == 0 && cost.value == 0) continue;
      tree.all.Add(cost);
      uint32_t t = kNone;
      KeyId last = kNone;
      for (uint32_t n = node; n != kNone; n = c.stacks.parent[n]) {
        KeyId key = keys.KeyOf(c.stacks.frame[n]);
        if (options.collapse_recursion && key == last) continue;
        t = builder.Child(t, key);
        tree.nodes[t].total.Add(cost);
        if (n == node) tree.nodes[t].self.Add(cost);
        last = key;
      }
    }
  }
  auto order = [&](uint32_t a, uint32_t b) {
    const TreeNode& x = tree.nodes[a];
    const TreeNode& y = tree.nodes[b];
    if (x.total.value != y.total.value) return x.total.value > y.total.value;
    if (x.total.samples != y.total.samples) return x.total.samples > y.total.samples;
    if (keys.Name(x.key) != keys.Name(y.key)) return keys.Name(x.key) < keys.Name(y.key);
    return a < b;
  };
  std::sort(tree.roots.begin(), tree.roots.end(), order);
  for (TreeNode& n : tree.nodes) std::sort(n.children.begin(), n.children.end(), order);
  return tree;
}

std::vector<KeyId> PathOf(const CallTree& tree, uint32_t node) {
  std::vector<KeyId> path;
  for (uint32_t n = node; n != kNone; n = tree.nodes[n].parent) path.push_back(tree.nodes[n].key);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace microscope::analysis
