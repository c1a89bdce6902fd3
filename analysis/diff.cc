#include "analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "analysis/profile.h"

namespace microscope::analysis {
namespace {

using FunctionId = std::pair<std::string, std::string>;  // name, module

// The two call trees merged: a node per function under the same merged
// parent. Names are interned once; a node is 32 bytes.
class MergedTree {
 public:
  struct Node {
    uint32_t parent;
    uint32_t name;
    uint32_t module;
    uint64_t value[2];
  };

  // Adds one side's tree (parents before children, as ComputeTree builds
  // it) with its nodes' total values.
  void Add(const CallTree& tree, const FunctionKeys& keys, int side, const Cancel& cancel) {
    std::vector<uint32_t> merged(tree.nodes.size());
    for (uint32_t n = 0; n < tree.nodes.size(); ++n) {
      if (cancel.At(n)) return;
      const TreeNode& t = tree.nodes[n];
      const uint32_t parent = t.parent == kNone ? kNone : merged[t.parent];
      const uint32_t name = Intern(keys.Name(t.key)), module = Intern(keys.ModuleName(t.key));
      auto [it, fresh] = index_.try_emplace(Key{parent, name, module}, uint32_t(nodes_.size()));
      if (fresh) nodes_.push_back({parent, name, module, {0, 0}});
      nodes_[it->second].value[side] += t.total.value;
      merged[n] = it->second;
    }
  }

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::string& str(uint32_t id) const { return strings_[id]; }

 private:
  static constexpr uint32_t kNone = capture::kNone;
  struct Key {
    uint32_t parent, name, module;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = (uint64_t(k.parent) << 32 | k.name) * 0x9E3779B97F4A7C15ull;
      return size_t(h ^ (h >> 29) ^ (uint64_t(k.module) * 0xBF58476D1CE4E5B9ull));
    }
  };

  uint32_t Intern(const std::string& s) {
    auto [it, fresh] = string_ids_.try_emplace(s, uint32_t(strings_.size()));
    if (fresh) strings_.push_back(s);
    return it->second;
  }

  std::vector<Node> nodes_;
  std::unordered_map<Key, uint32_t, KeyHash> index_;
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::vector<std::string> strings_;
};

struct Side {
  std::map<FunctionId, uint64_t> self, total;
  uint64_t all = 0;
};

Result<Side> Collect(const capture::Capture& c, Granularity granularity, const FilterSpec& spec,
                     int side_index, const DiffOptions& options, MergedTree* merged) {
  FunctionKeys keys(c, granularity);
  ASSIGN_OR_RETURN(SampleFilter filter, SampleFilter::Make(c, keys, spec, options.cancel));
  Side side;
  Flat flat = ComputeFlat(c, keys, filter, options.cancel);
  side.all = flat.all.value;
  for (const FlatRow& r : flat.rows) {
    auto id = std::make_pair(keys.Name(r.key), keys.ModuleName(r.key));
    side.self[id] += r.self.value;
    side.total[id] += r.total.value;
  }
  TreeOptions tree_options;
  tree_options.cancel = options.cancel;
  merged->Add(ComputeTree(c, keys, filter, tree_options), keys, side_index, options.cancel);
  return side;
}

void SetShares(DiffRow* r, uint64_t all_a, uint64_t all_b) {
  r->base_share = all_a ? double(r->base_value) / double(all_a) : 0;
  r->other_share = all_b ? double(r->other_value) / double(all_b) : 0;
}

void SortByChange(std::vector<DiffRow>* rows) {
  std::sort(rows->begin(), rows->end(), [](const DiffRow& x, const DiffRow& y) {
    double dx = std::fabs(x.delta()), dy = std::fabs(y.delta());
    if (dx != dy) return dx > dy;
    if (x.name != y.name) return x.name < y.name;
    return x.module < y.module;
  });
}

std::vector<DiffRow> Rows(const std::map<FunctionId, uint64_t>& a,
                          const std::map<FunctionId, uint64_t>& b, uint64_t all_a, uint64_t all_b) {
  std::map<FunctionId, DiffRow> rows;
  for (const auto& [k, v] : a) rows[k].base_value = v;
  for (const auto& [k, v] : b) rows[k].other_value = v;
  std::vector<DiffRow> out;
  out.reserve(rows.size());
  for (auto& [k, r] : rows) {
    r.name = k.first;
    r.module = k.second;
    SetShares(&r, all_a, all_b);
    out.push_back(std::move(r));
  }
  SortByChange(&out);
  return out;
}

// The merged tree's nodes over min_percent of either total, as DiffTreeNodes
// and their call paths.
Status KeepTree(const MergedTree& merged, uint64_t all_a, uint64_t all_b,
                const DiffOptions& options, DiffResult* d) {
  const auto& nodes = merged.nodes();
  auto kept = [&](const MergedTree::Node& n) {
    const double a = all_a ? 100.0 * double(n.value[0]) / double(all_a) : 0;
    const double b = all_b ? 100.0 * double(n.value[1]) / double(all_b) : 0;
    return std::max(a, b) >= options.min_percent;  // a kept node's parent is kept too
  };
  std::vector<uint32_t> out_of(nodes.size(), capture::kNone);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (!kept(nodes[i])) {
      ++d->pruned;
      continue;
    }
    if (options.max_nodes != 0 && d->tree.size() >= options.max_nodes) {
      return Status::Error(StatusCode::kTooLarge,
                           "the compared call trees have more than " +
                               std::to_string(options.max_nodes) +
                               " nodes over min_percent, more than a query may build: narrow it "
                               "(focus, thread, time, a coarser granularity, a larger "
                               "min_percent)");
    }
    const MergedTree::Node& n = nodes[i];
    DiffTreeNode node;
    node.row.name = merged.str(n.name);
    node.row.module = merged.str(n.module);
    node.row.base_value = n.value[0];
    node.row.other_value = n.value[1];
    SetShares(&node.row, all_a, all_b);
    out_of[i] = uint32_t(d->tree.size());
    d->tree.push_back(std::move(node));
    if (n.parent == capture::kNone) {
      d->roots.push_back(out_of[i]);
    } else {
      d->tree[out_of[n.parent]].children.push_back(out_of[i]);
    }
    // Its path: its parent's (kept before it), then its name.
    DiffRow path = d->tree[out_of[i]].row;
    path.module.clear();
    if (n.parent != capture::kNone) path.name = d->paths[out_of[n.parent]].name + ";" + path.name;
    d->paths.push_back(std::move(path));
  }
  auto larger = [&](uint32_t x, uint32_t y) {
    const DiffRow& a = d->tree[x].row;
    const DiffRow& b = d->tree[y].row;
    const double sa = std::max(a.base_share, a.other_share);
    const double sb = std::max(b.base_share, b.other_share);
    if (sa != sb) return sa > sb;
    return a.name < b.name;
  };
  std::sort(d->roots.begin(), d->roots.end(), larger);
  for (DiffTreeNode& n : d->tree) std::sort(n.children.begin(), n.children.end(), larger);
  SortByChange(&d->paths);
  return OkStatus();
}

}  // namespace

Result<DiffResult> Diff(const capture::Capture& base, const capture::Capture& other,
                        Granularity granularity, const FilterSpec& filter,
                        const DiffOptions& options) {
  if (base.settings.metric != other.settings.metric || base.settings.unit != other.settings.unit) {
    return Status::Error("cannot compare captures of different quantities: one measures " +
                         base.settings.metric + " in " + base.settings.unit + ", the other " +
                         other.settings.metric + " in " + other.settings.unit);
  }
  MergedTree merged;
  ASSIGN_OR_RETURN(Side a, Collect(base, granularity, filter, 0, options, &merged));
  ASSIGN_OR_RETURN(Side b, Collect(other, granularity, filter, 1, options, &merged));
  DiffResult d;
  d.metric = base.settings.metric;
  d.unit = base.settings.unit;
  d.base_total = a.all;
  d.other_total = b.all;
  d.self = Rows(a.self, b.self, a.all, b.all);
  d.total = Rows(a.total, b.total, a.all, b.all);
  RETURN_IF_ERROR(KeepTree(merged, a.all, b.all, options, &d));
  return d;
}

}  // namespace microscope::analysis
