#include "src/cli/report_view.h"

#include <algorithm>
#include <cmath>

#include "analysis/presentation.h"
#include "base/hex.h"
#include "base/plural.h"

namespace microscope::cli {
namespace {

using analysis::ReportModel;
using analysis::Share;
using analysis::ShareChange;

// How the text report draws: colors, and the directory the program's own
// source files are shown from (said once, in the header).
struct TextStyle {
  bool on;
  std::string sources;
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

// A header line's name, bold, in a column of its own.
struct Label {
  FILE* out;
  const TextStyle& c;
  void operator()(const char* name) const { fprintf(out, "%s%-12s%s", c.bold(), name, c.reset()); }
};

// " [module]" (dimmed), or nothing for frames known only by name.
// An interpreted function's module is its source path: shown from its
// package on, and shortened from the left (analysis::DisplayPath).
std::string ModuleSuffix(const std::string& module, const TextStyle& c) {
  if (module.empty()) return "";
  return std::string(" ") + c.dim() + "[" + analysis::DisplayPath(module, c.sources) + "]" +
         c.reset();
}

// "name (tid)", as the off-CPU and system call tables name a thread.
std::string ThreadLabel(const std::string& name, int32_t tid) {
  return name + " (" + std::to_string(tid) + ")";
}

unsigned long long Ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

void PrintHeader(FILE* out, const ReportModel& m, const TextStyle& c) {
  Label label{out, c};
  for (const analysis::HeaderLine& line : analysis::HeaderLines(m)) {
    label(line.label.c_str());
    fprintf(out, "%s\n", line.text.c_str());
  }
}

// "function [module]", "line [module]", "address [module]".
std::string RowHeading(const analysis::ReportNouns& n) {
  return n.row + " [module]";
}

void PrintFlat(FILE* out, const analysis::ReportFlat& flat, const analysis::ReportNouns& n,
               const TextStyle& c, bool by_total) {
  // The self and total columns count samples or intervals: the title says which.
  fprintf(out, "\n%sHottest %s by %s time%s (%scounts: %s)\n", c.bold(), n.rows.c_str(),
          by_total ? "total" : "self", c.reset(), by_total ? "self + callees; " : "",
          n.counts.c_str());
  fprintf(out, "%7s %8s %7s %8s  %s\n", "self%", "self", "total%", "total", RowHeading(n).c_str());
  for (uint32_t i : by_total ? flat.by_total : flat.by_self) {
    const analysis::ReportFunction& r = flat.rows[i];
    double sp = r.self.percent, tp = r.total.percent;
    fprintf(out, "%s%7s%s %8llu %s%7s%s %8llu  %s%s\n", c.heat(sp), Share(sp).c_str(), c.reset(),
            Ull(r.self.samples), c.heat(tp), Share(tp).c_str(), c.reset(), Ull(r.total.samples),
            r.name.c_str(), ModuleSuffix(r.module, c).c_str());
  }
}

void PrintTreeNode(FILE* out, const analysis::ReportTree& tree, const TextStyle& c, uint32_t i,
                   int depth) {
  const analysis::ReportFunction& f = tree.nodes[i].function;
  double total = f.total.percent;
  fprintf(out, "%s%7s%s %7s  %*s%s%s\n", c.heat(total), Share(total).c_str(), c.reset(),
          Share(f.self.percent).c_str(), depth * 2, "", f.name.c_str(),
          ModuleSuffix(f.module, c).c_str());
  for (uint32_t child : tree.nodes[i].children) PrintTreeNode(out, tree, c, child, depth + 1);
}

void PrintTree(FILE* out, const analysis::ReportTree& tree, double min_percent,
               const analysis::ReportNouns& n, const TextStyle& c) {
  std::string title = tree.inverted
                          ? "Inverted call tree (sampled " + n.rows + " first, then their callers)"
                          : "Call tree (callers first)";
  fprintf(out, "\n%s%s (below %.2f%% pruned)%s\n", c.bold(), title.c_str(), min_percent, c.reset());
  fprintf(out, "%7s %7s  %s\n", "total%", "self%", RowHeading(n).c_str());
  for (uint32_t r : tree.roots) PrintTreeNode(out, tree, c, r, 0);
}

// The rows a table left out (-n), when it left any out.
void PrintMore(FILE* out, size_t more, const char* noun) {
  if (more > 0)
    fprintf(out, "... %s not shown (-n shows more rows)\n", Counted(more, noun).c_str());
}

void PrintThreads(FILE* out, const std::vector<analysis::ReportThread>& threads, size_t shown,
                  const std::string& unit, const analysis::ReportNouns& n, const TextStyle& c) {
  fprintf(out, "\n%sThreads%s (count: %s)\n", c.bold(), c.reset(), n.counts.c_str());
  // Python threads: the share of their walked samples that held the GIL.
  const bool gil = std::any_of(threads.begin(), threads.end(),
                               [](const analysis::ReportThread& t) { return t.gil_labeled > 0; });
  // JavaScript threads: the number of the V8 isolate each ran.
  const bool isolate =
      std::any_of(threads.begin(), threads.end(),
                  [](const analysis::ReportThread& t) { return !t.isolate.empty(); });
  fprintf(out, "%7s %8s %12s  %8s %8s  %s%s%s\n", "share", "count", "value", "pid", "tid",
          gil ? "   GIL  " : "", isolate ? "isolate " : "", "name");
  for (size_t i = 0; i < shown; ++i) {
    const analysis::ReportThread& t = threads[i];
    double p = t.cost.percent;
    std::string held;
    if (gil) {
      char buf[16];
      if (t.gil_labeled > 0) {
        snprintf(buf, sizeof(buf), "%6.1f%% ", t.GilHeldPercent());
      } else {
        snprintf(buf, sizeof(buf), "%7s ", "-");
      }
      held = buf;
    }
    std::string iso;
    if (isolate) {
      iso = t.isolate.empty() ? "-" : t.isolate;
      iso = std::string(iso.size() < 7 ? 7 - iso.size() : 0, ' ') + iso + " ";
    }
    fprintf(out, "%s%7s%s %8llu %12s  %8d %8d  %s%s%s\n", c.heat(p), Share(p).c_str(), c.reset(),
            Ull(t.cost.samples), analysis::Quantity(t.cost.value, unit).c_str(), t.pid, t.tid,
            held.c_str(), iso.c_str(), t.name.c_str());
  }
  PrintMore(out, threads.size() - shown, "thread");
}

void PrintLanes(FILE* out, const analysis::ReportLanes& lanes, const TextStyle& c) {
  static const char* kLevels[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  // Off CPU, per analysis::LaneCell: sleeping, uninterruptible, preempted, other.
  static const char* kBlocked[] = {"-", "=", "~", "?"};
  fprintf(out, "\n%sThread lanes%s (%zu columns of %s; darker: more samples, peak %u)\n", c.bold(),
          c.reset(), lanes.bucket_count, analysis::Quantity(lanes.bucket_ns, "nanoseconds").c_str(),
          lanes.peak);
  if (lanes.any_off_cpu) {
    fprintf(out,
            "off CPU for more than half a column, or all its time with no samples: - sleeping, "
            "= uninterruptible, ~ preempted, ? other; blank: neither; right: samples, off-CPU "
            "time\n");
  }
  for (size_t l = 0; l < lanes.shown; ++l) {
    const analysis::ReportLane& lane = lanes.lanes[l];
    std::string name = lane.name + " " + std::to_string(lane.tid);
    fprintf(out, "%-22.22s |", name.c_str());
    for (size_t i = 0; i < lane.buckets.size(); ++i) {
      analysis::LaneCell cell = lane.cells[i];
      if (cell == analysis::LaneCell::kOnCpu || cell == analysis::LaneCell::kEmpty) {
        uint32_t b = lane.buckets[i];
        int level = b == 0 ? 0 : 1 + int(std::lround(7.0 * double(b) / double(lanes.peak)));
        fputs(kLevels[std::min(level, 8)], out);
      } else {
        fprintf(out, "%s%s%s", c.dim(),
                kBlocked[uint8_t(cell) - uint8_t(analysis::LaneCell::kSleeping)], c.reset());
      }
    }
    fprintf(out, "| %llu", Ull(lane.total));
    if (lanes.any_off_cpu) fprintf(out, ", %s", analysis::Duration(lane.off_cpu_ns).c_str());
    fprintf(out, "\n");
    if (lane.zones.find_first_not_of(' ') != std::string::npos)
      fprintf(out, "%-22s |%s|\n", "  zones", lane.zones.c_str());
    if (lane.events.find_first_not_of(' ') != std::string::npos)
      fprintf(out, "%-22s |%s|\n", "  marks, labels", lane.events.c_str());
    if (lane.gaps.find_first_not_of(' ') != std::string::npos)
      fprintf(out, "%-22s |%s|\n", "  gaps", lane.gaps.c_str());
  }
  if (lanes.gaps.find_first_not_of(' ') != std::string::npos)
    fprintf(out, "%-22s |%s|\n", "gaps (every process)", lanes.gaps.c_str());
  if (!lanes.gap_rows.empty()) {
    fprintf(out,
            "gaps: not known, not idle: L lost records, T throttled, B budget (1 in N kept), "
            "W walker not yet on, S segment missing, A not yet attached\n");
  }
  PrintMore(out, lanes.lanes.size() - lanes.shown, "lane");
  if (!lanes.trace_lanes.empty()) {
    fprintf(out,
            "imported tracks (other tools' traces: darker, more of the column inside a span; "
            "| instants; counters: their largest value in the column)\n");
    // Counters by their own largest value.
    for (const analysis::TraceLane& t : lanes.trace_lanes) {
      double top = 0;
      for (double v : t.counter_max) {
        if (!std::isnan(v)) top = std::max(top, v);
      }
      fprintf(out, "%-22.22s |", t.name.c_str());
      for (size_t i = 0; i < t.covered.size(); ++i) {
        if (t.covered[i] > 0) {
          fputs(kLevels[std::clamp(1 + int(std::lround(7.0 * t.covered[i])), 1, 8)], out);
        } else if (t.instant_counts[i] > 0) {
          fputs("|", out);
        } else if (!std::isnan(t.counter_max[i])) {
          const double v = t.counter_max[i];
          fputs(
              kLevels[top > 0 && v > 0 ? std::clamp(1 + int(std::lround(7.0 * v / top)), 1, 8) : 1],
              out);
        } else {
          fputs(" ", out);
        }
      }
      fprintf(out, "| ");
      if (t.spans > 0) fprintf(out, "%llu spans ", Ull(t.spans));
      if (t.instants > 0) fprintf(out, "%llu instants ", Ull(t.instants));
      if (t.values > 0) fprintf(out, "%llu values, max %g ", Ull(t.values), top);
      if (t.tid != 0) {
        fprintf(out, "(thread %d)", t.tid);
      } else if (t.pid != 0) {
        fprintf(out, "(process %d)", t.pid);
      }
      fprintf(out, "\n");
    }
  }
  for (const std::string& path : lanes.own_axis_traces) {
    fprintf(out,
            "%s: on its own axis, not drawn against this recording's time (import it with "
            "--anchor, --offset or --clock to place it)\n",
            path.c_str());
  }
  if (!lanes.zone_names.empty()) {
    fprintf(out, "zones (the innermost that held most of a column):");
    for (size_t i = 0; i < lanes.zone_names.size(); ++i)
      fprintf(out, "%s %c %s", i == 0 ? "" : ",", char('a' + i), lanes.zone_names[i].c_str());
    fprintf(out, "%s; marks, labels: | a mark, * a label set, # both\n",
            lanes.zone_names.size() >= 26 ? ", + others" : "");
  }
}

void PrintWakers(FILE* out, const analysis::ReportOffCpu& o, const TextStyle& c) {
  if (o.wakers.empty()) return;
  fprintf(out, "\n%sWho woke each thread%s (stored intervals, not preempted ones)\n", c.bold(),
          c.reset());
  for (size_t i = 0; i < o.shown_wakers; ++i) {
    const analysis::ReportWakers& tw = o.wakers[i];
    fprintf(out, "%s: %llu wakeups after %s off CPU\n", ThreadLabel(tw.name, tw.tid).c_str(),
            Ull(tw.count), analysis::Duration(tw.total_ns).c_str());
    for (const analysis::Waker& w : tw.wakers) {
      std::string who =
          w.tid == 0 ? "(unknown)" : ThreadLabel(w.name.empty() ? "?" : w.name, w.tid);
      fprintf(out, "  %12s %8llu  %s\n", analysis::Duration(w.total_ns).c_str(), Ull(w.count),
              who.c_str());
    }
  }
}

void PrintByState(FILE* out, const analysis::ReportOffCpu& o, const TextStyle& c) {
  fprintf(out, "\n%sOff-CPU time by state%s: %s in %llu intervals and %llu short ones\n", c.bold(),
          c.reset(), analysis::Duration(o.totals.total_ns()).c_str(), Ull(o.totals.intervals),
          Ull(o.totals.shorts));
  fprintf(out, "%7s %12s %10s %10s  %s\n", "share", "time", "intervals", "short", "state");
  for (uint8_t s = 0; s < capture::kOffCpuStateCount; ++s) {
    const analysis::ReportOffCpuTotal& t = o.states[s];
    if (!analysis::ShownOffCpuState(s, t)) continue;
    fprintf(out, "%s%7s%s %12s %10llu %10llu  %s\n", c.heat(t.percent), Share(t.percent).c_str(),
            c.reset(), analysis::Duration(t.total_ns).c_str(), Ull(t.intervals), Ull(t.shorts),
            capture::OffCpuStateName(capture::OffCpuState(s)));
  }
  fprintf(out, "\n%sOff-CPU time per thread and state%s\n", c.bold(), c.reset());
  fprintf(out, "%7s %12s %10s %10s  %-16s %s\n", "share", "time", "intervals", "short", "state",
          "thread");
  for (size_t i = 0; i < o.shown_threads; ++i) {
    const analysis::ReportOffCpuThread& r = o.threads[i];
    double p = r.total.percent;
    fprintf(out, "%s%7s%s %12s %10llu %10llu  %-16s %s\n", c.heat(p), Share(p).c_str(), c.reset(),
            analysis::Duration(r.total.total_ns).c_str(), Ull(r.total.intervals),
            Ull(r.total.shorts), capture::OffCpuStateName(r.state),
            ThreadLabel(r.name, r.tid).c_str());
  }
  PrintWakers(out, o, c);
}

void PrintDiffRows(FILE* out, const analysis::ReportDiffTable& table, const TextStyle& c,
                   const std::string& title, const std::string& row_heading) {
  const bool with_module = row_heading != "path";
  fprintf(out, "\n%s%s%s\n", c.bold(), title.c_str(), c.reset());
  fprintf(out, "%8s %8s %9s  %s\n", "base%", "other%", "delta", row_heading.c_str());
  for (size_t i = 0; i < table.shown; ++i) {
    const analysis::DiffRow& r = table.rows[i];
    double delta = 100 * r.delta();
    fprintf(out, "%8s %8s %s%9s%s  %s", Share(100 * r.base_share).c_str(),
            Share(100 * r.other_share).c_str(), delta > 0 ? c.red() : c.green(),
            ShareChange(delta).c_str(), c.reset(), r.name.c_str());
    if (with_module) fprintf(out, "%s", ModuleSuffix(r.module, c).c_str());
    fprintf(out, "\n");
  }
  if (table.shown == 0) fprintf(out, "(no differences)\n");
}

void PrintDiff(FILE* out, const analysis::ReportDiff& diff, const analysis::ReportNouns& n,
               const TextStyle& c) {
  fprintf(out, "\n%sDifference%s: base %s, other %s of %s (shares of each capture's total)\n",
          c.bold(), c.reset(), analysis::Quantity(diff.base_total, diff.unit).c_str(),
          analysis::Quantity(diff.other_total, diff.unit).c_str(), diff.metric.c_str());
  PrintDiffRows(out, diff.self, c, "Self share change per " + n.row, RowHeading(n));
  PrintDiffRows(out, diff.total, c, "Total share change per " + n.row, RowHeading(n));
  PrintDiffRows(out, diff.paths, c, "Total share change per call path", "path");
}

// The caller's stack, innermost frame first, as a backtrace reads.
void PrintCallStack(FILE* out, const std::vector<analysis::ReportFrame>& stack,
                    const TextStyle& c) {
  const size_t kShownFrames = 16;
  for (size_t depth = 0; depth < stack.size(); ++depth) {
    if (depth == kShownFrames) {
      fprintf(out, "%28s... %zu more frames\n", "", stack.size() - depth);
      break;
    }
    fprintf(out, "%28s%s%s\n", "", stack[depth].name.c_str(),
            ModuleSuffix(stack[depth].module, c).c_str());
  }
}

void PrintSyscalls(FILE* out, const analysis::ReportSyscalls& t, const TextStyle& c) {
  fprintf(out, "\n%sSystem calls%s: %llu calls, %llu errors, %s in calls\n", c.bold(), c.reset(),
          Ull(t.calls), Ull(t.errors), analysis::Quantity(t.total_ns, "nanoseconds").c_str());
  fprintf(out, "%7s %11s %11s %9s %9s  %s\n", "% time", "seconds", "usecs/call", "calls", "errors",
          "syscall");
  for (const analysis::ReportSyscallRow& r : t.rows) {
    fprintf(out, "%7.2f %11.6f %11llu %9llu %9s  %s\n", r.percent, double(r.total_ns) / 1e9,
            Ull(r.mean_ns / 1000), Ull(r.calls),
            r.errors == 0 ? "" : std::to_string(r.errors).c_str(), r.name.c_str());
  }
  if (t.slowest.empty()) return;
  fprintf(out, "\n%sSlowest calls%s\n %12s %12s  %-24s %-16s %s\n", c.bold(), c.reset(), "duration",
          "at", "thread", "syscall", "result");
  for (const analysis::ReportSlowCall& s : t.slowest) {
    std::string result = s.errno_name.empty() ? std::to_string(s.ret) : "-1 " + s.errno_name;
    fprintf(out, " %12s %12s  %-24s %-16s %s\n",
            analysis::Quantity(s.duration_ns, "nanoseconds").c_str(),
            ("+" + analysis::Quantity(s.since_start_ns, "nanoseconds")).c_str(),
            ThreadLabel(s.thread_name, s.tid).c_str(), s.name.c_str(), result.c_str());
    PrintCallStack(out, s.stack, c);
  }
}

void PrintZones(FILE* out, const analysis::ReportZones& z, const TextStyle& c) {
  auto d = [](uint64_t ns) { return analysis::Duration(ns); };
  fprintf(out, "\n%sZones%s: %zu zones; %llu of %llu samples inside one", c.bold(), c.reset(),
          z.rows.size(), Ull(z.samples_inside), Ull(z.samples));
  if (z.marks + z.label_records + z.counter_records > 0) {
    fprintf(out, "; %llu marks, %llu label and %llu counter records", Ull(z.marks),
            Ull(z.label_records), Ull(z.counter_records));
  }
  fprintf(out, "\n");
  if (z.rows.empty()) {
    fprintf(out, "(no zones: the program recorded none, or was not recorded with --probes)\n");
    return;
  }
  fprintf(out, "%7s %11s %11s %10s %10s %10s %10s %8s %11s  %s\n", "count", "total", "self", "p50",
          "p90", "p99", "max", "samples", "off-cpu", "zone");
  for (size_t i = 0; i < z.shown; ++i) {
    const analysis::ReportZoneRow& r = z.rows[i];
    std::string name = r.name;
    if (r.open_at_end + r.unmatched_ends > 0) {
      name += " (+" + std::to_string(r.open_at_end) + " open at end, " +
              std::to_string(r.unmatched_ends) + " ends without a begin)";
    }
    fprintf(out, "%7llu %11s %11s %10s %10s %10s %10s %8llu %11s  %s\n", Ull(r.count),
            d(r.total_ns).c_str(), d(r.self_ns).c_str(), d(r.p50.duration_ns).c_str(),
            d(r.p90.duration_ns).c_str(), d(r.p99.duration_ns).c_str(),
            d(r.max.duration_ns).c_str(), Ull(r.samples), d(r.off_cpu_ns).c_str(), name.c_str());
  }
  fprintf(out, "\n%sLongest occurrences%s\n %12s %12s  %-24s %s\n", c.bold(), c.reset(), "duration",
          "at", "thread", "zone");
  for (size_t i = 0; i < z.shown; ++i) {
    const analysis::ReportZoneRow& r = z.rows[i];
    if (r.count == 0) continue;
    fprintf(out, " %12s %12s  %-24s %s\n", d(r.max.duration_ns).c_str(),
            ("+" + d(r.max.at_ns)).c_str(), ThreadLabel(r.max.thread, r.max.tid).c_str(),
            r.name.c_str());
  }
}

// Imported traces' spans by name (report --spans).
void PrintSpans(FILE* out, const analysis::ReportTraces& t, const TextStyle& c) {
  auto d = [](uint64_t ns) { return analysis::Duration(ns); };
  fprintf(out, "\n%sImported spans%s: %zu names in %zu traces\n", c.bold(), c.reset(),
          t.spans.size(), t.sources.size());
  for (size_t i = 0; i < t.sources.size(); ++i) {
    const analysis::ReportTraceSource& s = t.sources[i];
    fprintf(out, "[%zu] %s: %s\n", i + 1, s.path.c_str(), s.clock_note.c_str());
    for (const std::string& n : s.notes) fprintf(out, "    note: %s\n", n.c_str());
  }
  if (t.spans.empty()) {
    fprintf(out, "(no spans: the traces hold only instants and counters)\n");
    return;
  }
  fprintf(out, "%7s %11s %10s %10s %10s %10s %10s %8s %7s  %s\n", "count", "total", "mean", "p50",
          "p90", "p99", "max", "samples", "share", "span");
  for (size_t i = 0; i < t.shown; ++i) {
    const analysis::ReportSpanRow& r = t.spans[i];
    std::string name = r.name.empty() ? "(unnamed)" : r.name;
    if (t.sources.size() > 1) name = "[" + std::to_string(r.trace + 1) + "] " + name;
    fprintf(out, "%7llu %11s %10s %10s %10s %10s %10s %8llu %7s  %s  %s%s%s\n", Ull(r.count),
            d(r.total_ns).c_str(), d(r.mean_ns).c_str(), d(r.p50_ns).c_str(), d(r.p90_ns).c_str(),
            d(r.p99_ns).c_str(), d(r.max_ns).c_str(), Ull(r.samples),
            Share(r.sample_percent).c_str(), name.c_str(), c.dim(), r.track.c_str(), c.reset());
  }
  PrintMore(out, t.spans.size() - t.shown, "span name");
}

}  // namespace

// A function's source lines with their costs (as perf annotate, by line):
// each file the capture names for it, the lines around the costed ones.
void PrintSource(FILE* out, const analysis::ReportSource& s, const analysis::ReportNouns& n,
                 const TextStyle& c) {
  fprintf(out, "\n%sSource of %s%s: %llu %s (%s)", c.bold(), s.function.c_str(), c.reset(),
          Ull(s.total.samples), n.counts.c_str(), Share(s.total.percent).c_str());
  if (s.without_lines.samples > 0)
    fprintf(out, ", %llu at no source line", Ull(s.without_lines.samples));
  fprintf(out, "\n");
  if (s.files.empty()) fprintf(out, "(no source lines: recorded without them, or no debug info)\n");
  for (const analysis::ReportSourceFile& f : s.files) {
    fprintf(out, "\n%s%s%s (%s)\n%7s %7s %6s\n", c.bold(), f.path.c_str(), c.reset(),
            Share(f.total.percent).c_str(), "self%", "total%", "line");
    auto costs = f.lines.begin();
    auto row = [&](uint32_t line, const char* text) {
      while (costs != f.lines.end() && costs->line < line) ++costs;
      if (costs != f.lines.end() && costs->line == line) {
        double tp = costs->total.percent;
        fprintf(out, "%7s %s%7s%s %6u  %s\n", Share(costs->self.percent).c_str(), c.heat(tp),
                Share(tp).c_str(), c.reset(), line, text);
      } else {
        fprintf(out, "%7s %7s %6u  %s\n", "", "", line, text);
      }
    };
    if (!f.unreadable.empty()) {
      fprintf(out, "(%s)\n", f.unreadable.c_str());
      for (const analysis::ReportSourceLine& l : f.lines) row(l.line, "");
      continue;
    }
    for (size_t i = 0; i < f.text.size(); ++i) row(f.first + uint32_t(i), f.text[i].c_str());
  }
}

// A function's machine code with its costs (as perf annotate): each
// module's symbols holding the sampled addresses, instruction by
// instruction, with a direct call's or jump's target named.
void PrintAssembly(FILE* out, const analysis::ReportAssembly& a, const analysis::ReportNouns& n,
                   const TextStyle& c) {
  fprintf(out, "\n%sAssembly of %s%s: %llu %s (%s)", c.bold(), a.function.c_str(), c.reset(),
          Ull(a.total.samples), n.counts.c_str(), Share(a.total.percent).c_str());
  if (a.not_native.samples > 0)
    fprintf(out, ", %llu in no module's machine code", Ull(a.not_native.samples));
  fprintf(out, "\n");
  if (a.modules.empty()) fprintf(out, "(no machine code: its frames are inlined or interpreted)\n");
  for (const analysis::ReportAssemblyModule& m : a.modules) {
    fprintf(out, "\n%s%s%s (%s)\n", c.bold(), m.path.c_str(), c.reset(),
            Share(m.total.percent).c_str());
    if (!m.unreadable.empty()) {
      fprintf(out, "(%s)\n%7s %7s %18s\n", m.unreadable.c_str(), "self%", "total%", "offset");
      for (const analysis::ReportAddressCost& r : m.addresses) {
        fprintf(out, "%7s %7s %18s\n", Share(r.self.percent).c_str(),
                Share(r.total.percent).c_str(), HexAddress(r.offset).c_str());
      }
      continue;
    }
    if (m.outside.samples > 0)
      fprintf(out, "(%llu %s at addresses no symbol shown holds)\n", Ull(m.outside.samples),
              n.counts.c_str());
    for (const analysis::ReportAssemblyRange& r : m.ranges) {
      fprintf(out, "%s <%s> (%llu bytes)\n%7s %7s %10s\n", HexAddress(r.start).c_str(),
              r.symbol.c_str(), Ull(r.size), "self%", "total%", "address");
      for (const analysis::ReportInstruction& i : r.instructions) {
        std::string text = i.text + (i.target.empty() ? "" : " <" + i.target + ">");
        if (i.total.samples > 0 || i.total.value > 0) {
          fprintf(out, "%7s %s%7s%s %10llx:  %s\n", Share(i.self.percent).c_str(),
                  c.heat(i.total.percent), Share(i.total.percent).c_str(), c.reset(),
                  Ull(i.address), text.c_str());
        } else {
          fprintf(out, "%7s %7s %10llx:  %s\n", "", "", Ull(i.address), text.c_str());
        }
      }
      if (r.bytes_left_out > 0)
        fprintf(out, "(%llu bytes more not shown)\n", Ull(r.bytes_left_out));
    }
  }
}

void PrintTextReport(FILE* out, const ReportModel& m, bool color) {
  TextStyle c{color};
  std::vector<std::string_view> modules;
  for (const analysis::ReportFunction& r : m.flat.rows) modules.push_back(r.module);
  c.sources = analysis::ProgramSources(modules);
  PrintHeader(out, m, c);
  if (!c.sources.empty()) {
    Label{out, c}("sources");
    fprintf(out, "the program's own files are shown from %s\n", c.sources.c_str());
  }
  if (m.syscalls) PrintSyscalls(out, *m.syscalls, c);
  if (m.zones) PrintZones(out, *m.zones, c);
  if (m.show_spans) {
    if (m.traces) {
      PrintSpans(out, *m.traces, c);
    } else {
      fprintf(out,
              "\n%sImported spans%s: none (the capture holds no imported trace: microscope "
              "import)\n",
              c.bold(), c.reset());
    }
  }
  if (m.by_state) PrintByState(out, *m.by_state, c);
  if (m.show_flat) {
    PrintFlat(out, m.flat, m.nouns, c, /*by_total=*/false);
    PrintFlat(out, m.flat, m.nouns, c, /*by_total=*/true);
  }
  if (m.tree) PrintTree(out, *m.tree, m.min_percent, m.nouns, c);
  if (m.inverted) PrintTree(out, *m.inverted, m.min_percent, m.nouns, c);
  if (m.threads) PrintThreads(out, *m.threads, m.shown_threads, m.header.summary.unit, m.nouns, c);
  if (m.lanes) PrintLanes(out, *m.lanes, c);
  if (m.diff) PrintDiff(out, *m.diff, m.nouns, c);
  if (m.source) PrintSource(out, *m.source, m.nouns, c);
  if (m.assembly) PrintAssembly(out, *m.assembly, m.nouns, c);
}

}  // namespace microscope::cli
