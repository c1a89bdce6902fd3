#include "src/cli/report_view.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace microscope::cli {
namespace {

using analysis::CallTree;
using analysis::Cost;
using nlohmann::ordered_json;

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * double(part) / double(whole);
}

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
  label("samples");
  fprintf(out, "%llu (%s of %s)", static_cast<unsigned long long>(s.samples),
          FormatValue(s.value, s.unit).c_str(), s.metric.c_str());
  if (s.frequency != 0) fprintf(out, " at %u Hz", s.frequency);
  fprintf(out, ", %zu threads\n", s.threads.size());
  label("names");
  fprintf(out,
          "%.1f%% of samples have fully named stacks (unnamed frames show as module+0xoffset)\n",
          Percent(s.fully_named, s.samples));
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
  uint32_t peak = 1;
  for (const auto& lane : lanes.lanes) {
    for (uint32_t b : lane.buckets) peak = std::max(peak, b);
  }
  fprintf(out, "\n%sThread lanes%s (%zu columns of %s; darker: more samples, peak %u)\n", c.bold(),
          c.reset(), lanes.bucket_count, FormatValue(lanes.bucket_ns, "nanoseconds").c_str(), peak);
  for (const auto& lane : lanes.lanes) {
    const capture::Thread& t = d.capture->threads[lane.thread];
    std::string name = d.capture->str(t.name) + " " + std::to_string(t.tid);
    fprintf(out, "%-22.22s |", name.c_str());
    for (uint32_t b : lane.buckets) {
      int level = b == 0 ? 0 : 1 + int(std::lround(7.0 * double(b) / double(peak)));
      fputs(kLevels[std::min(level, 8)], out);
    }
    fprintf(out, "| %llu\n", static_cast<unsigned long long>(lane.total));
  }
  (void)v;
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
    fprintf(out, "%7.2f %11.6f %11llu %9llu %9s  %s\n",
            t.total_ns == 0 ? 0.0 : 100.0 * double(r.total_ns) / double(t.total_ns),
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
  }
}

void PrintTextReport(FILE* out, const ReportData& d, const ReportViews& v) {
  Colors c{v.color};
  PrintHeader(out, d, v, c);
  if (d.syscalls) PrintSyscalls(out, d, c);
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
                              {"errno", analysis::ErrnoName(s.ret)}});
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
      lanes.push_back({{"tid", t.tid},
                       {"name", d.capture->str(t.name)},
                       {"total", lane.total},
                       {"buckets", lane.buckets}});
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
