#include "analysis/presentation.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <optional>

#include "base/clock.h"
#include "base/percent.h"
#include "base/plural.h"

namespace microscope::analysis {
namespace {

// printf onto the end of `out`.
__attribute__((format(printf, 2, 3))) void Appendf(std::string& out, const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  char buf[256];
  int n = std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  if (n < 0) {
    va_end(again);
    return;
  }
  if (size_t(n) < sizeof(buf)) {
    out.append(buf, size_t(n));
  } else {
    std::string big(size_t(n) + 1, '\0');
    std::vsnprintf(big.data(), big.size(), format, again);
    out.append(big.data(), size_t(n));
  }
  va_end(again);
}

unsigned long long Ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

// Lines under construction: Line("duration") starts one, and what is
// appended goes to it.
struct Lines {
  std::vector<HeaderLine> lines;
  std::string& Line(const char* label) {
    lines.push_back({label, ""});
    return lines.back().text;
  }
};

// The budget the recorder kept to, and each change it made to keep to it.
void BudgetLines(const Summary& s, Lines& l) {
  if (s.budget_ppm == 0) return;
  std::string& b = l.Line("budget");
  Appendf(b, "%.2f%% of one CPU for the recorder itself", s.budget_ppm / 1e4);
  for (const capture::SourceSetting& src : s.sources) {
    if (src.name != capture::kBudgetSource || src.Value("wall_ns") == 0) continue;
    Appendf(b, "; measured %.2f%% over the recording", src.Value("share_ppm") / 1e4);
    for (const auto& [key, value] : src.values) {
      if (key == "steady_share_ppm") Appendf(b, ", %.2f%% from its fourth second", value / 1e4);
    }
  }
  Appendf(b, "; %s", Counted(s.budget_steps.size(), "change").c_str());
  const size_t kShown = 12;
  for (size_t i = 0; i < s.budget_steps.size() && i < kShown; ++i) {
    const capture::BudgetStep& st = s.budget_steps[i];
    const uint64_t at = st.time > s.start_time ? st.time - s.start_time : 0;
    Appendf(l.Line(""), "at %s: level %u, %u Hz, %u-byte stacks (measured %.2f%%: %s)",
            Quantity(at, "nanoseconds").c_str(), st.level, st.frequency, st.stack_copy,
            st.measured_ppm / 1e4, st.reason.c_str());
  }
  if (s.budget_steps.size() > kShown) {
    Appendf(l.Line(""), "... and %zu more (--json lists all)", s.budget_steps.size() - kShown);
  }
}

// What ran, for how long, and what was sampled.
void RunLines(const ReportHeader& h, Lines& l) {
  const Summary& s = h.summary;
  l.Line("command") = Join(s.command);
  if (s.mode == "import") {
    Appendf(l.Line("mode"), "import, recorded by %s", s.recorder.c_str());
  } else {
    Appendf(l.Line("mode"), "%s, pid %d", s.mode.c_str(), s.target_pid);
  }
  std::string& processes = l.Line("processes");
  Appendf(processes, "%zu:", s.processes.size());
  const size_t kCommandWidth = 40;  // a compiler's command line runs to pages
  for (uint32_t i : h.shown_processes) {
    const auto& p = s.processes[i];
    std::string command = p.command.size() <= kCommandWidth
                              ? p.command
                              : p.command.substr(0, kCommandWidth - 3) + "...";
    Appendf(processes, " %d %s", p.pid, command.c_str());
    if (p.exit_status >= 0) Appendf(processes, " (exit %d)", p.exit_status);
    processes += ";";
  }
  if (s.processes.size() > h.shown_processes.size())
    Appendf(processes, " ... and %zu more (--json lists all)",
            s.processes.size() - h.shown_processes.size());
  std::string& threads = l.Line("threads");
  Appendf(threads, "%zu:", s.threads.size());
  const size_t kShownThreads = 8;  // one terminal line
  for (size_t i = 0; i < s.threads.size() && i < kShownThreads; ++i) {
    const auto& t = s.threads[i];
    Appendf(threads, " %s (tid %d) %llu;", t.name.c_str(), t.tid, Ull(t.samples));
  }
  if (s.threads.size() > kShownThreads) threads += " ... (--threads lists all)";
  l.Line("duration") = Quantity(s.duration_ns, "nanoseconds");
  if (s.realtime_start) l.Line("started") = UtcText(*s.realtime_start);
  if (s.part == "segment") {
    Appendf(l.Line("part"), "segment %llu of a continuous recording (%s)", Ull(s.part_index),
            s.recording_id.c_str());
  } else if (s.part == "snapshot") {
    Appendf(l.Line("part"), "snapshot %llu, taken while recording (%s)", Ull(s.part_index),
            s.recording_id.c_str());
  } else if (s.part == "window") {
    Appendf(l.Line("part"), "the window a rolling recording held at its end (%s)",
            s.recording_id.c_str());
  } else if (s.part == "segments") {
    Appendf(l.Line("part"), "%s of a continuous recording, read as one",
            Counted(s.part_index, "segment").c_str());
  }
  BudgetLines(s, l);
  const bool off_metric = h.metric == Metric::kOffCpu;
  std::string& samples = l.Line(off_metric ? "intervals" : "samples");
  if (s.samples == 0 && s.frequency == 0 && !off_metric) {
    samples = "none (a recording of BPF parts only)";
  } else {
    Appendf(samples, "%llu (%s of %s)", Ull(s.samples), Quantity(s.value, s.unit).c_str(),
            s.metric.c_str());
    if (s.frequency != 0) Appendf(samples, " at %u Hz", s.frequency);
    samples += ", " + Counted(s.threads.size(), "thread");
  }
}

// The metric, the off-CPU totals and incomplete intervals, and what each
// event source of the recording did (its settings.sources entry).
void OffCpuLines(const ReportHeader& h, Lines& l) {
  const OffCpuSummary& o = h.off_cpu.totals;
  if (h.show_metric) {
    Appendf(l.Line("metric"),
            "%s (--metric cpu: CPU samples; offcpu: time off CPU; wall: both, per thread)",
            MetricName(h.metric));
  }
  if (h.show_off_cpu) {
    std::string& line = l.Line("off-CPU");
    if (o.status == "totals" && o.intervals == 0) {
      // record --level 0: the scheduler's counts per thread, no intervals.
      line +=
          "totals per thread and state from the scheduler's counts, no intervals "
          "(--by-state)";
    } else {
      if (!o.status.empty()) line += o.status + "; ";
      Appendf(line, "%llu intervals, %s", Ull(o.intervals), Duration(o.interval_ns).c_str());
      if (o.shorts > 0) {
        Appendf(line, "; %llu shorter than %s only counted, %s (no stack)", Ull(o.shorts),
                Duration(o.min_ns).c_str(), Duration(o.short_ns).c_str());
      }
    }
    Appendf(line, "; total %s", Duration(o.total_ns()).c_str());
  }
  if (o.cut_at_start > 0 || o.cut_at_end > 0) {
    Appendf(l.Line("incomplete"),
            "%llu already off CPU at the start (%s), %llu still off CPU at the end or "
            "switch-in lost (%s): counted as stored, not stretched",
            Ull(o.cut_at_start), Duration(o.cut_at_start_ns).c_str(), Ull(o.cut_at_end),
            Duration(o.cut_at_end_ns).c_str());
  }
  if (o.no_user_stack > 0) {
    Appendf(l.Line("off-CPU"), "%llu intervals without a user stack", Ull(o.no_user_stack));
  }
  if (!h.syscalls.empty()) {
    std::string& line = l.Line("syscalls");
    line = h.syscalls;
    if (h.syscall_stack_min != 0)
      Appendf(line, "; stacks for calls from %s", Duration(h.syscall_stack_min).c_str());
  }
}

// "N records" lost, which ring lost them, and the kernel's own count.
std::string LostText(const Summary& s) {
  std::string line;
  Appendf(line, "%llu records", Ull(s.lost_records));
  if (s.lost_records > 0 && s.lost_task_records) {
    // Which ring lost them says what the loss costs.
    uint64_t tasks = std::min(*s.lost_task_records, s.lost_records);
    Appendf(line, " (%llu of samples, %llu of mappings, processes and threads%s)",
            Ull(s.lost_records - tasks), Ull(tasks),
            tasks > 0 ? ": frames in a lost mapping stay unnamed" : "");
  }
  if (s.ring_lost_records && s.kernel_lost_records) {
    // The perf rings' LOST records against the kernel's own count of them.
    const uint64_t ring = *s.ring_lost_records, kernel = *s.kernel_lost_records;
    const char* of = ring == s.lost_records ? "" : " from the perf rings";
    if (kernel == ring && ring > 0) {
      Appendf(line, ", %llu%s as the kernel's own count says", Ull(ring), of);
    } else if (kernel > ring) {
      // Losses after which nothing more reached a ring have no LOST record.
      Appendf(line, "; the kernel counted %llu lost%s (%llu after the last record a ring took)",
              Ull(kernel), of, Ull(kernel - ring));
    } else if (kernel < ring) {
      Appendf(line, "; the kernel counted only %llu lost%s", Ull(kernel), of);
    }
  }
  Appendf(line, ", %llu samples; throttled %llu times", Ull(s.lost_samples), Ull(s.throttles));
  return line;
}

// How well stacks were named and unwound, and what was lost.
void StackLines(const ReportHeader& h, Lines& l) {
  const Summary& s = h.summary;
  if (s.samples > 0) {
    Appendf(l.Line("names"),
            "%.1f%% of %s have fully named stacks (unnamed frames show as module+0xoffset)",
            h.named_percent, h.metric == Metric::kOffCpu ? "intervals" : "samples");
  }
  if (s.symbols == "later") {
    l.Line("symbols") =
        "recorded with --symbolize later: name frames with `microscope symbolize FILE`";
  } else if (s.symbols == "symbolize") {
    l.Line("symbols") = "named by `microscope symbolize` (see notes)";
  }
  l.Line("lost") = LostText(s);
  if (!s.gaps.empty()) {
    // Windows not known: drawn as gaps in the lanes, never as idle time.
    std::string& line = l.Line("gaps");
    for (size_t i = 0; i < s.gaps.size(); ++i) {
      const GapSummary& g = s.gaps[i];
      Appendf(line, "%s%llu %s (%s)", i == 0 ? "" : ", ", Ull(g.gaps), g.cause.c_str(),
              Duration(g.ns).c_str());
    }
    line += ": what happened there is not known";
  }
  if (!s.call_graph.empty()) {
    std::string& line = l.Line("call graph");
    line = s.call_graph;
    if (s.stack_copy != 0) Appendf(line, ", %u-byte user stack copy", s.stack_copy);
  }
  if (h.ended_early > 0) {
    // How many stacks CFI proved whole, and why the others ended early.
    Appendf(l.Line("stack quality"), " %.1f%% complete, %llu ended early", h.complete_percent,
            Ull(h.ended_early));
  }
  std::string& stacks = l.Line("stacks");
  bool first = true;
  for (uint8_t e = 0; e < capture::kStackEndCount; ++e) {
    if (s.stack_ends[e] == 0) continue;
    Appendf(stacks, "%s%llu %s", first ? "" : ", ", Ull(s.stack_ends[e]),
            capture::StackEndName(capture::StackEnd(e)));
    first = false;
  }
  Appendf(stacks, "%s; kernel frames %s", first ? "none" : "", h.kernel_frames.c_str());
}

}  // namespace

std::string Share(double percent) {
  std::string out;
  Appendf(out, "%.2f%%", percent);
  return out;
}

std::string ShareChange(double percent_points) {
  std::string out;
  Appendf(out, "%+.2f%%", percent_points);
  return out;
}

std::string Quantity(uint64_t value, std::string_view unit) {
  std::string out;
  if (unit == "nanoseconds") {
    Appendf(out, "%.3f s", double(value) / 1e9);
  } else if (unit == "bytes") {
    double v = double(value);
    const char* suffix = "B";
    for (const char* s : {"KiB", "MiB", "GiB"}) {
      if (v < 1024) break;
      v /= 1024;
      suffix = s;
    }
    Appendf(out, "%.1f %s", v, suffix);
  } else if (unit == "count" || unit.empty()) {
    Appendf(out, "%llu", Ull(value));
  } else {
    Appendf(out, "%llu %.*s", Ull(value), int(unit.size()), unit.data());
  }
  return out;
}

namespace {

// Where a package's path starts (past site-packages/ and the like, or a
// Python's lib/pythonX.Y/); 0 when it is no package's.
size_t PackageStart(std::string_view path) {
  static constexpr std::string_view kPackageRoots[] = {"/site-packages/", "/dist-packages/",
                                                       "/node_modules/"};
  size_t from = 0;
  for (std::string_view root : kPackageRoots) {
    const size_t at = path.rfind(root);
    if (at != std::string_view::npos) from = std::max(from, at + root.size());
  }
  if (from == 0) {  // a Python's standard library: .../lib/python3.13/json/decoder.py
    for (size_t at = path.find("/lib/python"); at != std::string_view::npos;
         at = path.find("/lib/python", at + 1)) {
      const size_t end = path.find('/', at + 11);
      if (end != std::string_view::npos && end > at + 11 &&
          path.substr(at + 11, end - at - 11).find_first_not_of("0123456789.") ==
              std::string_view::npos) {
        from = end + 1;
      }
    }
  }
  return from;
}

}  // namespace

std::string DisplayPath(std::string_view path, std::string_view sources, size_t width) {
  size_t from = PackageStart(path);
  if (from == 0 && !sources.empty() && path.size() > sources.size() &&
      path.substr(0, sources.size()) == sources) {
    from = sources.size();
  }
  std::string_view shown = path.substr(from);
  if (shown.size() <= width || width < 4) return std::string(shown);
  return "..." + std::string(shown.substr(shown.size() - (width - 3)));
}

std::string ProgramSources(std::span<const std::string_view> paths) {
  std::optional<std::string_view> common;
  for (std::string_view p : paths) {
    if (p.empty() || p[0] != '/' || PackageStart(p) != 0) continue;
    std::string_view dir = p.substr(0, p.rfind('/') + 1);
    if (!common) {
      common = dir;
      continue;
    }
    size_t n = 0;
    while (n < common->size() && n < dir.size() && (*common)[n] == dir[n]) ++n;
    common = common->substr(0, common->substr(0, n).rfind('/') + 1);
  }
  if (!common || common->size() <= 1) return "";
  return std::string(*common);
}

std::string Duration(uint64_t ns) {
  std::string out;
  if (ns < 1000000) {
    Appendf(out, "%.1f µs", double(ns) / 1e3);
  } else if (ns < 1000000000) {
    Appendf(out, "%.3f ms", double(ns) / 1e6);
  } else {
    Appendf(out, "%.3f s", double(ns) / 1e9);
  }
  return out;
}

double KeptPercent(const ReportModel& m) {
  return Percent(m.flat.all.value, m.header.summary.value);
}

std::vector<HeaderLine> HeaderLines(const ReportModel& m) {
  const ReportHeader& h = m.header;
  const Summary& s = h.summary;
  Lines l;
  RunLines(h, l);
  OffCpuLines(h, l);
  StackLines(h, l);
  if (s.problems.empty()) l.Line("problems") = "none";
  for (size_t i = 0; i < s.problems.size(); ++i) {
    const auto& p = s.problems[i];
    Appendf(l.Line(i == 0 ? "problems" : ""), "%llu x %s (e.g. %s)", Ull(p.count), p.kind.c_str(),
            p.example.c_str());
  }
  for (const std::string& n : s.notes) l.Line("note") = n;
  if (m.traces) {
    for (size_t i = 0; i < m.traces->sources.size(); ++i) {
      const ReportTraceSource& t = m.traces->sources[i];
      std::string& line = l.Line(i == 0 ? "traces" : "");
      Appendf(line, "%s (%s%s%s): %llu events on %llu tracks", t.path.c_str(), t.format.c_str(),
              t.tool.empty() ? "" : ", ", t.tool.c_str(), Ull(t.events), Ull(t.tracks));
      if (t.clock == capture::kTraceClockOwnAxis) {
        line += ", on its own axis (not placed on this recording's clock)";
      } else {
        Appendf(line, ", placed by %s", t.clock.c_str());
        if (t.uncertainty_ns) {
          line += " within " + Duration(*t.uncertainty_ns);
        } else {
          line += " (how far off not bounded)";
        }
      }
      if (t.skipped > 0) Appendf(line, "; %llu events not imported", Ull(t.skipped));
    }
  }
  if (!h.filter_text.empty()) {
    Appendf(l.Line("filter"), "%s: %llu %s (%s, %s of all) kept", h.filter_text.c_str(),
            Ull(m.flat.all.samples), m.nouns.counts.c_str(),
            Quantity(m.flat.all.value, s.unit).c_str(), Share(KeptPercent(m)).c_str());
  }
  return std::move(l.lines);
}

}  // namespace microscope::analysis
