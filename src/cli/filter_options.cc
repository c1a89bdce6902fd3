#include "src/cli/filter_options.h"

#include "analysis/report_params.h"
#include "capture/capture.h"
#include "src/cli/commands.h"

namespace microscope::cli {

void FilterOptions::Register(CLI::App* cmd) {
  cmd->add_option("--focus", spec.focus,
                  "keep samples with a function matching REGEX (RE2 syntax, searched anywhere "
                  "in the name: no backreferences or lookaround; up to 4096 characters)");
  cmd->add_option("--exclude", spec.exclude,
                  "drop samples with a function matching REGEX (RE2 syntax, as --focus)");
  cmd->add_option("--focus-path", focus_path,
                  "keep samples whose stack begins with this call path, function names from the "
                  "root separated by ';' (main;run;hot), shown from its last function (the "
                  "Firefox Profiler's 'focus on subtree only')");
  cmd->add_option("--thread", spec.thread, "keep one thread, by tid or name");
  cmd->add_option("--pid", pid, "keep one process")->check(PidCheck());
  cmd->add_option("--time", time, "keep samples in FROM..TO after the start (e.g. 1s..2.5s)");
  cmd->add_option("--zone", spec.zone,
                  "keep samples taken inside the program's zone NAME (recorded with --probes)");
  cmd->add_option("--label", labels,
                  "keep samples whose thread had label KEY=VALUE then (python.gil=held, "
                  "v8.isolate=2, the program's own); repeatable, all must hold");
  cmd->add_option("--gil", gil,
                  "keep Python samples by whether their thread held the GIL: held or released "
                  "(the same as --label python.gil=VALUE)")
      ->check(CLI::IsMember({"held", "released"}));
}

Status FilterOptions::Resolve() {
  if (!time.empty()) RETURN_IF_ERROR(analysis::ParseTimeRange(time, &spec));
  if (!focus_path.empty()) RETURN_IF_ERROR(analysis::ParseCallPath(focus_path, &spec));
  if (pid != 0) spec.pid = pid;
  for (const std::string& l : labels) RETURN_IF_ERROR(analysis::ParseLabel(l, &spec));
  if (!gil.empty()) spec.labels.emplace_back(std::string(capture::kGilLabel), gil);
  return OkStatus();
}

std::string FilterOptions::Describe() const {
  return analysis::DescribeFilter(spec, time);
}

}  // namespace microscope::cli
