#include "analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/profile.h"

namespace microscope::analysis {
namespace {

struct Side {
  std::map<std::pair<std::string, std::string>, uint64_t> self, total;
  std::map<std::string, uint64_t> paths;
  uint64_t all = 0;
};

Result<Side> Collect(const capture::Capture& c, Granularity granularity, const FilterSpec& spec) {
  FunctionKeys keys(c, granularity);
  ASSIGN_OR_RETURN(SampleFilter filter, SampleFilter::Make(c, keys, spec));
  Side side;
  Flat flat = ComputeFlat(c, keys, filter);
  side.all = flat.all.value;
  for (const FlatRow& r : flat.rows) {
    auto id = std::make_pair(keys.Name(r.key), keys.ModuleName(r.key));
    side.self[id] += r.self.value;
    side.total[id] += r.total.value;
  }
  CallTree tree = ComputeTree(c, keys, filter);
  for (uint32_t n = 0; n < tree.nodes.size(); ++n) {
    std::string path;
    for (KeyId k : PathOf(tree, n)) path += (path.empty() ? "" : ";") + keys.Name(k);
    side.paths[path] += tree.nodes[n].total.value;
  }
  return side;
}

template <typename Key, typename Name>
std::vector<DiffRow> Rows(const std::map<Key, uint64_t>& a, const std::map<Key, uint64_t>& b,
                          uint64_t all_a, uint64_t all_b, Name name) {
  std::map<Key, DiffRow> rows;
  for (const auto& [k, v] : a) {
    DiffRow& r = rows[k];
    name(k, &r);
    r.base_value = v;
  }
  for (const auto& [k, v] : b) {
    DiffRow& r = rows[k];
    name(k, &r);
    r.other_value = v;
  }
  std::vector<DiffRow> out;
  for (auto& [k, r] : rows) {
    r.base_share = all_a ? double(r.base_value) / double(all_a) : 0;
    r.other_share = all_b ? double(r.other_value) / double(all_b) : 0;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const DiffRow& x, const DiffRow& y) {
    double dx = std::fabs(x.delta()), dy = std::fabs(y.delta());
    if (dx != dy) return dx > dy;
    if (x.name != y.name) return x.name < y.name;
    return x.module < y.module;
  });
  return out;
}

}  // namespace

Result<DiffResult> Diff(const capture::Capture& base, const capture::Capture& other,
                        Granularity granularity, const FilterSpec& filter) {
  if (base.settings.metric != other.settings.metric || base.settings.unit != other.settings.unit) {
    return Status::Error("cannot compare captures of different quantities: one measures " +
                         base.settings.metric + " in " + base.settings.unit + ", the other " +
                         other.settings.metric + " in " + other.settings.unit);
  }
  ASSIGN_OR_RETURN(Side a, Collect(base, granularity, filter));
  ASSIGN_OR_RETURN(Side b, Collect(other, granularity, filter));
  DiffResult d;
  d.metric = base.settings.metric;
  d.unit = base.settings.unit;
  d.base_total = a.all;
  d.other_total = b.all;
  auto fn_name = [](const std::pair<std::string, std::string>& k, DiffRow* r) {
    r->name = k.first;
    r->module = k.second;
  };
  d.self = Rows(a.self, b.self, a.all, b.all, fn_name);
  d.total = Rows(a.total, b.total, a.all, b.all, fn_name);
  d.paths =
      Rows(a.paths, b.paths, a.all, b.all, [](const std::string& k, DiffRow* r) { r->name = k; });
  return d;
}

}  // namespace microscope::analysis
