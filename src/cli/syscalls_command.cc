#include <memory>
#include <string>

#include "src/cli/commands.h"
#include "src/record/syscall_session.h"

namespace microscope::cli {

Runner AddSyscallsCommand(CLI::App& app) {
  auto options = std::make_shared<record::SyscallRecordOptions>();
  auto duration = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "syscalls",
      "Trace a program's system calls (BPF on raw_syscalls) into a capture: each call's\n"
      "thread, start, duration, return value and first three arguments. Children are\n"
      "followed. `microscope report --syscalls FILE` prints the table.\n"
      "  microscope syscalls [-o FILE] [--duration TIME] -- PROG ARGS...\n"
      "  microscope syscalls --pid PID [--duration TIME]");
  cmd->add_option("-o,--output", options->output, "capture file to write")->capture_default_str();
  cmd->add_option("-p,--pid", options->pid, "trace this running process (and its new children)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-d,--duration", *duration, "stop after TIME (e.g. 10s, 500ms, 2m)");
  cmd->add_flag("-q,--quiet", options->quiet, "no summary on stderr");
  cmd->add_option("command", options->command, "program and arguments to launch (after --)");
  return [options, duration]() {
    if (!duration->empty() && !ParseDuration(*duration, &options->duration_ns)) {
      PrintError("--duration " + *duration + ": not a time (e.g. 10s, 500ms, 2m)");
      return 2;
    }
    if ((options->pid != 0) == !options->command.empty()) {
      PrintError("give either -- PROG ARGS or --pid PID");
      return 2;
    }
    auto status = record::RunSyscallRecord(*options);
    if (!status.ok()) {
      PrintError(status.status().message());
      return 1;
    }
    return *status;
  };
}

}  // namespace microscope::cli
