#include "src/cli/report_view.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "base/percent.h"

namespace microscope::cli {
namespace {

using analysis::CallTree;
using analysis::Cost;
using nlohmann::ordered_json;

struct Colors {
  bool on;
  const char* bold() const { return on ? "\033[1m" : ""; }
  const char* dim() const { return on ? "\033[2m" : ""; }
  const char* red() const { return on ? "\033[31m" : ""; }
  const char* green() const { return on ? "\033[32m" : ""; }
  const char* yellow() const { return on ? "\033[33m" : ""; }
  const char* reset() const { return on ? "\033[0m" : ""; }
  // Hot rows stand out: red from 10%, yellow from 1%.
  const char* heat(double percent) const {
    return percent >= 10 ? red() : percent >= 1 ? yellow() : "";
  }
};

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

// " [module]" (dimmed), or nothing for frames known only by name.
std::string ModuleSuffix(const ReportData& d, analysis::KeyId key, const Colors& c) {
  std::string m = d.keys->ModuleName(key);
  if (m.empty()) return "";
  return std::string(" ") + c.dim() + "[" + m + "]" + c.reset();
}

// A duration in the unit that shows it: off-CPU totals run from
// microseconds (short intervals) to minutes.
std::string Ns(uint64_t ns) {
  char buf[32];
  if (ns < 1000000) {
    snprintf(buf, sizeof(buf), "%.1f µs", double(ns) / 1e3);
  } else if (ns < 1000000000) {
    snprintf(buf, sizeof(buf), "%.3f ms", double(ns) / 1e6);
  } else {
    snprintf(buf, sizeof(buf), "%.3f s", double(ns) / 1e9);
  }
  return buf;
}

unsigned long long Ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

// The metric, the off-CPU totals and incomplete intervals, and what each
// BPF part of the recording did (settings.off_cpu, settings.syscalls).
template <typename Label>
void PrintOffCpuHeader(FILE* out, const ReportData& d, const Label& label) {
  const analysis::OffCpuSummary& o = d.off_cpu;
  const capture::Settings& st = d.capture->settings;
  if (o.any() || d.metric != analysis::Metric::kCpu) {
    label("metric");
    fprintf(out, "%s (--metric cpu: CPU samples; offcpu: time off CPU; wall: both, per thread)\n",
            analysis::MetricName(d.metric));
  }
  if (!o.status.empty() || o.any()) {
    label("off-CPU");
    if (!o.status.empty()) fprintf(out, "%s; ", o.status.c_str());
    fprintf(out, "%llu intervals, %s", Ull(o.intervals), Ns(o.interval_ns).c_str());
    if (o.shorts > 0) {
      fprintf(out, "; %llu shorter than %s only counted, %s (no stack)", Ull(o.shorts),
              Ns(o.min_ns).c_str(), Ns(o.short_ns).c_str());
    }
    fprintf(out, "; total %s\n", Ns(o.total_ns()).c_str());
  }
  if (o.cut_at_start > 0 || o.cut_at_end > 0) {
    label("incomplete");
    fprintf(out,
            "%llu already off CPU at the start (%s), %llu still off CPU at the end or "
            "switch-in lost (%s): counted as stored, not stretched\n",
            Ull(o.cut_at_start), Ns(o.cut_at_start_ns).c_str(), Ull(o.cut_at_end),
            Ns(o.cut_at_end_ns).c_str());
  }
  if (o.no_user_stack > 0) {
    label("off-CPU");
    fprintf(out, "%llu intervals without a user stack\n", Ull(o.no_user_stack));
  }
  if (!st.syscalls.empty()) {
    label("syscalls");
    fprintf(out, "%s", st.syscalls.c_str());
    if (st.syscall_stack_min != 0)
      fprintf(out, "; stacks for calls from %s", Ns(st.syscall_stack_min).c_str());
    fprintf(out, "\n");
  }
}

void PrintHeader(FILE* out, const ReportData& d, const ReportViews& v, const Colors& c) {
  const analysis::Summary& s = d.summary;
  auto label = [&](const char* name) { fprintf(out, "%s%-12s%s", c.bold(), name, c.reset()); };
  label("command");
  fprintf(out, "%s\n", Join(s.command).c_str());
  label("mode");
  fprintf(out, "%s, pid %d\n", s.mode.c_str(), s.target_pid);
  label("processes");
  fprintf(out, "%zu:", s.processes.size());
  for (const auto& p : s.processes) {
    fprintf(out, " %d %s", p.pid, p.command.c_str());
    if (p.exit_status >= 0) fprintf(out, " (exit %d)", p.exit_status);
    fprintf(out, ";");
  }
  fprintf(out, "\n");
  label("threads");
  fprintf(out, "%zu:", s.threads.size());
  const size_t kShownThreads = 8;
  for (size_t i = 0; i < s.threads.size() && i < kShownThreads; ++i) {
    const auto& t = s.threads[i];
    fprintf(out, " %s (tid %d) %llu;", t.name.c_str(), t.tid,
            static_cast<unsigned long long>(t.samples));
  }
  if (s.threads.size() > kShownThreads) fprintf(out, " ... (--threads lists all)");
  fprintf(out, "\n");
  label("duration");
  fprintf(out, "%s\n", FormatValue(s.duration_ns, "nanoseconds").c_str());
  const bool off_metric = d.metric == analysis::Metric::kOffCpu;
  label(off_metric ? "intervals" : "samples");
  if (s.samples == 0 && s.frequency == 0 && !off_metric) {
    fprintf(out, "none (a recording of BPF parts only)\n");
  } else {
    fprintf(out, "%llu (%s of %s)", static_cast<unsigned long long>(s.samples),
            FormatValue(s.value, s.unit).c_str(), s.metric.c_str());
    if (s.frequency != 0) fprintf(out, " at %u Hz", s.frequency);
    fprintf(out, ", %zu threads\n", s.threads.size());
  }
  PrintOffCpuHeader(out, d, label);
  if (s.samples > 0) {
    label("names");
    fprintf(out, "%.1f%% of %s have fully named stacks (unnamed frames show as module+0xoffset)\n",
            Percent(s.fully_named, s.samples), off_metric ? "intervals" : "samples");
  }
  if (s.symbols == "later") {
    label("symbols");
    fprintf(out, "recorded with --symbolize later: name frames with `microscope symbolize FILE`\n");
  } else if (s.symbols == "symbolize") {
    label("symbols");
    fprintf(out, "named by `microscope symbolize` (see notes)\n");
  }
  label("lost");
  fprintf(out, "%llu records, %llu samples; throttled %llu times\n",
          static_cast<unsigned long long>(s.lost_records),
          static_cast<unsigned long long>(s.lost_samples),
          static_cast<unsigned long long>(s.throttles));
  if (!s.call_graph.empty()) {
    label("call graph");
    fprintf(out, "%s", s.call_graph.c_str());
    if (s.stack_copy != 0) fprintf(out, ", %u-byte user stack copy", s.stack_copy);
    fprintf(out, "\n");
  }
  uint64_t complete = s.stack_ends[uint8_t(capture::StackEnd::kComplete)];
  uint64_t fp = s.stack_ends[uint8_t(capture::StackEnd::kFramePointerEnd)];
  if (s.samples > 0 && complete + fp < s.samples) {
    // How many stacks CFI proved whole, and why the others ended early.
    label("stack quality");
    fprintf(out, " %.1f%% complete, %llu ended early\n", Percent(complete, s.samples),
            static_cast<unsigned long long>(s.samples - complete - fp));
  }
  label("stacks");
  bool first = true;
  for (uint8_t e = 0; e < capture::kStackEndCount; ++e) {
    if (s.stack_ends[e] == 0) continue;
    fprintf(out, "%s%llu %s", first ? "" : ", ", static_cast<unsigned long long>(s.stack_ends[e]),
            capture::StackEndName(capture::StackEnd(e)));
    first = false;
  }
  fprintf(out, "%s; kernel frames %s\n", first ? "none" : "", s.kernel_frames ? "on" : "off");
  label("problems");
  if (s.problems.empty()) fprintf(out, "none\n");
  for (size_t i = 0; i < s.problems.size(); ++i) {
    const auto& p = s.problems[i];
    fprintf(out, "%s%llu x %s (e.g. %s)\n", i == 0 ? "" : "            ",
            static_cast<unsigned long long>(p.count), p.kind.c_str(), p.example.c_str());
  }
  for (const std::string& n : s.notes) {
    label("note");
    fprintf(out, "%s\n", n.c_str());
  }
  if (!v.filter_text.empty()) {
    label("filter");
    fprintf(out, "%s: %llu samples (%s) kept\n", v.filter_text.c_str(),
            static_cast<unsigned long long>(d.flat.all.samples),
            FormatValue(d.flat.all.value, s.unit).c_str());
  }
}

void PrintFlat(FILE* out, const ReportData& d, const ReportViews& v, const Colors& c,
               bool by_total) {
  std::vector<const analysis::FlatRow*> rows;
  for (const auto& r : d.flat.rows) rows.push_back(&r);
  if (by_total) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto* a, const auto* b) { return a->total.value > b->total.value; });
  }
  const uint64_t all = d.flat.all.value;
  fprintf(out, "\n%s%s%s\n", c.bold(),
          by_total ? "Hottest functions by total time (self + callees)"
                   : "Hottest functions by self time",
          c.reset());
  fprintf(out, "%7s %8s %7s %8s  %s\n", "self%", "self", "total%", "total", "function [module]");
  for (size_t i = 0; i < rows.size() && i < v.top; ++i) {
    const auto& r = *rows[i];
    if ((by_total ? r.total.samples : r.self.samples) == 0) break;
    double sp = Percent(r.self.value, all), tp = Percent(r.total.value, all);
    fprintf(out, "%s%6.2f%%%s %8llu %s%6.2f%%%s %8llu  %s%s\n", c.heat(sp), sp, c.reset(),
            static_cast<unsigned long long>(r.self.samples), c.heat(tp), tp, c.reset(),
            static_cast<unsigned long long>(r.total.samples), d.keys->Name(r.key).c_str(),
            ModuleSuffix(d, r.key, c).c_str());
  }
}

void PrintTreeNode(FILE* out, const ReportData& d, const CallTree& tree, const ReportViews& v,
                   const Colors& c, uint32_t i, int depth) {
  const auto& n = tree.nodes[i];
  double total = Percent(n.total.value, tree.all.value);
  if (total < v.min_percent) return;
  double self = Percent(n.self.value, tree.all.value);
  fprintf(out, "%s%6.2f%%%s %6.2f%%  %*s%s%s\n", c.heat(total), total, c.reset(), self, depth * 2,
          "", d.keys->Name(n.key).c_str(), ModuleSuffix(d, n.key, c).c_str());
  for (uint32_t child : n.children) PrintTreeNode(out, d, tree, v, c, child, depth + 1);
}

void PrintTree(FILE* out, const ReportData& d, const CallTree& tree, const ReportViews& v,
               const Colors& c) {
  fprintf(out, "\n%s%s (below %.2f%% pruned)%s\n", c.bold(),
          tree.inverted ? "Inverted call tree (sampled functions first, then their callers)"
                        : "Call tree (callers first)",
          v.min_percent, c.reset());
  fprintf(out, "%7s %7s  %s\n", "total%", "self%", "function [module]");
  for (uint32_t r : tree.roots) PrintTreeNode(out, d, tree, v, c, r, 0);
}

void PrintThreads(FILE* out, const ReportData& d, const Colors& c) {
  fprintf(out, "\n%sThreads%s\n", c.bold(), c.reset());
  fprintf(out, "%7s %8s %12s  %8s %8s  %s\n", "share", "samples", "value", "pid", "tid", "name");
  for (const auto& t : d.threads) {
    double p = Percent(t.value, d.flat.all.value);
    fprintf(out, "%s%6.2f%%%s %8llu %12s  %8d %8d  %s\n", c.heat(p), p, c.reset(),
            static_cast<unsigned long long>(t.samples),
            FormatValue(t.value, d.summary.unit).c_str(), t.pid, t.tid, t.name.c_str());
  }
}

void PrintLanes(FILE* out, const ReportData& d, const ReportViews& v, const Colors& c) {
  const analysis::Lanes& lanes = *d.lanes;
  static const char* kLevels[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  // Off CPU, per analysis::LaneCell: sleeping, uninterruptible, preempted, other.
  static const char* kBlocked[] = {"-", "=", "~", "?"};
  uint32_t peak = 1;
  bool any_off = false;
  for (const auto& lane : lanes.lanes) {
    for (uint32_t b : lane.buckets) peak = std::max(peak, b);
    any_off = any_off || lane.off_cpu_ns > 0;
  }
  fprintf(out, "\n%sThread lanes%s (%zu columns of %s; darker: more samples, peak %u)\n", c.bold(),
          c.reset(), lanes.bucket_count, FormatValue(lanes.bucket_ns, "nanoseconds").c_str(), peak);
  if (any_off) {
    fprintf(out,
            "off CPU for more than half a column, or all its time with no samples: - sleeping, "
            "= uninterruptible, ~ preempted, ? other; blank: neither; right: samples, off-CPU "
            "time\n");
  }
  for (const auto& lane : lanes.lanes) {
    const capture::Thread& t = d.capture->threads[lane.thread];
    std::string name = d.capture->str(t.name) + " " + std::to_string(t.tid);
    fprintf(out, "%-22.22s |", name.c_str());
    for (size_t i = 0; i < lane.buckets.size(); ++i) {
      analysis::LaneCell cell = analysis::CellOf(lanes, lane, i);
      if (cell == analysis::LaneCell::kOnCpu || cell == analysis::LaneCell::kEmpty) {
        uint32_t b = lane.buckets[i];
        int level = b == 0 ? 0 : 1 + int(std::lround(7.0 * double(b) / double(peak)));
        fputs(kLevels[std::min(level, 8)], out);
      } else {
        fprintf(out, "%s%s%s", c.dim(),
                kBlocked[uint8_t(cell) - uint8_t(analysis::LaneCell::kSleeping)], c.reset());
      }
    }
    fprintf(out, "| %llu", static_cast<unsigned long long>(lane.total));
    if (any_off) fprintf(out, ", %s", Ns(lane.off_cpu_ns).c_str());
    fprintf(out, "\n");
  }
  (void)v;
}

std::string ThreadName(const capture::Capture& cap, capture::ThreadId t) {
  return cap.str(cap.threads[t].name) + " (" + std::to_string(cap.threads[t].tid) + ")";
}

void PrintByState(FILE* out, const ReportData& d, const ReportViews& v, const Colors& c) {
  const analysis::OffCpuSummary& o = *d.by_state;
  const uint64_t all = o.total_ns();
  fprintf(out, "\n%sOff-CPU time by state%s: %s in %llu intervals and %llu short ones\n", c.bold(),
          c.reset(), Ns(all).c_str(), Ull(o.intervals), Ull(o.shorts));
  fprintf(out, "%7s %12s %10s %10s  %s\n", "share", "time", "intervals", "short", "state");
  for (uint8_t s = 0; s < capture::kOffCpuStateCount; ++s) {
    const analysis::OffCpuStateTotal& t = o.by_state[s];
    double p = Percent(t.total_ns, all);
    fprintf(out, "%s%6.2f%%%s %12s %10llu %10llu  %s\n", c.heat(p), p, c.reset(),
            Ns(t.total_ns).c_str(), Ull(t.intervals), Ull(t.shorts),
            capture::OffCpuStateName(capture::OffCpuState(s)));
  }
  fprintf(out, "\n%sOff-CPU time per thread and state%s\n", c.bold(), c.reset());
  fprintf(out, "%7s %12s %10s %10s  %-16s %s\n", "share", "time", "intervals", "short", "state",
          "thread");
  for (size_t i = 0; i < o.by_thread_state.size() && i < v.top; ++i) {
    const analysis::OffCpuThreadState& r = o.by_thread_state[i];
    double p = Percent(r.total.total_ns, all);
    fprintf(out, "%s%6.2f%%%s %12s %10llu %10llu  %-16s %s\n", c.heat(p), p, c.reset(),
            Ns(r.total.total_ns).c_str(), Ull(r.total.intervals), Ull(r.total.shorts),
            capture::OffCpuStateName(r.state), ThreadName(*d.capture, r.thread).c_str());
  }
  if (o.wakers.empty()) return;
  fprintf(out, "\n%sWho woke each thread%s (stored intervals, not preempted ones)\n", c.bold(),
          c.reset());
  for (size_t i = 0; i < o.wakers.size() && i < v.top; ++i) {
    const analysis::ThreadWakers& tw = o.wakers[i];
    fprintf(out, "%s: %llu wakeups after %s off CPU\n", ThreadName(*d.capture, tw.thread).c_str(),
            Ull(tw.count), Ns(tw.total_ns).c_str());
    for (const analysis::Waker& w : tw.wakers) {
      std::string who = w.tid == 0
                            ? "(unknown)"
                            : (w.name.empty() ? "?" : w.name) + " (" + std::to_string(w.tid) + ")";
      fprintf(out, "  %12s %8llu  %s\n", Ns(w.total_ns).c_str(), Ull(w.count), who.c_str());
    }
  }
}

void PrintDiffRows(FILE* out, const std::vector<analysis::DiffRow>& rows, const ReportViews& v,
                   const Colors& c, const char* title, bool with_module) {
  fprintf(out, "\n%s%s%s\n", c.bold(), title, c.reset());
  fprintf(out, "%8s %8s %9s  %s\n", "base%", "other%", "delta",
          with_module ? "function [module]" : "path");
  size_t shown = 0;
  for (const auto& r : rows) {
    if (shown == v.top) break;
    double delta = 100 * r.delta();
    if (std::fabs(delta) < 0.005) break;
    ++shown;
    fprintf(out, "%7.2f%% %7.2f%% %s%+8.2f%%%s  %s", 100 * r.base_share, 100 * r.other_share,
            delta > 0 ? c.red() : c.green(), delta, c.reset(), r.name.c_str());
    if (with_module) fprintf(out, " %s[%s]%s", c.dim(), r.module.c_str(), c.reset());
    fprintf(out, "\n");
  }
  if (shown == 0) fprintf(out, "(no differences)\n");
}

ordered_json CostJson(const Cost& c, uint64_t all) {
  return {{"samples", c.samples}, {"value", c.value}, {"percent", Percent(c.value, all)}};
}

ordered_json TreeJson(const ReportData& d, const CallTree& tree, uint32_t i, double min_percent) {
  const auto& n = tree.nodes[i];
  ordered_json node = {{"function", d.keys->Name(n.key)},
                       {"module", d.keys->ModuleName(n.key)},
                       {"self", CostJson(n.self, tree.all.value)},
                       {"total", CostJson(n.total, tree.all.value)}};
  ordered_json children = ordered_json::array();
  for (uint32_t c : n.children) {
    if (Percent(tree.nodes[c].total.value, tree.all.value) >= min_percent) {
      children.push_back(TreeJson(d, tree, c, min_percent));
    }
  }
  node["children"] = std::move(children);
  return node;
}

ordered_json TreeRootsJson(const ReportData& d, const CallTree& tree, double min_percent) {
  ordered_json roots = ordered_json::array();
  for (uint32_t r : tree.roots) {
    if (Percent(tree.nodes[r].total.value, tree.all.value) >= min_percent) {
      roots.push_back(TreeJson(d, tree, r, min_percent));
    }
  }
  return roots;
}

ordered_json DiffRowsJson(const std::vector<analysis::DiffRow>& rows, bool with_module) {
  ordered_json out = ordered_json::array();
  for (const auto& r : rows) {
    ordered_json j = {{"name", r.name}};
    if (with_module) j["module"] = r.module;
    j["base_value"] = r.base_value;
    j["other_value"] = r.other_value;
    j["base_share"] = r.base_share;
    j["other_share"] = r.other_share;
    j["delta"] = r.delta();
    out.push_back(std::move(j));
  }
  return out;
}

ordered_json SummaryJson(const analysis::Summary& s) {
  ordered_json j;
  j["command"] = s.command;
  j["mode"] = s.mode;
  j["target_pid"] = s.target_pid;
  j["frequency"] = s.frequency;
  j["call_graph"] = s.call_graph;
  j["stack_copy"] = s.stack_copy;
  j["metric"] = s.metric;
  j["unit"] = s.unit;
  j["duration_ns"] = s.duration_ns;
  j["samples"] = s.samples;
  j["value"] = s.value;
  j["fully_named_samples"] = s.fully_named;
  j["symbols"] = s.symbols;
  j["lost_records"] = s.lost_records;
  j["lost_samples"] = s.lost_samples;
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
  j["notes"] = s.notes;
  return j;
}

// Function names, innermost first.
ordered_json StackJson(const ReportData& d, capture::StackId stack) {
  ordered_json out = ordered_json::array();
  for (uint32_t n = stack; n != capture::kNone; n = d.capture->stacks.parent[n]) {
    out.push_back(d.keys->Name(d.keys->KeyOf(d.capture->stacks.frame[n])));
  }
  return out;
}

ordered_json OffCpuJson(const capture::Capture& cap, const analysis::OffCpuSummary& o) {
  auto totals = [](const analysis::OffCpuStateTotal& t) {
    return ordered_json{{"intervals", t.intervals}, {"short", t.shorts}, {"total_ns", t.total_ns}};
  };
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
    states[capture::OffCpuStateName(capture::OffCpuState(s))] = totals(o.by_state[s]);
  }
  j["states"] = states;
  j["threads"] = ordered_json::array();
  for (const auto& r : o.by_thread_state) {
    ordered_json row = totals(r.total);
    row["tid"] = cap.threads[r.thread].tid;
    row["state"] = capture::OffCpuStateName(r.state);
    j["threads"].push_back(std::move(row));
  }
  j["wakers"] = ordered_json::array();
  for (const auto& tw : o.wakers) {
    ordered_json by = ordered_json::array();
    for (const auto& w : tw.wakers) {
      by.push_back(
          {{"tid", w.tid}, {"name", w.name}, {"count", w.count}, {"total_ns", w.total_ns}});
    }
    j["wakers"].push_back({{"tid", cap.threads[tw.thread].tid},
                           {"count", tw.count},
                           {"total_ns", tw.total_ns},
                           {"wakers", by}});
  }
  return j;
}

}  // namespace

std::string FormatValue(uint64_t value, const std::string& unit) {
  char buf[48];
  if (unit == "nanoseconds") {
    snprintf(buf, sizeof(buf), "%.3f s", double(value) / 1e9);
  } else if (unit == "bytes") {
    double v = double(value);
    const char* suffix = "B";
    for (const char* s : {"KiB", "MiB", "GiB"}) {
      if (v < 1024) break;
      v /= 1024;
      suffix = s;
    }
    snprintf(buf, sizeof(buf), "%.1f %s", v, suffix);
  } else if (unit == "count" || unit.empty()) {
    snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(value));
  } else {
    snprintf(buf, sizeof(buf), "%llu %s", static_cast<unsigned long long>(value), unit.c_str());
  }
  return buf;
}

void PrintSyscalls(FILE* out, const ReportData& d, const Colors& c) {
  const analysis::SyscallTable& t = *d.syscalls;
  fprintf(out, "\n%sSystem calls%s: %llu calls, %llu errors, %s in calls\n", c.bold(), c.reset(),
          static_cast<unsigned long long>(t.calls), static_cast<unsigned long long>(t.errors),
          FormatValue(t.total_ns, "nanoseconds").c_str());
  fprintf(out, "%7s %11s %11s %9s %9s  %s\n", "% time", "seconds", "usecs/call", "calls", "errors",
          "syscall");
  for (const analysis::SyscallRow& r : t.rows) {
    fprintf(out, "%7.2f %11.6f %11llu %9llu %9s  %s\n", Percent(r.total_ns, t.total_ns),
            double(r.total_ns) / 1e9, static_cast<unsigned long long>(r.mean_ns() / 1000),
            static_cast<unsigned long long>(r.calls),
            r.errors == 0 ? "" : std::to_string(r.errors).c_str(), r.name.c_str());
  }
  if (t.slowest.empty()) return;
  fprintf(out, "\n%sSlowest calls%s\n %12s %12s  %-24s %-16s %s\n", c.bold(), c.reset(), "duration",
          "at", "thread", "syscall", "result");
  const capture::Capture& cap = *d.capture;
  for (const analysis::SlowCall& s : t.slowest) {
    const capture::Thread& th = cap.threads[s.thread];
    std::string who = cap.str(th.name) + " (" + std::to_string(th.tid) + ")";
    std::string err = analysis::ErrnoName(s.ret);
    std::string result = err.empty() ? std::to_string(s.ret) : "-1 " + err;
    fprintf(out, " %12s %12s  %-24s %-16s %s\n", FormatValue(s.duration_ns, "nanoseconds").c_str(),
            ("+" + FormatValue(s.time - cap.settings.start_time, "nanoseconds")).c_str(),
            who.c_str(), s.name.c_str(), result.c_str());
    // The caller's stack, innermost frame first, as a backtrace reads.
    const size_t kShownFrames = 16;
    size_t depth = 0;
    for (uint32_t n = s.stack; n != capture::kNone; n = cap.stacks.parent[n], ++depth) {
      if (depth == kShownFrames) {
        size_t rest = 0;
        for (; n != capture::kNone; n = cap.stacks.parent[n]) ++rest;
        fprintf(out, "%28s... %zu more frames\n", "", rest);
        break;
      }
      analysis::KeyId k = d.keys->KeyOf(cap.stacks.frame[n]);
      fprintf(out, "%28s%s%s\n", "", d.keys->Name(k).c_str(), ModuleSuffix(d, k, c).c_str());
    }
  }
}

void PrintTextReport(FILE* out, const ReportData& d, const ReportViews& v) {
  Colors c{v.color};
  PrintHeader(out, d, v, c);
  if (d.syscalls) PrintSyscalls(out, d, c);
  if (d.by_state) PrintByState(out, d, v, c);
  bool any = v.flat || v.tree || v.inverted || v.threads || v.lanes || d.diff || v.syscalls;
  if (v.flat || !any) {
    PrintFlat(out, d, v, c, /*by_total=*/false);
    PrintFlat(out, d, v, c, /*by_total=*/true);
  }
  if (d.tree) PrintTree(out, d, *d.tree, v, c);
  if (d.inverted) PrintTree(out, d, *d.inverted, v, c);
  if (v.threads) PrintThreads(out, d, c);
  if (d.lanes) PrintLanes(out, d, v, c);
  if (d.diff) {
    const analysis::DiffResult& diff = *d.diff;
    fprintf(out, "\n%sDifference%s: base %s, other %s of %s (shares of each capture's total)\n",
            c.bold(), c.reset(), FormatValue(diff.base_total, diff.unit).c_str(),
            FormatValue(diff.other_total, diff.unit).c_str(), diff.metric.c_str());
    PrintDiffRows(out, diff.self, v, c, "Self share change per function", true);
    PrintDiffRows(out, diff.total, v, c, "Total share change per function", true);
    PrintDiffRows(out, diff.paths, v, c, "Total share change per call path", false);
  }
}

void PrintJsonReport(FILE* out, const ReportData& d, const ReportViews& v) {
  ordered_json j;
  j["header"] = SummaryJson(d.summary);
  if (d.off_cpu.any() || !d.off_cpu.status.empty())
    j["off_cpu"] = OffCpuJson(*d.capture, d.off_cpu);
  if (d.by_state) j["by_state"] = OffCpuJson(*d.capture, *d.by_state);
  if (!v.filter_text.empty()) j["filter"] = v.filter_text;
  j["all"] = CostJson(d.flat.all, d.flat.all.value);
  j["functions"] = ordered_json::array();
  for (const auto& r : d.flat.rows) {
    j["functions"].push_back({{"function", d.keys->Name(r.key)},
                              {"module", d.keys->ModuleName(r.key)},
                              {"self", CostJson(r.self, d.flat.all.value)},
                              {"total", CostJson(r.total, d.flat.all.value)}});
  }
  if (d.syscalls) {
    const analysis::SyscallTable& t = *d.syscalls;
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
                           {"mean_ns", r.mean_ns()},
                           {"max_ns", r.max_ns}});
    }
    y["slowest"] = ordered_json::array();
    for (const auto& s : t.slowest) {
      const capture::Thread& th = d.capture->threads[s.thread];
      y["slowest"].push_back({{"syscall", s.name},
                              {"tid", th.tid},
                              {"time", s.time},
                              {"duration_ns", s.duration_ns},
                              {"ret", s.ret},
                              {"errno", analysis::ErrnoName(s.ret)},
                              {"stack", StackJson(d, s.stack)}});
    }
    j["syscalls"] = y;
  }
  if (d.tree) j["tree"] = TreeRootsJson(d, *d.tree, v.min_percent);
  if (d.inverted) j["inverted"] = TreeRootsJson(d, *d.inverted, v.min_percent);
  if (v.threads) {
    j["threads"] = ordered_json::array();
    for (const auto& t : d.threads) {
      j["threads"].push_back({{"tid", t.tid},
                              {"pid", t.pid},
                              {"name", t.name},
                              {"samples", t.samples},
                              {"value", t.value},
                              {"percent", Percent(t.value, d.flat.all.value)}});
    }
  }
  if (d.lanes) {
    ordered_json lanes = ordered_json::array();
    for (const auto& lane : d.lanes->lanes) {
      const capture::Thread& t = d.capture->threads[lane.thread];
      ordered_json lj = {{"tid", t.tid},
                         {"name", d.capture->str(t.name)},
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
      lanes.push_back(std::move(lj));
    }
    j["lanes"] = {
        {"start_ns", d.lanes->start}, {"bucket_ns", d.lanes->bucket_ns}, {"lanes", lanes}};
  }
  if (d.diff) {
    j["diff"] = {{"metric", d.diff->metric},
                 {"unit", d.diff->unit},
                 {"base_total", d.diff->base_total},
                 {"other_total", d.diff->other_total},
                 {"self", DiffRowsJson(d.diff->self, true)},
                 {"total", DiffRowsJson(d.diff->total, true)},
                 {"paths", DiffRowsJson(d.diff->paths, false)}};
  }
  fprintf(out, "%s\n", j.dump(1, ' ', false, ordered_json::error_handler_t::replace).c_str());
}

}  // namespace microscope::cli
