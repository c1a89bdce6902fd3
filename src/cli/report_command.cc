#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "capture/reader.h"
#include "src/cli/commands.h"
#include "src/cli/report_view.h"

namespace microscope::cli {
namespace {

struct ReportOptions {
  std::string file;
  std::string diff;
  std::string granularity = "function";
  std::string color = "auto";
  std::string time;
  bool json = false;
  bool collapse_recursion = false;
  analysis::FilterSpec filter;
  int pid = 0;
  ReportViews views;
};

Result<capture::Capture> Read(const std::string& path) {
  auto c = capture::ReadCapture(path);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

int RunReport(ReportOptions& o) {
  if (!o.time.empty()) {
    Status s = analysis::ParseTimeRange(o.time, &o.filter);
    if (!s.ok()) {
      PrintError(s.message());
      return 2;
    }
  }
  if (o.pid != 0) o.filter.pid = o.pid;
  Result<capture::Capture> read = Read(o.file);
  if (!read.ok()) {
    PrintError(read.status().message());
    return 1;
  }
  const capture::Capture& cap = *read;
  analysis::Granularity g = o.granularity == "address" ? analysis::Granularity::kAddress
                            : o.granularity == "line"  ? analysis::Granularity::kLine
                                                       : analysis::Granularity::kFunction;
  analysis::FunctionKeys keys(cap, g);
  auto filter = analysis::SampleFilter::Make(cap, keys, o.filter);
  if (!filter.ok()) {
    PrintError(filter.status().WithContext(o.file).message());
    return 1;
  }
  ReportData d;
  d.capture = &cap;
  d.keys = &keys;
  d.summary = analysis::Summarize(cap);
  d.flat = analysis::ComputeFlat(cap, keys, *filter);
  if (o.views.tree) {
    d.tree = analysis::ComputeTree(cap, keys, *filter, {false, o.collapse_recursion});
  }
  if (o.views.inverted) {
    d.inverted = analysis::ComputeTree(cap, keys, *filter, {true, o.collapse_recursion});
  }
  if (o.views.threads) d.threads = analysis::ThreadTotals(cap, *filter);
  if (o.views.lanes) d.lanes = analysis::ComputeLanes(cap, *filter, o.views.lane_width);
  if (!o.diff.empty()) {
    Result<capture::Capture> other = Read(o.diff);
    if (!other.ok()) {
      PrintError(other.status().message());
      return 1;
    }
    auto diff = analysis::Diff(cap, *other, g, o.filter);
    if (!diff.ok()) {
      PrintError(diff.status().message());
      return 1;
    }
    d.diff = std::move(diff).value();
  }
  std::string f;
  auto add = [&](const std::string& part) { f += (f.empty() ? "" : ", ") + part; };
  if (o.filter.pid) add("pid " + std::to_string(*o.filter.pid));
  if (!o.filter.thread.empty()) add("thread " + o.filter.thread);
  if (!o.time.empty()) add("time " + o.time);
  if (!o.filter.focus.empty()) add("focus /" + o.filter.focus + "/");
  if (!o.filter.exclude.empty()) add("exclude /" + o.filter.exclude + "/");
  o.views.filter_text = f;
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
  cmd->add_flag("--lanes", o->views.lanes, "a timeline of each thread's samples");
  cmd->add_option("--diff", o->diff, "compare with OTHER.mscap (shares of each total)");
  cmd->add_option("--focus", o->filter.focus, "keep samples with a function matching REGEX");
  cmd->add_option("--exclude", o->filter.exclude, "drop samples with a function matching REGEX");
  cmd->add_option("--thread", o->filter.thread, "keep one thread, by tid or name");
  cmd->add_option("--pid", o->pid, "keep one process");
  cmd->add_option("--time", o->time, "keep samples in FROM..TO after the start (e.g. 1s..2.5s)");
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
