#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "capture/reader.h"
#include "src/cli/commands.h"
#include "src/cli/filter_options.h"
#include "src/cli/report_view.h"

namespace microscope::cli {
namespace {

struct ReportOptions {
  std::string file;
  std::string diff;
  std::string metric;  // empty: analysis::DefaultMetric
  std::string granularity = "function";
  std::string color = "auto";
  bool json = false;
  bool collapse_recursion = false;
  FilterOptions filter;
  ReportViews views;
};

Result<capture::Capture> Read(const std::string& path) {
  auto c = capture::ReadCapture(path);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

int RunReport(ReportOptions& o) {
  Status resolved = o.filter.Resolve();
  if (!resolved.ok()) {
    PrintError(resolved.message());
    return 2;
  }
  Result<capture::Capture> read = Read(o.file);
  if (!read.ok()) {
    PrintError(read.status().message());
    return 1;
  }
  const capture::Capture& original = *read;
  analysis::Metric metric = analysis::DefaultMetric(original);
  if (!o.metric.empty()) analysis::ParseMetric(o.metric, &metric);  // checked by CLI11
  if (Status ok = analysis::CheckMetric(original, metric); !ok.ok()) {
    PrintError(ok.WithContext(o.file).message());
    return 1;
  }
  // The views read samples of the chosen metric; lanes and the off-CPU
  // tables read the capture's own CPU samples and intervals.
  const analysis::MetricOptions metric_options{o.views.by_state};
  std::optional<capture::Capture> for_metric;
  if (metric != analysis::Metric::kCpu) {
    for_metric = analysis::ForMetric(original, metric, metric_options);
  }
  const capture::Capture& cap = for_metric ? *for_metric : original;
  analysis::Granularity g = o.granularity == "address" ? analysis::Granularity::kAddress
                            : o.granularity == "line"  ? analysis::Granularity::kLine
                                                       : analysis::Granularity::kFunction;
  analysis::FunctionKeys keys(cap, g);
  auto filter = analysis::SampleFilter::Make(cap, keys, o.filter.spec);
  if (!filter.ok()) {
    PrintError(filter.status().WithContext(o.file).message());
    return 1;
  }
  ReportData d;
  d.capture = &cap;
  d.keys = &keys;
  d.metric = metric;
  d.summary = analysis::Summarize(cap);
  d.off_cpu = analysis::SummarizeOffCpu(original);
  if (o.views.by_state) d.by_state = analysis::SummarizeOffCpu(original, *filter, o.views.top);
  d.flat = analysis::ComputeFlat(cap, keys, *filter);
  if (o.views.tree) {
    d.tree = analysis::ComputeTree(cap, keys, *filter, {false, o.collapse_recursion});
  }
  if (o.views.inverted) {
    d.inverted = analysis::ComputeTree(cap, keys, *filter, {true, o.collapse_recursion});
  }
  if (o.views.threads) d.threads = analysis::ThreadTotals(cap, *filter);
  if (o.views.lanes) d.lanes = analysis::ComputeLanes(original, *filter, o.views.lane_width);
  // A syscall-only capture shows its table by default.
  if (o.views.syscalls || (original.samples.size() == 0 && original.syscalls.size() > 0 &&
                           original.off_cpu.size() == 0)) {
    o.views.syscalls = true;
    d.syscalls = analysis::ComputeSyscalls(cap, o.views.top);
  }
  if (!o.diff.empty()) {
    Result<capture::Capture> other = Read(o.diff);
    if (!other.ok()) {
      PrintError(other.status().message());
      return 1;
    }
    if (Status ok = analysis::CheckMetric(*other, metric); !ok.ok()) {
      PrintError(ok.WithContext(o.diff).message());
      return 1;
    }
    if (metric != analysis::Metric::kCpu) {
      *other = analysis::ForMetric(*other, metric, metric_options);
    }
    auto diff = analysis::Diff(cap, *other, g, o.filter.spec);
    if (!diff.ok()) {
      PrintError(diff.status().message());
      return 1;
    }
    d.diff = std::move(diff).value();
  }
  o.views.filter_text = o.filter.Describe();
  o.views.color = o.color == "always" || (o.color == "auto" && isatty(STDOUT_FILENO) &&
                                          std::getenv("NO_COLOR") == nullptr);
  if (o.json) {
    PrintJsonReport(stdout, d, o.views);
  } else {
    PrintTextReport(stdout, d, o.views);
  }
  return 0;
}

}  // namespace

Runner AddReportCommand(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Summarize a capture: header, then the chosen views (default: hottest functions by self\n"
      "and by total). Filters apply to every view.");
  cmd->add_option("file", o->file, "capture file")->required();
  cmd->add_flag("--flat", o->views.flat, "hottest functions by self and by total");
  cmd->add_flag("--tree", o->views.tree, "the call tree, callers first");
  cmd->add_flag("--inverted", o->views.inverted,
                "the inverted tree: sampled functions first, then their callers");
  cmd->add_flag("--threads", o->views.threads, "per-thread totals");
  cmd->add_flag("--lanes", o->views.lanes,
                "a timeline of each thread: its samples, and its time off CPU by state");
  cmd->add_flag("--syscalls", o->views.syscalls,
                "system calls (from `microscope syscalls`): calls, errors, total, mean and max "
                "time per call, as strace -c, then the slowest calls");
  cmd->add_option("--metric", o->metric,
                  "what the views measure: cpu (CPU samples), offcpu (time off CPU: each "
                  "interval at its stack, short intervals under one pseudo frame per thread) or "
                  "wall (per thread, both). Default: cpu, or offcpu for a capture with off-CPU "
                  "intervals and no samples")
      ->check(CLI::IsMember({"cpu", "offcpu", "wall"}));
  cmd->add_flag("--by-state", o->views.by_state,
                "off-CPU time per state (sleeping, uninterruptible, preempted, other) and per "
                "thread and state, then the top wakers of each thread (waker tid and name, "
                "wakeups, time); with --metric offcpu or wall, off-CPU stacks end in a "
                "[state] frame in every view");
  cmd->add_option("--diff", o->diff, "compare with OTHER.mscap (shares of each total)");
  o->filter.Register(cmd);
  cmd->add_option("--granularity", o->granularity,
                  "function, line (function and source line, where DWARF lines were found), "
                  "or address")
      ->capture_default_str()
      ->check(CLI::IsMember({"function", "line", "address"}));
  cmd->add_flag("--collapse-recursion", o->collapse_recursion,
                "merge a function's recursive calls into one tree node");
  cmd->add_option("--min-percent", o->views.min_percent, "prune tree nodes below this share")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("-n,--top", o->views.top, "rows per table")->capture_default_str();
  cmd->add_option("--lane-width", o->views.lane_width, "columns of the --lanes timeline")
      ->capture_default_str()
      ->check(CLI::Range(size_t(4), size_t(1000)));
  cmd->add_option("--color", o->color, "auto (when stdout is a terminal), always or never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->add_flag("--json", o->json, "the same report as JSON");
  return [o]() { return RunReport(*o); };
}

}  // namespace microscope::cli
