#include "analysis/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "analysis/assembly.h"
#include "analysis/source.h"
#include "analysis/syscalls.h"
#include "base/percent.h"

namespace microscope::analysis {
ReportCost Share(const Cost& c, uint64_t all) {
  return {c.samples, c.value, Percent(c.value, all)};
}

namespace {

ReportFunction Function(const FunctionKeys& keys, KeyId key, const Cost& self, const Cost& total,
                        uint64_t all) {
  return {keys.Name(key), keys.ModuleName(key), Share(self, all), Share(total, all),
          keys.KindName(key)};
}

// The first `top` of `order`, up to the first row `shown` refuses.
template <typename Shown>
std::vector<uint32_t> TopRows(const std::vector<uint32_t>& order, size_t top, Shown shown) {
  std::vector<uint32_t> out;
  for (uint32_t i : order) {
    if (out.size() == top || !shown(i)) break;
    out.push_back(i);
  }
  return out;
}

ReportFlat BuildFlat(const Flat& flat, const FunctionKeys& keys, size_t top) {
  ReportFlat out;
  const uint64_t all = flat.all.value;
  out.all = Share(flat.all, all);
  std::vector<uint32_t> order(flat.rows.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    const FlatRow& r = flat.rows[i];
    out.rows.push_back(Function(keys, r.key, r.self, r.total, all));
    order[i] = i;
  }
  out.by_self = TopRows(order, top, [&](uint32_t i) { return flat.rows[i].self.samples > 0; });
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return flat.rows[a].total.value > flat.rows[b].total.value;
  });
  out.by_total = TopRows(order, top, [&](uint32_t i) { return flat.rows[i].total.samples > 0; });
  return out;
}

// Pruning: a node under `min_percent` of the total is left out, and its
// subtree with it.
bool KeptInTree(const CallTree& tree, uint32_t node, double min_percent) {
  return Percent(tree.nodes[node].total.value, tree.all.value) >= min_percent;
}

uint32_t AddTreeNode(const CallTree& tree, const FunctionKeys& keys, uint32_t node,
                     double min_percent, ReportTree* out) {
  const TreeNode& n = tree.nodes[node];
  const uint32_t at = uint32_t(out->nodes.size());
  out->nodes.push_back({Function(keys, n.key, n.self, n.total, tree.all.value), {}});
  for (uint32_t child : n.children) {
    if (!KeptInTree(tree, child, min_percent)) continue;
    uint32_t added = AddTreeNode(tree, keys, child, min_percent, out);
    out->nodes[at].children.push_back(added);
  }
  return at;
}

Status Cancelled() {
  return Status::Error(StatusCode::kCancelled, "the query was cancelled");
}

// The tree's pruned view; an error when the tree stopped short (cancelled,
// over the bound) or its view would be over the bound.
Result<ReportTree> BuildTree(const CallTree& tree, const FunctionKeys& keys, const ReportQuery& q) {
  const char* which = tree.inverted ? "inverted call tree" : "call tree";
  auto over = [&] {
    return Status::Error(StatusCode::kTooLarge,
                         std::string("the ") + which + " has more than " +
                             std::to_string(q.max_tree_nodes) +
                             " nodes, more than a query may build: narrow it (focus, thread, "
                             "time, a coarser granularity, a larger min_percent)");
  };
  if (tree.cancelled) return Cancelled();
  if (tree.over_bound) return over();
  if (q.max_tree_nodes != 0) {
    size_t shown = 0;
    for (uint32_t i = 0; i < tree.nodes.size(); ++i) {
      shown += KeptInTree(tree, i, q.min_percent);  // a kept node's parent is kept too
    }
    if (shown > q.max_tree_nodes) return over();
  }
  ReportTree out;
  out.inverted = tree.inverted;
  Cost pruned_self, pruned_total;
  for (uint32_t root : tree.roots) {
    if (KeptInTree(tree, root, q.min_percent)) {
      out.roots.push_back(AddTreeNode(tree, keys, root, q.min_percent, &out));
    } else {
      pruned_self.Add(tree.nodes[root].self);
      pruned_total.Add(tree.nodes[root].total);
    }
  }
  // The roots still add up to the whole: what pruning left out of them is
  // one node (an inverted tree's roots are every sampled function, most of
  // them small).
  if (pruned_total.samples != 0 || pruned_total.value != 0) {
    out.roots.push_back(uint32_t(out.nodes.size()));
    out.nodes.push_back({{std::string(kPrunedNode), "", Share(pruned_self, tree.all.value),
                          Share(pruned_total, tree.all.value), "other"},
                         {},
                         true});
  }
  return out;
}

std::vector<ReportThread> BuildThreads(const std::vector<ThreadCost>& threads, uint64_t all) {
  std::vector<ReportThread> out;
  for (const ThreadCost& t : threads) {
    out.push_back({t.tid, t.pid, t.name, Share(Cost{t.samples, t.value}, all), t.gil_labeled,
                   t.gil_held, t.isolate});
  }
  return out;
}

// The program's zones, marks and labels under each lane, with a letter per
// zone in the order the lanes first show them.
void AddProbeLanes(const capture::Capture& c, const Lanes& lanes, ReportLanes* out) {
  if (c.probe_records.size() == 0) return;
  const std::vector<ProbeBuckets> buckets =
      ProbeLaneBuckets(c, lanes.start, lanes.bucket_ns, lanes.bucket_count);
  std::map<capture::ProbeSiteId, char> letters;
  for (size_t l = 0; l < lanes.lanes.size(); ++l) {
    const ProbeBuckets& b = buckets[lanes.lanes[l].thread];
    ReportLane& lane = out->lanes[l];
    if (b.zone.empty()) continue;
    lane.zones.assign(b.zone.size(), ' ');
    lane.events.assign(b.events.size(), ' ');
    for (size_t k = 0; k < b.zone.size(); ++k) {
      if (b.zone[k] != capture::kNone) {
        auto [it, fresh] = letters.try_emplace(b.zone[k], '+');
        if (fresh && out->zone_names.size() < 26) {
          it->second = char('a' + out->zone_names.size());
          out->zone_names.push_back(c.str(c.probe_sites.name[b.zone[k]]));
        }
        lane.zones[k] = it->second;
      }
      static constexpr char kEvents[] = {' ', '|', '*', '#'};
      lane.events[k] = kEvents[b.events[k] & 3];
    }
  }
}

char GapLetter(capture::GapCause cause) {
  switch (cause) {
    case capture::GapCause::kLostRecords:
      return 'L';
    case capture::GapCause::kThrottled:
      return 'T';
    case capture::GapCause::kBudget:
      return 'B';
    case capture::GapCause::kWalkerNotOn:
      return 'W';
    case capture::GapCause::kSegmentMissing:
      return 'S';
    case capture::GapCause::kNotAttached:
      return 'A';
  }
  return '?';
}

namespace {

// Marks the columns [begin, end] covers with the gap's letter.
void MarkGap(const capture::Gap& g, const Lanes& lanes, std::string* columns) {
  if (lanes.bucket_count == 0 || g.end < lanes.start) return;
  columns->resize(lanes.bucket_count, ' ');
  const uint64_t width = std::max<uint64_t>(lanes.bucket_ns, 1);
  const size_t first = g.begin <= lanes.start ? 0 : size_t((g.begin - lanes.start) / width);
  const size_t last = size_t((g.end - lanes.start) / width);
  for (size_t i = first; i <= last && i < lanes.bucket_count; ++i)
    (*columns)[i] = GapLetter(g.cause);
}

// Each process's threads' samples together, per column: processes in the
// order of their busiest thread (the lanes come busiest first). None with
// one process.
std::vector<ReportLane> ProcessLanes(const capture::Capture& c,
                                     const std::vector<ReportLane>& lanes) {
  std::vector<ReportLane> out;
  std::unordered_map<int32_t, size_t> at;
  for (const ReportLane& lane : lanes) {
    auto [it, fresh] = at.try_emplace(lane.pid, out.size());
    if (fresh) {
      ReportLane& p = out.emplace_back();
      p.tid = p.pid = lane.pid;
      p.buckets.assign(lane.buckets.size(), 0);
      for (const capture::Process& process : c.processes) {
        if (process.pid == lane.pid && process.command != kNone) p.name = c.str(process.command);
      }
    }
    ReportLane& p = out[it->second];
    p.total += lane.total;
    for (size_t i = 0; i < lane.buckets.size() && i < p.buckets.size(); ++i)
      p.buckets[i] += lane.buckets[i];
  }
  if (out.size() < 2) out.clear();
  return out;
}

}  // namespace

ReportLanes BuildLanes(const capture::Capture& c, Lanes lanes, size_t top) {
  ReportLanes out;
  out.shown = std::min(top, lanes.lanes.size());
  out.start = lanes.start;
  out.bucket_ns = lanes.bucket_ns;
  out.bucket_count = lanes.bucket_count;
  for (Lane& lane : lanes.lanes) {
    for (uint32_t b : lane.buckets) out.peak = std::max(out.peak, b);
    out.any_off_cpu = out.any_off_cpu || lane.off_cpu_ns > 0;
    ReportLane r;
    const capture::Thread& t = c.threads[lane.thread];
    r.tid = t.tid;
    r.name = c.str(t.name);
    r.total = lane.total;
    for (size_t i = 0; i < lane.buckets.size(); ++i) r.cells.push_back(CellOf(lanes, lane, i));
    r.buckets = std::move(lane.buckets);
    r.off_cpu = std::move(lane.off_cpu);
    r.off_cpu_ns = lane.off_cpu_ns;
    const uint32_t pid = t.process < c.processes.size() ? c.processes[t.process].pid : 0;
    r.pid = int32_t(pid);
    for (const capture::Gap& g : c.gaps) {
      if (g.pid != 0 && g.pid == pid && (g.tid == 0 || g.tid == uint32_t(t.tid)))
        MarkGap(g, lanes, &r.gaps);
    }
    out.lanes.push_back(std::move(r));
  }
  for (const capture::Gap& g : c.gaps) {
    if (g.pid == 0) MarkGap(g, lanes, &out.gaps);
  }
  out.processes = ProcessLanes(c, out.lanes);
  out.gap_rows = c.gaps;
  AddProbeLanes(c, lanes, &out);
  out.trace_lanes = ComputeTraceLanes(c, lanes.start, lanes.bucket_ns, lanes.bucket_count);
  for (const capture::Trace& t : c.traces) {
    if (t.OwnAxis()) out.own_axis_traces.push_back(t.path);
  }
  return out;
}

ReportOffCpuTotal OffCpuShare(const OffCpuStateTotal& t, uint64_t all) {
  return {t.intervals, t.shorts, t.total_ns, Percent(t.total_ns, all)};
}

ReportOffCpu BuildOffCpu(const capture::Capture& c, OffCpuSummary o, size_t top) {
  ReportOffCpu out;
  const uint64_t all = o.total_ns();
  for (uint8_t s = 0; s < capture::kOffCpuStateCount; ++s) {
    out.states[s] = OffCpuShare(o.by_state[s], all);
  }
  for (const OffCpuThreadState& r : o.by_thread_state) {
    const capture::Thread& t = c.threads[r.thread];
    out.threads.push_back({t.tid, c.str(t.name), r.state, OffCpuShare(r.total, all)});
  }
  for (ThreadWakers& tw : o.wakers) {
    const capture::Thread& t = c.threads[tw.thread];
    out.wakers.push_back({t.tid, c.str(t.name), tw.count, tw.total_ns, std::move(tw.wakers)});
  }
  out.shown_threads = std::min(top, out.threads.size());
  out.shown_wakers = std::min(top, out.wakers.size());
  o.by_thread_state.clear();
  o.wakers.clear();
  out.totals = std::move(o);
  return out;
}

// Function names and modules, innermost first.
std::vector<ReportFrame> StackFrames(const capture::Capture& c, const FunctionKeys& keys,
                                     capture::StackId stack) {
  std::vector<ReportFrame> out;
  for (uint32_t n = stack; n != capture::kNone; n = c.stacks.parent[n]) {
    KeyId k = keys.KeyOf(c.stacks.frame[n]);
    out.push_back({keys.Name(k), keys.ModuleName(k)});
  }
  return out;
}

ReportSyscalls BuildSyscalls(const capture::Capture& c, const FunctionKeys& keys, size_t top) {
  SyscallTable t = ComputeSyscalls(c, top);
  ReportSyscalls out;
  out.calls = t.calls;
  out.errors = t.errors;
  out.total_ns = t.total_ns;
  for (SyscallRow& r : t.rows) {
    out.rows.push_back({r.nr, std::move(r.name), r.calls, r.errors, r.total_ns, r.mean_ns(),
                        r.max_ns, Percent(r.total_ns, t.total_ns)});
  }
  for (SlowCall& s : t.slowest) {
    const capture::Thread& th = c.threads[s.thread];
    out.slowest.push_back({std::move(s.name), th.tid, c.str(th.name), s.time,
                           s.time - c.settings.start_time, s.duration_ns, s.ret, ErrnoName(s.ret),
                           StackFrames(c, keys, s.stack)});
  }
  return out;
}

// A table shows its top rows while their change shows as more than 0.00%.
ReportDiffTable DiffTable(std::vector<DiffRow> rows, size_t top) {
  ReportDiffTable out;
  while (out.shown < rows.size() && out.shown < top &&
         std::fabs(100 * rows[out.shown].delta()) >= 0.005) {
    ++out.shown;
  }
  out.rows = std::move(rows);
  return out;
}

ReportDiff BuildDiff(DiffResult d, size_t top) {
  return {d.metric,
          d.unit,
          d.base_total,
          d.other_total,
          DiffTable(std::move(d.self), top),
          DiffTable(std::move(d.total), top),
          DiffTable(std::move(d.paths), top),
          std::move(d.tree),
          std::move(d.roots),
          d.pruned};
}

// The header names a few processes: a build runs hundreds.
constexpr size_t kHeaderProcesses = 5;

std::vector<uint32_t> ShownProcesses(const Summary& s) {
  std::vector<uint32_t> order(s.processes.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  // processes are by pid: a stable sort keeps pid order among ties.
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const ProcessSummary& pa = s.processes[a];
    const ProcessSummary& pb = s.processes[b];
    const bool ta = pa.pid == s.target_pid, tb = pb.pid == s.target_pid;
    if (ta != tb) return ta;
    return pa.samples > pb.samples;
  });
  order.resize(std::min(order.size(), kHeaderProcesses));
  return order;
}

bool IsKernelFrame(const capture::Capture& c, const capture::Frame& f) {
  if (f.kind == capture::FrameKind::kKernel) return true;
  if (f.function == capture::kNone) return false;
  const std::string& name = c.str(c.functions[f.function].name);
  return name.size() > 4 && name.compare(name.size() - 4, 4, "_[k]") == 0;
}

std::string KernelFrames(const capture::Capture& c) {
  if (c.settings.mode != "import") return c.settings.kernel_frames ? "on" : "off";
  for (const capture::Frame& f : c.frames) {
    if (IsKernelFrame(c, f)) return "in the imported stacks";
  }
  return "unknown (imported)";
}

ReportHeader BuildHeader(const capture::Capture& original, const capture::Capture& cap,
                         Metric metric, const ReportQuery& q) {
  ReportHeader h;
  h.summary = Summarize(cap);
  h.metric = metric;
  const Summary& s = h.summary;
  h.off_cpu = BuildOffCpu(original, SummarizeOffCpu(original), q.top);
  const OffCpuSummary& o = h.off_cpu.totals;
  h.show_off_cpu = o.any() || !o.status.empty();
  h.show_metric = o.any() || metric != Metric::kCpu;
  h.named_percent = Percent(s.fully_named, s.samples);
  const uint64_t complete = s.stack_ends[uint8_t(capture::StackEnd::kComplete)];
  const uint64_t fp = s.stack_ends[uint8_t(capture::StackEnd::kFramePointerEnd)];
  h.ended_early = complete + fp < s.samples ? s.samples - complete - fp : 0;
  h.complete_percent = Percent(complete, s.samples);
  h.syscalls = cap.settings.SourceState(capture::kSyscallSource);
  if (const capture::SourceSetting* sys = cap.settings.Source(capture::kSyscallSource))
    h.syscall_stack_min = sys->Value("stack_min_ns");
  h.filter_text = q.filter_text;
  h.shown_processes = ShownProcesses(s);
  h.kernel_frames = KernelFrames(original);
  return h;
}

ReportNouns Nouns(Granularity g, Metric metric) {
  ReportNouns n;
  if (g == Granularity::kLine) n = {"line", "lines", ""};
  if (g == Granularity::kAddress) n = {"address", "addresses", ""};
  n.counts = metric == Metric::kOffCpu ? "intervals"
             : metric == Metric::kWall ? "samples and intervals"
                                       : "samples";
  return n;
}

// A syscall-only capture shows its table by default.
bool SyscallsShown(const capture::Capture& c, const ReportViews& v) {
  return v.syscalls || (c.samples.size() == 0 && c.syscalls.size() > 0 && c.off_cpu.size() == 0);
}

// The other capture of a diff, measured in `metric`.
Result<DiffResult> DiffWith(const capture::Capture& cap, const capture::Capture& other,
                            Metric metric, const ReportQuery& q) {
  if (Status ok = CheckMetric(other, metric); !ok.ok()) return ok.WithContext(q.other_name);
  const DiffOptions options{q.min_percent, q.max_tree_nodes, q.cancel};
  if (metric == Metric::kCpu) return Diff(cap, other, q.granularity, q.filter, options);
  capture::Capture measured = ForMetric(other, metric, MetricOptions{q.views.by_state});
  return Diff(cap, measured, q.granularity, q.filter, options);
}

// The most runs a stack chart holds (some 20 bytes each in the JSON): a
// longer range is narrowed first (the page asks for the range it shows).
constexpr size_t kStackChartRuns = 50'000;
// The most markers an answer holds (the longest; the rest are counted).
constexpr size_t kMarkers = 20'000;

// The views that read the filtered samples of the chosen metric (`cap`);
// lanes and the off-CPU tables read the capture's own CPU samples and
// intervals (`original`).
Status BuildViews(const capture::Capture& original, const capture::Capture& cap,
                  const FunctionKeys& keys, const SampleFilter& filter, const ReportQuery& q,
                  ReportModel* m) {
  const ReportViews& v = q.views;
  m->flat = BuildFlat(ComputeFlat(cap, keys, filter, q.cancel), keys, q.top);
  if (q.cancel()) return Cancelled();
  if (v.by_state) {
    m->by_state = BuildOffCpu(cap, SummarizeOffCpu(original, filter, q.top), q.top);
  }
  for (bool inverted : {false, true}) {
    if (!(inverted ? v.inverted : v.tree)) continue;
    const TreeOptions options{inverted, q.collapse_recursion, q.max_tree_nodes, q.cancel};
    ASSIGN_OR_RETURN(ReportTree tree, BuildTree(ComputeTree(cap, keys, filter, options), keys, q));
    (inverted ? m->inverted : m->tree) = std::move(tree);
  }
  if (q.cancel()) return Cancelled();
  if (v.threads) {
    m->threads = BuildThreads(ThreadTotals(cap, filter), m->flat.all.value);
    m->shown_threads = std::min(q.top, m->threads->size());
  }
  if (v.lanes) m->lanes = BuildLanes(original, ComputeLanes(original, filter, q.lane_width), q.top);
  if (v.stack_chart)
    m->stack_chart = ComputeStackChart(cap, keys, filter, kStackChartRuns, q.cancel);
  if (v.markers) m->markers = ComputeMarkers(original, filter, kMarkers, q.cancel);
  if (SyscallsShown(original, v)) m->syscalls = BuildSyscalls(cap, keys, q.top);
  if (v.zones) m->zones = BuildZonesReport(original, q.top, filter);
  if (!original.traces.empty()) m->traces = BuildTracesReport(original, q.top, filter);
  m->show_spans = v.spans;
  return q.cancel() ? Cancelled() : OkStatus();
}

}  // namespace

Result<ReportModel> BuildReport(const capture::Capture& recorded, const ReportQuery& q,
                                const capture::Capture* other) {
  const Shaping how{.inlines = q.inlines,
                    .look = q.look,
                    .merge = q.merge,
                    .collapse = q.collapse,
                    .focus_path = q.filter.focus_path};
  Result<std::optional<capture::Capture>> mine = AsShown(recorded, how);
  if (!mine.ok()) return mine.status().WithContext(q.capture_name);
  std::optional<capture::Capture> folded = std::move(mine).value(), other_folded;
  if (other != nullptr && folded) {
    Result<std::optional<capture::Capture>> theirs = AsShown(*other, how);
    if (!theirs.ok()) return theirs.status().WithContext(q.other_name);
    other_folded = std::move(theirs).value();
    other = &*other_folded;
  }
  const capture::Capture& original = folded ? *folded : recorded;
  const Metric metric = q.metric.value_or(DefaultMetric(original));
  if (Status ok = CheckMetric(original, metric); !ok.ok()) return ok.WithContext(q.capture_name);
  std::optional<capture::Capture> for_metric;
  if (q.cancel()) return Cancelled();
  if (metric != Metric::kCpu) for_metric = ForMetric(original, metric, {q.views.by_state});
  const capture::Capture& cap = for_metric ? *for_metric : original;
  FunctionKeys keys(cap, q.granularity);
  if (q.cancel()) return Cancelled();
  Result<SampleFilter> filter = SampleFilter::Make(cap, keys, q.filter, q.cancel);
  if (!filter.ok()) return filter.status().WithContext(q.capture_name);
  ReportModel m;
  m.min_percent = q.min_percent;
  m.nouns = Nouns(q.granularity, metric);
  m.header = BuildHeader(original, cap, metric, q);
  if (q.cancel()) return Cancelled();
  RETURN_IF_ERROR(BuildViews(original, cap, keys, *filter, q, &m));
  auto no_function = [&](const std::string& name) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "no function named '" + name + "' in the capture")
        .WithContext(q.capture_name);
  };
  if (!q.source.empty()) {
    m.source = BuildSource(cap, *filter, q.source, m.flat.all.value);
    if (!m.source) return no_function(q.source);
  }
  if (!q.assembly.empty()) {
    m.assembly = BuildAssembly(cap, *filter, q.assembly, m.flat.all.value);
    if (!m.assembly) return no_function(q.assembly);
  }
  if (!q.neighbors.empty()) {
    m.neighbors = ComputeNeighbors(cap, keys, *filter, q.neighbors, q.top, q.cancel);
    if (!m.neighbors) return no_function(q.neighbors);
  }
  if (other != nullptr) {
    ASSIGN_OR_RETURN(DiffResult diff, DiffWith(cap, *other, metric, q));
    m.diff = BuildDiff(std::move(diff), q.top);
  }
  if (q.cancel()) return Cancelled();
  const ReportViews& v = q.views;
  const bool any = v.flat || v.tree || v.inverted || v.threads || v.lanes || m.diff || m.syscalls ||
                   m.source || m.assembly || m.zones || v.spans || v.stack_chart || m.neighbors ||
                   v.markers;
  m.show_flat = v.flat || !any;
  return m;
}

}  // namespace microscope::analysis
