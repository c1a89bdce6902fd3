#include "src/cli/filter_options.h"

namespace microscope::cli {

void FilterOptions::Register(CLI::App* cmd) {
  cmd->add_option("--focus", spec.focus, "keep samples with a function matching REGEX");
  cmd->add_option("--exclude", spec.exclude, "drop samples with a function matching REGEX");
  cmd->add_option("--thread", spec.thread, "keep one thread, by tid or name");
  cmd->add_option("--pid", pid, "keep one process");
  cmd->add_option("--time", time, "keep samples in FROM..TO after the start (e.g. 1s..2.5s)");
}

Status FilterOptions::Resolve() {
  if (!time.empty()) RETURN_IF_ERROR(analysis::ParseTimeRange(time, &spec));
  if (pid != 0) spec.pid = pid;
  return OkStatus();
}

std::string FilterOptions::Describe() const {
  std::string f;
  auto add = [&](const std::string& part) { f += (f.empty() ? "" : ", ") + part; };
  if (spec.pid) add("pid " + std::to_string(*spec.pid));
  if (!spec.thread.empty()) add("thread " + spec.thread);
  if (!time.empty()) add("time " + time);
  if (!spec.focus.empty()) add("focus /" + spec.focus + "/");
  if (!spec.exclude.empty()) add("exclude /" + spec.exclude + "/");
  return f;
}

}  // namespace microscope::cli
