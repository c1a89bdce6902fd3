#include "formats/report_json.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "analysis/presentation.h"

namespace microscope::formats {
namespace {

using analysis::ReportModel;
using nlohmann::ordered_json;

ordered_json CostJson(const analysis::ReportCost& c) {
  return {{"samples", c.samples},
          {"value", c.value},
          {"percent", c.percent},
          {"text", analysis::Share(c.percent)}};
}

ordered_json FunctionJson(const analysis::ReportFunction& f) {
  ordered_json j = {{"function", f.name},
                    {"module", f.module},
                    {"self", CostJson(f.self)},
                    {"total", CostJson(f.total)}};
  if (f.kind != "native") j["kind"] = f.kind;  // native when absent
  return j;
}

ordered_json TreeNodeJson(const analysis::ReportTree& tree, uint32_t i) {
  const analysis::ReportTreeNode& n = tree.nodes[i];
  ordered_json node = FunctionJson(n.function);
  if (n.pruned) node["pruned"] = true;
  ordered_json children = ordered_json::array();
  for (uint32_t c : n.children) children.push_back(TreeNodeJson(tree, c));
  node["children"] = std::move(children);
  return node;
}

ordered_json TreeJson(const analysis::ReportTree& tree) {
  ordered_json roots = ordered_json::array();
  for (uint32_t r : tree.roots) roots.push_back(TreeNodeJson(tree, r));
  return roots;
}

ordered_json DiffRowJson(const analysis::DiffRow& r, bool with_module) {
  ordered_json j = {{"name", r.name}};
  if (with_module) j["module"] = r.module;
  j["side"] = r.side();
  j["base_value"] = r.base_value;
  j["other_value"] = r.other_value;
  j["base_share"] = r.base_share;
  j["other_share"] = r.other_share;
  j["delta"] = r.delta();
  j["delta_text"] = analysis::ShareChange(100 * r.delta());
  return j;
}

// A table's rows as its text shows them (the top ones whose change shows),
// and how many rows it has in all.
ordered_json DiffTableJson(const analysis::ReportDiffTable& table, bool with_module) {
  ordered_json rows = ordered_json::array();
  for (size_t i = 0; i < table.shown; ++i) rows.push_back(DiffRowJson(table.rows[i], with_module));
  return rows;
}

ordered_json DiffTreeNodeJson(const analysis::ReportDiff& d, uint32_t i) {
  const analysis::DiffTreeNode& n = d.tree[i];
  ordered_json node = DiffRowJson(n.row, true);
  ordered_json children = ordered_json::array();
  for (uint32_t c : n.children) children.push_back(DiffTreeNodeJson(d, c));
  node["children"] = std::move(children);
  return node;
}

ordered_json SummaryJson(const analysis::Summary& s) {
  ordered_json j;
  j["command"] = s.command;
  j["mode"] = s.mode;
  j["recorder"] = s.recorder;
  j["target_pid"] = s.target_pid;
  j["frequency"] = s.frequency;
  j["call_graph"] = s.call_graph;
  j["stack_copy"] = s.stack_copy;
  j["metric"] = s.metric;
  j["unit"] = s.unit;
  j["duration_ns"] = s.duration_ns;
  j["start_time"] = s.start_time;
  if (s.realtime_start) j["realtime_start"] = *s.realtime_start;
  if (!s.part.empty()) {
    j["part"] = s.part;
    j["part_index"] = s.part_index;
  }
  if (!s.recording_id.empty()) j["recording_id"] = s.recording_id;
  if (s.budget_ppm != 0) {
    j["budget_ppm"] = s.budget_ppm;
    ordered_json steps = ordered_json::array();
    for (const capture::BudgetStep& st : s.budget_steps) {
      steps.push_back({{"time", st.time},
                       {"level", st.level},
                       {"frequency", st.frequency},
                       {"stack_copy", st.stack_copy},
                       {"measured_ppm", st.measured_ppm},
                       {"reason", st.reason}});
    }
    j["budget_steps"] = steps;
  }
  ordered_json sources = ordered_json::object();
  for (const capture::SourceSetting& src : s.sources) {
    ordered_json values = ordered_json::object();
    for (const auto& [k, v] : src.values) values[k] = v;
    sources[src.name] = {{"state", src.state}, {"values", values}};
  }
  j["sources"] = sources;
  j["samples"] = s.samples;
  j["value"] = s.value;
  j["fully_named_samples"] = s.fully_named;
  j["symbols"] = s.symbols;
  j["lost_records"] = s.lost_records;
  j["lost_samples"] = s.lost_samples;
  if (s.lost_task_records) j["lost_task_records"] = *s.lost_task_records;
  if (s.ring_lost_records) j["ring_lost_records"] = *s.ring_lost_records;
  if (s.kernel_lost_records) j["kernel_lost_records"] = *s.kernel_lost_records;
  j["throttles"] = s.throttles;
  j["kernel_frames"] = s.kernel_frames;
  ordered_json ends = ordered_json::object();
  for (uint8_t e = 0; e < capture::kStackEndCount; ++e) {
    ends[capture::StackEndName(capture::StackEnd(e))] = s.stack_ends[e];
  }
  j["stack_ends"] = ends;
  j["processes"] = ordered_json::array();
  for (const auto& p : s.processes) {
    j["processes"].push_back({{"pid", p.pid},
                              {"parent_pid", p.parent_pid},
                              {"command", p.command},
                              {"exit_status", p.exit_status},
                              {"samples", p.samples}});
  }
  j["threads"] = ordered_json::array();
  for (const auto& t : s.threads) {
    j["threads"].push_back(
        {{"tid", t.tid}, {"pid", t.pid}, {"name", t.name}, {"samples", t.samples}});
  }
  j["problems"] = ordered_json::array();
  for (const auto& p : s.problems) {
    j["problems"].push_back({{"kind", p.kind}, {"count", p.count}, {"example", p.example}});
  }
  // Windows the recording does not know (2.11), when it has any.
  for (const auto& g : s.gaps) {
    j["gaps"].push_back({{"cause", g.cause}, {"gaps", g.gaps}, {"ns", g.ns}, {"count", g.count}});
  }
  j["notes"] = s.notes;
  return j;
}

ordered_json OffCpuTotalJson(const analysis::ReportOffCpuTotal& t) {
  return {{"intervals", t.intervals}, {"short", t.shorts}, {"total_ns", t.total_ns}};
}

ordered_json OffCpuJson(const analysis::ReportOffCpu& r) {
  const analysis::OffCpuSummary& o = r.totals;
  ordered_json j = {{"status", o.status},
                    {"min_ns", o.min_ns},
                    {"intervals", o.intervals},
                    {"interval_ns", o.interval_ns},
                    {"cut_at_start", o.cut_at_start},
                    {"cut_at_start_ns", o.cut_at_start_ns},
                    {"cut_at_end", o.cut_at_end},
                    {"cut_at_end_ns", o.cut_at_end_ns},
                    {"no_user_stack", o.no_user_stack},
                    {"short", o.shorts},
                    {"short_ns", o.short_ns},
                    {"total_ns", o.total_ns()}};
  ordered_json states = ordered_json::object();
  for (uint8_t s = 0; s < capture::kOffCpuStateCount; ++s) {
    const analysis::ReportOffCpuTotal& t = r.states[s];
    if (!analysis::ShownOffCpuState(s, t)) continue;
    states[capture::OffCpuStateName(capture::OffCpuState(s))] = OffCpuTotalJson(t);
  }
  j["states"] = states;
  j["threads"] = ordered_json::array();
  for (const auto& t : r.threads) {
    ordered_json row = OffCpuTotalJson(t.total);
    row["tid"] = t.tid;
    row["state"] = capture::OffCpuStateName(t.state);
    j["threads"].push_back(std::move(row));
  }
  j["wakers"] = ordered_json::array();
  for (const auto& tw : r.wakers) {
    ordered_json by = ordered_json::array();
    for (const auto& w : tw.wakers) {
      by.push_back(
          {{"tid", w.tid}, {"name", w.name}, {"count", w.count}, {"total_ns", w.total_ns}});
    }
    j["wakers"].push_back(
        {{"tid", tw.tid}, {"count", tw.count}, {"total_ns", tw.total_ns}, {"wakers", by}});
  }
  return j;
}

ordered_json SyscallsJson(const analysis::ReportSyscalls& t) {
  ordered_json y;
  y["calls"] = t.calls;
  y["errors"] = t.errors;
  y["total_ns"] = t.total_ns;
  y["rows"] = ordered_json::array();
  for (const auto& r : t.rows) {
    y["rows"].push_back({{"syscall", r.name},
                         {"nr", r.nr},
                         {"calls", r.calls},
                         {"errors", r.errors},
                         {"total_ns", r.total_ns},
                         {"mean_ns", r.mean_ns},
                         {"max_ns", r.max_ns}});
  }
  y["slowest"] = ordered_json::array();
  for (const auto& s : t.slowest) {
    ordered_json stack = ordered_json::array();
    for (const analysis::ReportFrame& f : s.stack) stack.push_back(f.name);
    y["slowest"].push_back({{"syscall", s.name},
                            {"tid", s.tid},
                            {"time", s.time},
                            {"duration_ns", s.duration_ns},
                            {"ret", s.ret},
                            {"errno", s.errno_name},
                            {"stack", std::move(stack)}});
  }
  return y;
}

ordered_json ZonesJson(const analysis::ReportZones& z) {
  auto exemplar = [](const analysis::ReportZoneExemplar& e) {
    return ordered_json{{"duration_ns", e.duration_ns},
                        {"tid", e.tid},
                        {"thread", e.thread},
                        {"at_ns", e.at_ns},
                        {"text", analysis::Duration(e.duration_ns)}};
  };
  ordered_json y;
  y["samples"] = z.samples;
  y["samples_inside"] = z.samples_inside;
  y["marks"] = z.marks;
  y["label_records"] = z.label_records;
  y["counter_records"] = z.counter_records;
  y["rows"] = ordered_json::array();
  for (const auto& r : z.rows) {
    y["rows"].push_back({{"zone", r.name},
                         {"file", r.file},
                         {"line", r.line},
                         {"count", r.count},
                         {"total_ns", r.total_ns},
                         {"self_ns", r.self_ns},
                         {"mean_ns", r.mean_ns},
                         {"p50", exemplar(r.p50)},
                         {"p90", exemplar(r.p90)},
                         {"p99", exemplar(r.p99)},
                         {"max", exemplar(r.max)},
                         {"open_at_end", r.open_at_end},
                         {"unmatched_ends", r.unmatched_ends},
                         {"samples", r.samples},
                         {"sample_percent", r.sample_percent},
                         {"off_cpu_ns", r.off_cpu_ns},
                         {"off_cpu_intervals", r.off_cpu_intervals}});
  }
  return y;
}

ordered_json ThreadsJson(const std::vector<analysis::ReportThread>& threads) {
  ordered_json out = ordered_json::array();
  for (const auto& t : threads) {
    ordered_json row = {{"tid", t.tid},          {"pid", t.pid},
                        {"name", t.name},        {"samples", t.cost.samples},
                        {"value", t.cost.value}, {"percent", t.cost.percent}};
    if (!t.isolate.empty()) row["isolate"] = t.isolate;
    if (t.gil_labeled > 0) {
      row["gil"] = {{"labeled_samples", t.gil_labeled},
                    {"held_samples", t.gil_held},
                    {"held_percent", t.GilHeldPercent()}};
    }
    out.push_back(row);
  }
  return out;
}

ordered_json LanesJson(const analysis::ReportLanes& l) {
  ordered_json lanes = ordered_json::array();
  for (const auto& lane : l.lanes) {
    ordered_json lj = {{"tid", lane.tid},
                       {"pid", lane.pid},
                       {"name", lane.name},
                       {"total", lane.total},
                       {"buckets", lane.buckets}};
    if (lane.off_cpu_ns > 0) {
      lj["off_cpu_ns"] = lane.off_cpu_ns;
      ordered_json per = ordered_json::object();
      for (uint8_t s = 0; s < capture::kOffCpuStateCount; ++s) {
        if (!lane.off_cpu[s].empty())
          per[capture::OffCpuStateName(capture::OffCpuState(s))] = lane.off_cpu[s];
      }
      lj["off_cpu"] = std::move(per);
    }
    if (!lane.zones.empty()) {
      lj["zones"] = lane.zones;
      lj["events"] = lane.events;
    }
    if (!lane.gaps.empty()) lj["gaps"] = lane.gaps;
    lanes.push_back(std::move(lj));
  }
  ordered_json out = {{"start_ns", l.start}, {"bucket_ns", l.bucket_ns}, {"lanes", lanes}};
  if (!l.processes.empty()) {
    ordered_json processes = ordered_json::array();
    for (const analysis::ReportLane& p : l.processes)
      processes.push_back(
          {{"pid", p.pid}, {"name", p.name}, {"total", p.total}, {"buckets", p.buckets}});
    out["processes"] = std::move(processes);
  }
  if (!l.zone_names.empty()) out["zone_names"] = l.zone_names;
  if (!l.trace_lanes.empty()) {
    ordered_json tracks = ordered_json::array();
    for (const analysis::TraceLane& t : l.trace_lanes) {
      ordered_json counters = ordered_json::array();
      for (double v : t.counter_max)
        counters.push_back(std::isnan(v) ? ordered_json() : ordered_json(v));
      tracks.push_back({{"trace", t.trace},
                        {"track", t.track},
                        {"name", t.name},
                        {"kind", capture::TraceTrackKindName(t.kind)},
                        {"pid", t.pid},
                        {"tid", t.tid},
                        {"spans", t.spans},
                        {"instants", t.instants},
                        {"values", t.values},
                        {"covered", t.covered},
                        {"instant_counts", t.instant_counts},
                        {"counter_max", std::move(counters)}});
    }
    out["trace_tracks"] = std::move(tracks);
  }
  if (!l.own_axis_traces.empty()) out["own_axis_traces"] = l.own_axis_traces;
  if (!l.gap_rows.empty()) {
    // Windows the recording does not know: times as the lanes' (ns).
    if (!l.gaps.empty()) out["gaps"] = l.gaps;
    ordered_json rows = ordered_json::array();
    for (const capture::Gap& g : l.gap_rows) {
      ordered_json row = {{"begin_ns", g.begin},
                          {"end_ns", g.end},
                          {"cause", capture::GapCauseName(g.cause)},
                          {"count", g.count}};
      if (g.pid != 0) row["pid"] = g.pid;
      if (g.tid != 0) row["tid"] = g.tid;
      if (g.cpu >= 0) row["cpu"] = g.cpu;
      rows.push_back(std::move(row));
    }
    out["gap_rows"] = std::move(rows);
  }
  return out;
}

ordered_json TracesJson(const analysis::ReportTraces& t, bool spans) {
  ordered_json sources = ordered_json::array();
  for (const analysis::ReportTraceSource& s : t.sources) {
    ordered_json j = {{"path", s.path},
                      {"format", s.format},
                      {"tool", s.tool},
                      {"clock", s.clock},
                      {"clock_note", s.clock_note}};
    j["uncertainty_ns"] = s.uncertainty_ns ? ordered_json(*s.uncertainty_ns) : ordered_json();
    j["events"] = s.events;
    j["tracks"] = s.tracks;
    j["mapped_tracks"] = s.mapped_tracks;
    j["flows"] = s.flows;
    j["skipped"] = s.skipped;
    j["notes"] = s.notes;
    sources.push_back(std::move(j));
  }
  ordered_json out = {{"sources", std::move(sources)}};
  if (spans) {
    ordered_json rows = ordered_json::array();
    for (const analysis::ReportSpanRow& r : t.spans) {
      rows.push_back({{"trace", r.trace},
                      {"name", r.name},
                      {"track", r.track},
                      {"count", r.count},
                      {"total_ns", r.total_ns},
                      {"mean_ns", r.mean_ns},
                      {"p50_ns", r.p50_ns},
                      {"p90_ns", r.p90_ns},
                      {"p99_ns", r.p99_ns},
                      {"max_ns", r.max_ns},
                      {"samples", r.samples},
                      {"sample_percent", r.sample_percent}});
    }
    out["spans"] = std::move(rows);
  }
  return out;
}

ordered_json SourceJson(const analysis::ReportSource& s) {
  ordered_json files = ordered_json::array();
  for (const analysis::ReportSourceFile& f : s.files) {
    ordered_json lines = ordered_json::array();
    for (const analysis::ReportSourceLine& l : f.lines) {
      lines.push_back({{"line", l.line}, {"self", CostJson(l.self)}, {"total", CostJson(l.total)}});
    }
    ordered_json file = {{"path", f.path}, {"total", CostJson(f.total)}, {"lines", lines}};
    if (f.unreadable.empty()) {
      file["first"] = f.first;
      file["text"] = f.text;
    } else {
      file["unreadable"] = f.unreadable;
    }
    files.push_back(std::move(file));
  }
  return {{"function", s.function},
          {"total", CostJson(s.total)},
          {"without_lines", CostJson(s.without_lines)},
          {"files", std::move(files)}};
}

ordered_json AssemblyJson(const analysis::ReportAssembly& a) {
  ordered_json modules = ordered_json::array();
  for (const analysis::ReportAssemblyModule& m : a.modules) {
    ordered_json addresses = ordered_json::array();
    for (const analysis::ReportAddressCost& c : m.addresses) {
      addresses.push_back(
          {{"offset", c.offset}, {"self", CostJson(c.self)}, {"total", CostJson(c.total)}});
    }
    ordered_json module = {{"path", m.path},
                           {"build_id", m.build_id},
                           {"total", CostJson(m.total)},
                           {"addresses", std::move(addresses)}};
    if (!m.unreadable.empty()) {
      module["unreadable"] = m.unreadable;
    } else {
      ordered_json ranges = ordered_json::array();
      for (const analysis::ReportAssemblyRange& r : m.ranges) {
        ordered_json instructions = ordered_json::array();
        for (const analysis::ReportInstruction& i : r.instructions) {
          ordered_json row = {{"address", i.address}, {"size", i.size}, {"text", i.text}};
          if (!i.target.empty()) row["target"] = i.target;
          if (i.total.samples > 0 || i.total.value > 0) {
            row["self"] = CostJson(i.self);
            row["total"] = CostJson(i.total);
          }
          instructions.push_back(std::move(row));
        }
        ranges.push_back({{"symbol", r.symbol},
                          {"start", r.start},
                          {"size", r.size},
                          {"bytes_left_out", r.bytes_left_out},
                          {"instructions", std::move(instructions)}});
      }
      module["ranges"] = std::move(ranges);
      module["outside"] = CostJson(m.outside);
    }
    modules.push_back(std::move(module));
  }
  return {{"function", a.function},
          {"total", CostJson(a.total)},
          {"not_native", CostJson(a.not_native)},
          {"modules", std::move(modules)}};
}

// Runs as [start, end, stack, samples] (ns after the start), stacks as
// name indexes outermost first: some 20 bytes a run.
ordered_json StackChartJson(const analysis::StackChart& c) {
  ordered_json runs = ordered_json::array();
  for (const analysis::StackChartRun& r : c.runs)
    runs.push_back({r.start, r.end, r.stack, r.samples});
  return {{"tid", c.tid},         {"thread", c.thread},       {"samples", c.thread_samples},
          {"threads", c.threads}, {"truncated", c.truncated}, {"runs", std::move(runs)},
          {"stacks", c.stacks},   {"names", c.names},         {"modules", c.modules}};
}

// Markers as [kind, tid, start, end, depth, name, detail] (ns after the start).
ordered_json MarkersJson(const analysis::Markers& m) {
  ordered_json rows = ordered_json::array();
  for (const analysis::Marker& r : m.rows) {
    rows.push_back(
        {analysis::MarkerKindName(r.kind), r.tid, r.start, r.end, r.depth, r.name, r.detail});
  }
  return {{"total", m.total}, {"left_out", m.left_out}, {"rows", std::move(rows)}};
}

// A function's callers and callees, costed as shares of `all`.
ordered_json NeighborsJson(const analysis::Neighbors& n, uint64_t all) {
  auto side = [&](const std::vector<analysis::Neighbor>& rows) {
    ordered_json out = ordered_json::array();
    for (const analysis::Neighbor& r : rows) {
      out.push_back({{"function", r.name},
                     {"module", r.module},
                     {"cost", CostJson(analysis::Share(r.cost, all))}});
    }
    return out;
  };
  return {{"function", n.name},
          {"module", n.module},
          {"self", CostJson(analysis::Share(n.self, all))},
          {"total", CostJson(analysis::Share(n.total, all))},
          {"callers", side(n.callers)},
          {"more_callers", n.more_callers},
          {"callees", side(n.callees)},
          {"more_callees", n.more_callees}};
}

ordered_json DiffJson(const analysis::ReportDiff& d) {
  ordered_json tree = ordered_json::array();
  for (uint32_t r : d.roots) tree.push_back(DiffTreeNodeJson(d, r));
  return {{"metric", d.metric},
          {"unit", d.unit},
          {"base_total", d.base_total},
          {"other_total", d.other_total},
          {"self", DiffTableJson(d.self, true)},
          {"self_rows", d.self.rows.size()},
          {"total", DiffTableJson(d.total, true)},
          {"total_rows", d.total.rows.size()},
          {"paths", DiffTableJson(d.paths, false)},
          {"tree", std::move(tree)},
          {"pruned", d.pruned}};
}

}  // namespace

std::string ReportJson(const ReportModel& m, bool indent, bool drawn_only) {
  ordered_json j;
  j["header"] = SummaryJson(m.header.summary);
  ordered_json lines = ordered_json::array();
  for (const analysis::HeaderLine& l : analysis::HeaderLines(m))
    lines.push_back({{"label", l.label}, {"text", l.text}});
  j["header"]["lines"] = std::move(lines);
  if (m.header.show_off_cpu) j["off_cpu"] = OffCpuJson(m.header.off_cpu);
  if (m.by_state) j["by_state"] = OffCpuJson(*m.by_state);
  if (!m.header.filter_text.empty()) {
    j["filter"] = m.header.filter_text;
    // What the filter kept, as a share of the whole capture.
    const double kept = analysis::KeptPercent(m);
    j["kept"] = {{"percent", kept}, {"text", analysis::Share(kept)}};
  }
  j["all"] = CostJson(m.flat.all);
  if (!drawn_only || m.show_flat || m.tree || m.inverted) {
    j["functions"] = ordered_json::array();
    for (const auto& r : m.flat.rows) j["functions"].push_back(FunctionJson(r));
  }
  if (m.syscalls) j["syscalls"] = SyscallsJson(*m.syscalls);
  if (m.zones) j["zones"] = ZonesJson(*m.zones);
  if (m.traces) j["traces"] = TracesJson(*m.traces, m.show_spans);
  if (m.tree) j["tree"] = TreeJson(*m.tree);
  if (m.inverted) j["inverted"] = TreeJson(*m.inverted);
  if (m.threads) j["threads"] = ThreadsJson(*m.threads);
  if (m.lanes) j["lanes"] = LanesJson(*m.lanes);
  if (m.diff) j["diff"] = DiffJson(*m.diff);
  if (m.source) j["source"] = SourceJson(*m.source);
  if (m.assembly) j["assembly"] = AssemblyJson(*m.assembly);
  if (m.stack_chart) j["stack_chart"] = StackChartJson(*m.stack_chart);
  if (m.neighbors) j["neighbors"] = NeighborsJson(*m.neighbors, m.flat.all.value);
  if (m.markers) j["markers"] = MarkersJson(*m.markers);
  return j.dump(indent ? 1 : -1, ' ', false, ordered_json::error_handler_t::replace);
}

void WriteReportJson(FILE* out, const ReportModel& m) {
  fprintf(out, "%s\n", ReportJson(m).c_str());
}

}  // namespace microscope::formats
