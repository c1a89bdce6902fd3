#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/scoped_fd.h"
#include "capture/reader.h"
#include "sql/database.h"
#include "sql/triage.h"
#include "src/cli/commands.h"
#include "src/cli/recording.h"

namespace microscope::cli {
namespace {

struct TriageOptions {
  int pid = 0;
  std::vector<std::string> command;
  std::string duration;
  std::string output = "triage.mscap";
  std::vector<std::string> rules;
  bool json = false;
  bool human = false;
};

int RunTriage(const TriageOptions& o) {
  if ((o.pid != 0) == !o.command.empty()) {
    PrintError("triage: --pid PID or -- PROG ARGS (one of them)");
    return 2;
  }
  Result<std::vector<sql::Rule>> rules = sql::LoadRules(o.rules);
  if (!rules.ok()) {
    PrintError(rules.status().message());
    return 2;
  }
  record::RecordOptions r;
  r.output = o.output;
  r.off_cpu = true;
  r.syscalls = true;
  r.readings = true;
  r.pid = o.pid;
  r.command = o.command;
  if (!o.duration.empty() && !ParseDurationOption("--duration", o.duration, &r.duration_ns))
    return 2;
  if (o.pid != 0 && r.duration_ns == 0) r.duration_ns = 5'000'000'000;
  // A file left by an earlier run is not this window: gone before it records.
  struct stat old;
  if (lstat(o.output.c_str(), &old) == 0 && S_ISREG(old.st_mode)) unlink(o.output.c_str());
  const uint64_t started = RealtimeNowNs();
  // The program writes to standard error: standard output is the report's.
  fflush(stdout);
  ScopedFd report_out(dup(STDOUT_FILENO));
  if (!report_out.valid() || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    PrintError("triage: cannot set the program's output aside");
    return 1;
  }
  RunRecording(r, /*quiet=*/true);
  dup2(report_out.get(), STDOUT_FILENO);
  // The recording's own errors are said; a capture written now is the window.
  struct stat st;
  if (stat(o.output.c_str(), &st) != 0 ||
      uint64_t(st.st_mtim.tv_sec) * 1000000000ull + uint64_t(st.st_mtim.tv_nsec) + 1000000000ull <
          started) {
    PrintError("triage: no window was recorded (" + o.output + " was not written)");
    return 1;
  }
  Result<capture::Capture> capture = capture::ReadCapture(o.output);
  if (!capture.ok()) {
    PrintError(capture.status().WithContext(o.output).message());
    return 1;
  }
  sql::Corpus corpus;
  corpus.Add(o.output, std::move(capture).value());
  Result<std::unique_ptr<sql::Database>> db = sql::Database::Open(std::move(corpus));
  if (!db.ok()) {
    PrintError(db.status().message());
    return 1;
  }
  sql::TriageReport report = sql::Triage(**db, *rules, o.output);
  const bool json = o.json || (!o.human && isatty(STDOUT_FILENO) == 0);
  fputs((json ? sql::TriageJson(report) : sql::TriageText(report)).c_str(), stdout);
  return 0;
}

}  // namespace

Runner AddTriageCommand(CLI::App& app) {
  auto o = std::make_shared<TriageOptions>();
  CLI::App* cmd = app.add_subcommand(
      "triage",
      "A first look at a slow program: one window, then findings ranked by their share of it.\n"
      "  microscope triage --pid PID [--duration 5s]\n"
      "  microscope triage -- PROG ARGS\n"
      "Records CPU samples, off-CPU time with wakers, system calls and the target's own\n"
      "counters (schedstat per thread, its cgroup's CPU quota and throttling, pressure) into\n"
      "-o, then runs the rules (rules/*.sql, and --rules DIR) over it: each finding with its\n"
      "share of the busy threads' time, its evidence and the next command to run, then what\n"
      "this window could not answer. JSON when stdout is not a terminal (docs/triage.md).\n"
      "A launched program's standard output goes to standard error: stdout is the report.");
  cmd->add_option("--pid", o->pid, "a running process")->check(PidCheck());
  cmd->add_option("command", o->command, "the program to run, after --");
  cmd->add_option("--duration", o->duration,
                  "the window: TIME (default 5s with --pid; a program: until it exits)");
  cmd->add_option("-o,--output", o->output, "the window's capture, kept for report and query")
      ->capture_default_str();
  cmd->add_option("--rules", o->rules,
                  "a directory of rule files (NAME.sql) run beside the built-in rules; one named "
                  "as a built-in rule replaces it")
      ->type_name("DIR");
  cmd->add_flag("--json", o->json, "JSON even on a terminal");
  cmd->add_flag("--human", o->human, "text even when stdout is not a terminal");
  cmd->positionals_at_end();
  return [o] { return RunTriage(*o); };
}

}  // namespace microscope::cli
