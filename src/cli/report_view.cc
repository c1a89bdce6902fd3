#include "src/cli/report_view.h"

#include <algorithm>
#include <cmath>

#include "base/plural.h"

namespace microscope::cli {
namespace {

using analysis::ReportModel;

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

// A header line's name, bold, in a column of its own.
struct Label {
  FILE* out;
  const Colors& c;
  void operator()(const char* name) const { fprintf(out, "%s%-12s%s", c.bold(), name, c.reset()); }
};

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

// " [module]" (dimmed), or nothing for frames known only by name.
std::string ModuleSuffix(const std::string& module, const Colors& c) {
  if (module.empty()) return "";
  return std::string(" ") + c.dim() + "[" + module + "]" + c.reset();
}

// "name (tid)", as the off-CPU and system call tables name a thread.
std::string ThreadLabel(const std::string& name, int32_t tid) {
  return name + " (" + std::to_string(tid) + ")";
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
// event source of the recording did (its settings.sources entry).
void PrintOffCpuHeader(FILE* out, const analysis::ReportHeader& h, const Label& label) {
  const analysis::OffCpuSummary& o = h.off_cpu.totals;
  if (h.show_metric) {
    label("metric");
    fprintf(out, "%s (--metric cpu: CPU samples; offcpu: time off CPU; wall: both, per thread)\n",
            analysis::MetricName(h.metric));
  }
  if (h.show_off_cpu) {
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
  if (!h.syscalls.empty()) {
    label("syscalls");
    fprintf(out, "%s", h.syscalls.c_str());
    if (h.syscall_stack_min != 0)
      fprintf(out, "; stacks for calls from %s", Ns(h.syscall_stack_min).c_str());
    fprintf(out, "\n");
  }
}

// What ran, for how long, and what was sampled.
void PrintRunHeader(FILE* out, const analysis::ReportHeader& h, const Label& label) {
  const analysis::Summary& s = h.summary;
  label("command");
  fprintf(out, "%s\n", Join(s.command).c_str());
  label("mode");
  fprintf(out, "%s, pid %d\n", s.mode.c_str(), s.target_pid);
  label("processes");
  fprintf(out, "%zu:", s.processes.size());
  const size_t kCommandWidth = 40;  // a compiler's command line runs to pages
  for (uint32_t i : h.shown_processes) {
    const auto& p = s.processes[i];
    std::string command = p.command.size() <= kCommandWidth
                              ? p.command
                              : p.command.substr(0, kCommandWidth - 3) + "...";
    fprintf(out, " %d %s", p.pid, command.c_str());
    if (p.exit_status >= 0) fprintf(out, " (exit %d)", p.exit_status);
    fprintf(out, ";");
  }
  if (s.processes.size() > h.shown_processes.size())
    fprintf(out, " ... and %zu more (--json lists all)",
            s.processes.size() - h.shown_processes.size());
  fprintf(out, "\n");
  label("threads");
  fprintf(out, "%zu:", s.threads.size());
  const size_t kShownThreads = 8;  // one terminal line
  for (size_t i = 0; i < s.threads.size() && i < kShownThreads; ++i) {
    const auto& t = s.threads[i];
    fprintf(out, " %s (tid %d) %llu;", t.name.c_str(), t.tid, Ull(t.samples));
  }
  if (s.threads.size() > kShownThreads) fprintf(out, " ... (--threads lists all)");
  fprintf(out, "\n");
  label("duration");
  fprintf(out, "%s\n", FormatValue(s.duration_ns, "nanoseconds").c_str());
  const bool off_metric = h.metric == analysis::Metric::kOffCpu;
  label(off_metric ? "intervals" : "samples");
  if (s.samples == 0 && s.frequency == 0 && !off_metric) {
    fprintf(out, "none (a recording of BPF parts only)\n");
  } else {
    fprintf(out, "%llu (%s of %s)", Ull(s.samples), FormatValue(s.value, s.unit).c_str(),
            s.metric.c_str());
    if (s.frequency != 0) fprintf(out, " at %u Hz", s.frequency);
    fprintf(out, ", %s\n", Counted(s.threads.size(), "thread").c_str());
  }
}

// How well stacks were named and unwound, and what was lost.
void PrintStackHeader(FILE* out, const analysis::ReportHeader& h, const Label& label) {
  const analysis::Summary& s = h.summary;
  if (s.samples > 0) {
    label("names");
    fprintf(out, "%.1f%% of %s have fully named stacks (unnamed frames show as module+0xoffset)\n",
            h.named_percent, h.metric == analysis::Metric::kOffCpu ? "intervals" : "samples");
  }
  if (s.symbols == "later") {
    label("symbols");
    fprintf(out, "recorded with --symbolize later: name frames with `microscope symbolize FILE`\n");
  } else if (s.symbols == "symbolize") {
    label("symbols");
    fprintf(out, "named by `microscope symbolize` (see notes)\n");
  }
  label("lost");
  fprintf(out, "%llu records", Ull(s.lost_records));
  if (s.lost_records > 0 && s.lost_task_records) {
    // Which ring lost them says what the loss costs.
    uint64_t tasks = std::min(*s.lost_task_records, s.lost_records);
    fprintf(out, " (%llu of samples, %llu of mappings, processes and threads%s)",
            Ull(s.lost_records - tasks), Ull(tasks),
            tasks > 0 ? ": frames in a lost mapping stay unnamed" : "");
  }
  if (s.ring_lost_records && s.kernel_lost_records) {
    // The perf rings' LOST records against the kernel's own count of them.
    const uint64_t ring = *s.ring_lost_records, kernel = *s.kernel_lost_records;
    const char* of = ring == s.lost_records ? "" : " from the perf rings";
    if (kernel == ring && ring > 0) {
      fprintf(out, ", %llu%s as the kernel's own count says", Ull(ring), of);
    } else if (kernel > ring) {
      // Losses after which nothing more reached a ring have no LOST record.
      fprintf(out, "; the kernel counted %llu lost%s (%llu after the last record a ring took)",
              Ull(kernel), of, Ull(kernel - ring));
    } else if (kernel < ring) {
      fprintf(out, "; the kernel counted only %llu lost%s", Ull(kernel), of);
    }
  }
  fprintf(out, ", %llu samples; throttled %llu times\n", Ull(s.lost_samples), Ull(s.throttles));
  if (!s.call_graph.empty()) {
    label("call graph");
    fprintf(out, "%s", s.call_graph.c_str());
    if (s.stack_copy != 0) fprintf(out, ", %u-byte user stack copy", s.stack_copy);
    fprintf(out, "\n");
  }
  if (h.ended_early > 0) {
    // How many stacks CFI proved whole, and why the others ended early.
    label("stack quality");
    fprintf(out, " %.1f%% complete, %llu ended early\n", h.complete_percent, Ull(h.ended_early));
  }
  label("stacks");
  bool first = true;
  for (uint8_t e = 0; e < capture::kStackEndCount; ++e) {
    if (s.stack_ends[e] == 0) continue;
    fprintf(out, "%s%llu %s", first ? "" : ", ", Ull(s.stack_ends[e]),
            capture::StackEndName(capture::StackEnd(e)));
    first = false;
  }
  fprintf(out, "%s; kernel frames %s\n", first ? "none" : "", h.kernel_frames.c_str());
}

void PrintHeader(FILE* out, const ReportModel& m, const Colors& c) {
  const analysis::ReportHeader& h = m.header;
  const analysis::Summary& s = h.summary;
  Label label{out, c};
  PrintRunHeader(out, h, label);
  PrintOffCpuHeader(out, h, label);
  PrintStackHeader(out, h, label);
  label("problems");
  if (s.problems.empty()) fprintf(out, "none\n");
  for (size_t i = 0; i < s.problems.size(); ++i) {
    const auto& p = s.problems[i];
    fprintf(out, "%s%llu x %s (e.g. %s)\n", i == 0 ? "" : "            ", Ull(p.count),
            p.kind.c_str(), p.example.c_str());
  }
  for (const std::string& n : s.notes) {
    label("note");
    fprintf(out, "%s\n", n.c_str());
  }
  if (!h.filter_text.empty()) {
    label("filter");
    fprintf(out, "%s: %llu %s (%s) kept\n", h.filter_text.c_str(), Ull(m.flat.all.samples),
            m.nouns.counts.c_str(), FormatValue(m.flat.all.value, s.unit).c_str());
  }
}

// "function [module]", "line [module]", "address [module]".
std::string RowHeading(const analysis::ReportNouns& n) {
  return n.row + " [module]";
}

void PrintFlat(FILE* out, const analysis::ReportFlat& flat, const analysis::ReportNouns& n,
               const Colors& c, bool by_total) {
  // The self and total columns count samples or intervals: the title says which.
  fprintf(out, "\n%sHottest %s by %s time%s (%scounts: %s)\n", c.bold(), n.rows.c_str(),
          by_total ? "total" : "self", c.reset(), by_total ? "self + callees; " : "",
          n.counts.c_str());
  fprintf(out, "%7s %8s %7s %8s  %s\n", "self%", "self", "total%", "total", RowHeading(n).c_str());
  for (uint32_t i : by_total ? flat.by_total : flat.by_self) {
    const analysis::ReportFunction& r = flat.rows[i];
    double sp = r.self.percent, tp = r.total.percent;
    fprintf(out, "%s%6.2f%%%s %8llu %s%6.2f%%%s %8llu  %s%s\n", c.heat(sp), sp, c.reset(),
            Ull(r.self.samples), c.heat(tp), tp, c.reset(), Ull(r.total.samples), r.name.c_str(),
            ModuleSuffix(r.module, c).c_str());
  }
}

void PrintTreeNode(FILE* out, const analysis::ReportTree& tree, const Colors& c, uint32_t i,
                   int depth) {
  const analysis::ReportFunction& f = tree.nodes[i].function;
  double total = f.total.percent;
  fprintf(out, "%s%6.2f%%%s %6.2f%%  %*s%s%s\n", c.heat(total), total, c.reset(), f.self.percent,
          depth * 2, "", f.name.c_str(), ModuleSuffix(f.module, c).c_str());
  for (uint32_t child : tree.nodes[i].children) PrintTreeNode(out, tree, c, child, depth + 1);
}

void PrintTree(FILE* out, const analysis::ReportTree& tree, double min_percent,
               const analysis::ReportNouns& n, const Colors& c) {
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
                  const std::string& unit, const analysis::ReportNouns& n, const Colors& c) {
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
    fprintf(out, "%s%6.2f%%%s %8llu %12s  %8d %8d  %s%s%s\n", c.heat(p), p, c.reset(),
            Ull(t.cost.samples), FormatValue(t.cost.value, unit).c_str(), t.pid, t.tid,
            held.c_str(), iso.c_str(), t.name.c_str());
  }
  PrintMore(out, threads.size() - shown, "thread");
}

void PrintLanes(FILE* out, const analysis::ReportLanes& lanes, const Colors& c) {
  static const char* kLevels[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  // Off CPU, per analysis::LaneCell: sleeping, uninterruptible, preempted, other.
  static const char* kBlocked[] = {"-", "=", "~", "?"};
  fprintf(out, "\n%sThread lanes%s (%zu columns of %s; darker: more samples, peak %u)\n", c.bold(),
          c.reset(), lanes.bucket_count, FormatValue(lanes.bucket_ns, "nanoseconds").c_str(),
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
    if (lanes.any_off_cpu) fprintf(out, ", %s", Ns(lane.off_cpu_ns).c_str());
    fprintf(out, "\n");
  }
  PrintMore(out, lanes.lanes.size() - lanes.shown, "lane");
}

void PrintWakers(FILE* out, const analysis::ReportOffCpu& o, const Colors& c) {
  if (o.wakers.empty()) return;
  fprintf(out, "\n%sWho woke each thread%s (stored intervals, not preempted ones)\n", c.bold(),
          c.reset());
  for (size_t i = 0; i < o.shown_wakers; ++i) {
    const analysis::ReportWakers& tw = o.wakers[i];
    fprintf(out, "%s: %llu wakeups after %s off CPU\n", ThreadLabel(tw.name, tw.tid).c_str(),
            Ull(tw.count), Ns(tw.total_ns).c_str());
    for (const analysis::Waker& w : tw.wakers) {
      std::string who =
          w.tid == 0 ? "(unknown)" : ThreadLabel(w.name.empty() ? "?" : w.name, w.tid);
      fprintf(out, "  %12s %8llu  %s\n", Ns(w.total_ns).c_str(), Ull(w.count), who.c_str());
    }
  }
}

void PrintByState(FILE* out, const analysis::ReportOffCpu& o, const Colors& c) {
  fprintf(out, "\n%sOff-CPU time by state%s: %s in %llu intervals and %llu short ones\n", c.bold(),
          c.reset(), Ns(o.totals.total_ns()).c_str(), Ull(o.totals.intervals),
          Ull(o.totals.shorts));
  fprintf(out, "%7s %12s %10s %10s  %s\n", "share", "time", "intervals", "short", "state");
  for (uint8_t s = 0; s < capture::kOffCpuStateCount; ++s) {
    const analysis::ReportOffCpuTotal& t = o.states[s];
    fprintf(out, "%s%6.2f%%%s %12s %10llu %10llu  %s\n", c.heat(t.percent), t.percent, c.reset(),
            Ns(t.total_ns).c_str(), Ull(t.intervals), Ull(t.shorts),
            capture::OffCpuStateName(capture::OffCpuState(s)));
  }
  fprintf(out, "\n%sOff-CPU time per thread and state%s\n", c.bold(), c.reset());
  fprintf(out, "%7s %12s %10s %10s  %-16s %s\n", "share", "time", "intervals", "short", "state",
          "thread");
  for (size_t i = 0; i < o.shown_threads; ++i) {
    const analysis::ReportOffCpuThread& r = o.threads[i];
    double p = r.total.percent;
    fprintf(out, "%s%6.2f%%%s %12s %10llu %10llu  %-16s %s\n", c.heat(p), p, c.reset(),
            Ns(r.total.total_ns).c_str(), Ull(r.total.intervals), Ull(r.total.shorts),
            capture::OffCpuStateName(r.state), ThreadLabel(r.name, r.tid).c_str());
  }
  PrintWakers(out, o, c);
}

void PrintDiffRows(FILE* out, const analysis::ReportDiffTable& table, const Colors& c,
                   const std::string& title, const std::string& row_heading) {
  const bool with_module = row_heading != "path";
  fprintf(out, "\n%s%s%s\n", c.bold(), title.c_str(), c.reset());
  fprintf(out, "%8s %8s %9s  %s\n", "base%", "other%", "delta", row_heading.c_str());
  for (size_t i = 0; i < table.shown; ++i) {
    const analysis::DiffRow& r = table.rows[i];
    double delta = 100 * r.delta();
    fprintf(out, "%7.2f%% %7.2f%% %s%+8.2f%%%s  %s", 100 * r.base_share, 100 * r.other_share,
            delta > 0 ? c.red() : c.green(), delta, c.reset(), r.name.c_str());
    if (with_module) fprintf(out, " %s[%s]%s", c.dim(), r.module.c_str(), c.reset());
    fprintf(out, "\n");
  }
  if (table.shown == 0) fprintf(out, "(no differences)\n");
}

void PrintDiff(FILE* out, const analysis::ReportDiff& diff, const analysis::ReportNouns& n,
               const Colors& c) {
  fprintf(out, "\n%sDifference%s: base %s, other %s of %s (shares of each capture's total)\n",
          c.bold(), c.reset(), FormatValue(diff.base_total, diff.unit).c_str(),
          FormatValue(diff.other_total, diff.unit).c_str(), diff.metric.c_str());
  PrintDiffRows(out, diff.self, c, "Self share change per " + n.row, RowHeading(n));
  PrintDiffRows(out, diff.total, c, "Total share change per " + n.row, RowHeading(n));
  PrintDiffRows(out, diff.paths, c, "Total share change per call path", "path");
}

// The caller's stack, innermost frame first, as a backtrace reads.
void PrintCallStack(FILE* out, const std::vector<analysis::ReportFrame>& stack, const Colors& c) {
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

void PrintSyscalls(FILE* out, const analysis::ReportSyscalls& t, const Colors& c) {
  fprintf(out, "\n%sSystem calls%s: %llu calls, %llu errors, %s in calls\n", c.bold(), c.reset(),
          Ull(t.calls), Ull(t.errors), FormatValue(t.total_ns, "nanoseconds").c_str());
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
    fprintf(out, " %12s %12s  %-24s %-16s %s\n", FormatValue(s.duration_ns, "nanoseconds").c_str(),
            ("+" + FormatValue(s.since_start_ns, "nanoseconds")).c_str(),
            ThreadLabel(s.thread_name, s.tid).c_str(), s.name.c_str(), result.c_str());
    PrintCallStack(out, s.stack, c);
  }
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
    snprintf(buf, sizeof(buf), "%llu", Ull(value));
  } else {
    snprintf(buf, sizeof(buf), "%llu %s", Ull(value), unit.c_str());
  }
  return buf;
}

void PrintTextReport(FILE* out, const ReportModel& m, bool color) {
  Colors c{color};
  PrintHeader(out, m, c);
  if (m.syscalls) PrintSyscalls(out, *m.syscalls, c);
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
}

}  // namespace microscope::cli
