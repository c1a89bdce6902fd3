#include <memory>
#include <string>

#include "src/cli/commands.h"
#include "src/cli/recording.h"

namespace microscope::cli {

Runner AddSyscallsCommand(CLI::App& app) {
  auto options = std::make_shared<record::RecordOptions>();
  auto quiet = std::make_shared<bool>(false);
  options->output = "syscalls.mscap";
  options->samples = false;
  options->syscalls = true;
  auto duration = std::make_shared<std::string>();
  auto stack_min = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "syscalls",
      "Trace a program's system calls (BPF on raw_syscalls) into a capture.\n"
      "Each call's thread, start, duration, return value and first three arguments, and the\n"
      "caller's stack for calls of at least --syscall-stack-min. Children are followed; no CPU\n"
      "samples (`record --syscalls` adds them). `microscope report --syscalls FILE`\n"
      "prints the table.\n"
      "  microscope syscalls [-o FILE] [--duration TIME] -- PROG ARGS...\n"
      "  microscope syscalls --pid PID [--duration TIME]");
  cmd->add_option("-o,--output", options->output, "capture file to write")->capture_default_str();
  cmd->add_option("-p,--pid", options->pid, "trace this running process (and its new children)")
      ->check(PidCheck());
  cmd->add_option("-d,--duration", *duration, "stop after TIME (e.g. 10s, 500ms, 2m)");
  AddSyscallStackMinOption(cmd, stack_min.get());
  cmd->add_flag("-q,--quiet", *quiet, "no summary on stderr");
  cmd->add_option("command", options->command, "program and arguments to launch (after --)");
  return [options, quiet, duration, stack_min]() {
    if (!duration->empty() &&
        !ParseDurationOption("--duration", *duration, &options->duration_ns)) {
      return 2;
    }
    if (!stack_min->empty() &&
        !ParseDurationOption("--syscall-stack-min", *stack_min, &options->syscall_stack_min_ns)) {
      return 2;
    }
    if ((options->pid != 0) == !options->command.empty()) {
      PrintError("give either -- PROG ARGS or --pid PID");
      return 2;
    }
    return RunRecording(*options, *quiet);
  };
}

}  // namespace microscope::cli
