#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "capture/segments.h"
#include "formats/assembly_text.h"
#include "formats/report_json.h"
#include "formats/source_text.h"
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
  std::string inlines = "on";
  std::string look = "mixed";
  bool native_leaves = false;
  std::string color = "auto";
  bool json = false;
  FilterOptions filter;
  analysis::ReportQuery query;
  formats::SourceOptions source;  // --source-root, --trim-path
};

Result<capture::Capture> Read(const std::string& path) {
  return capture::ReadCaptureOrSegments(path);
}

// The query from the options CLI11 has checked.
analysis::ReportQuery Query(const ReportOptions& o) {
  analysis::ReportQuery q = o.query;
  if (!o.metric.empty()) {
    analysis::Metric metric;
    if (analysis::ParseMetric(o.metric, &metric)) q.metric = metric;
  }
  q.inlines = o.inlines == "on";
  analysis::ParseLook(o.look, &q.look, o.native_leaves);  // checked by CLI11
  q.granularity = o.granularity == "address" ? analysis::Granularity::kAddress
                  : o.granularity == "line"  ? analysis::Granularity::kLine
                                             : analysis::Granularity::kFunction;
  q.filter = o.filter.spec;
  q.filter_text = o.filter.Describe();
  q.capture_name = o.file;
  q.other_name = o.diff;
  return q;
}

int RunReport(ReportOptions& o) {
  Status resolved = o.filter.Resolve();
  if (!resolved.ok()) {
    PrintError(resolved.message());
    return 2;
  }
  Result<formats::SourceFiles> sources = formats::SourceFiles::Open(o.source);
  if (!sources.ok()) {
    PrintError(sources.status().message());
    return 2;
  }
  Result<capture::Capture> read = Read(o.file);
  if (!read.ok()) {
    PrintError(read.status().message());
    return 1;
  }
  std::optional<capture::Capture> other;
  if (!o.diff.empty()) {
    Result<capture::Capture> other_read = Read(o.diff);
    if (!other_read.ok()) {
      PrintError(other_read.status().message());
      return 1;
    }
    other = std::move(other_read).value();
  }
  Result<analysis::ReportModel> model =
      analysis::BuildReport(*read, Query(o), other ? &*other : nullptr);
  if (!model.ok()) {
    PrintError(model.status().message());
    return 1;
  }
  formats::ReadViewFiles(&*model, [&](const std::string& path) { return sources->OpenFile(path); });
  if (o.json) {
    formats::WriteReportJson(stdout, *model);
  } else {
    bool color = o.color == "always" ||
                 (o.color == "auto" && isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr);
    PrintTextReport(stdout, *model, color);
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
  cmd->add_option("file", o->file,
                  "capture file, or a --continuous directory: its segments as one profile")
      ->required();
  cmd->add_flag("--flat", o->query.views.flat, "hottest functions by self and by total");
  cmd->add_flag("--tree", o->query.views.tree, "the call tree, callers first");
  cmd->add_flag("--inverted", o->query.views.inverted,
                "the inverted tree: sampled functions first, then their callers");
  cmd->add_flag("--threads", o->query.views.threads, "per-thread totals");
  cmd->add_flag("--lanes", o->query.views.lanes,
                "a timeline of each thread: its samples, and its time off CPU by state\n"
                "(over the --time range when one is given)");
  cmd->add_flag("--zones", o->query.views.zones,
                "the program's zones (recorded with --probes): count, total and self time, "
                "p50/p90/p99/max with the thread and time of each, CPU samples and off-CPU time "
                "inside");
  cmd->add_flag("--spans", o->query.views.spans,
                "imported traces' spans (microscope import): count, total, mean, p50/p90/p99/max "
                "per name, and the CPU samples of the capture's thread inside them");
  cmd->add_flag("--syscalls", o->query.views.syscalls,
                "system calls (from `microscope syscalls`): calls, errors, total, mean and max "
                "time per call, as strace -c, then the slowest calls");
  cmd->add_option("--metric", o->metric,
                  "what the views measure: cpu (CPU samples), offcpu (time off CPU: each "
                  "interval at its stack, short intervals under one pseudo frame per thread) or "
                  "wall (per thread, both). Default: cpu, or offcpu for a capture with off-CPU "
                  "intervals and no samples")
      ->check(CLI::IsMember({"cpu", "offcpu", "wall"}));
  cmd->add_flag("--by-state", o->query.views.by_state,
                "off-CPU time per state (sleeping, uninterruptible, preempted, other) and per "
                "thread and state, then the top wakers of each thread (waker tid and name, "
                "wakeups, time); with --metric offcpu or wall, off-CPU stacks end in a "
                "[state] frame in every view");
  cmd->add_option("--source", o->query.source,
                  "FUNCTION's source lines (where DWARF or a runtime gave lines) with the "
                  "samples at each, self and total, read from the files the capture names on "
                  "this host (as perf annotate, by line), as the user running report: regular "
                  "files only, links of root's or this user's only");
  cmd->add_option("--asm", o->query.assembly,
                  "FUNCTION's machine code with the samples at each instruction, self and "
                  "total (as perf annotate): its module opened as --source opens files, "
                  "proven the one recorded by its build ID, and disassembled over the "
                  "symbols holding the sampled addresses; a caller's samples are on its call "
                  "instruction")
      ->type_name("FUNCTION");
  AddSourceRootOptions(cmd, &o->source);
  cmd->add_option("--diff", o->diff, "compare with OTHER.mscap (shares of each total)");
  o->filter.Register(cmd);
  AddInlinesOption(cmd, &o->inlines);
  AddLookOption(cmd, &o->look, &o->native_leaves);
  cmd->add_option("--granularity", o->granularity,
                  "function, line (function and source line, where DWARF lines were found), "
                  "or address")
      ->capture_default_str()
      ->check(CLI::IsMember({"function", "line", "address"}));
  cmd->add_flag("--collapse-recursion", o->query.collapse_recursion,
                "merge a function's recursive calls into one tree node");
  // One value per use (a module's name may be "[kernel.kallsyms]", which a
  // list option would take for a list).
  cmd->add_option_function<std::string>(
         "--merge", [o](const std::string& v) { o->query.merge.push_back(v); },
         "leave a function out of every stack, its time going to its callers (the Firefox "
         "Profiler's 'merge function'; by its name as the views show it; repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  cmd->add_option_function<std::string>(
         "--collapse", [o](const std::string& v) { o->query.collapse.push_back(v); },
         "show a module's frames (a library's) as one frame named after it, per run of them in "
         "a stack (by its file name as the views show it; repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  cmd->add_option("--min-percent", o->query.min_percent, "prune tree nodes below this share")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("-n,--top", o->query.top, "rows per table")->capture_default_str();
  cmd->add_option("--lane-width", o->query.lane_width, "columns of the --lanes timeline")
      ->capture_default_str()
      ->check(CLI::Range(size_t(4), size_t(1000)));
  cmd->add_option("--color", o->color, "auto (when stdout is a terminal), always or never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->add_flag("--json", o->json, "the same report as JSON");
  return [o]() { return RunReport(*o); };
}

}  // namespace microscope::cli
