#include <cstdlib>
#include <memory>

#include "base/duration.h"
#include "src/cli/commands.h"
#include "src/cli/recording.h"

namespace microscope::cli {

bool ParseDurationOption(const char* option, const std::string& text, uint64_t* ns) {
  Result<uint64_t> v = ParseDuration(text);
  if (v.ok() && *v == 0) v = Status::Error("'" + text + "' is not a positive duration");
  if (!v.ok()) {
    PrintError(std::string(option) + ": " + v.status().message());
    return false;
  }
  *ns = *v;
  return true;
}

void AddSyscallStackMinOption(CLI::App* cmd, std::string* text) {
  cmd->add_option("--syscall-stack-min", *text,
                  "system calls lasting at least TIME also store the caller's user stack "
                  "(e.g. 1ms; default: no stacks)");
}

Runner AddRecordCommand(CLI::App& app) {
  auto options = std::make_shared<record::RecordOptions>();
  auto quiet = std::make_shared<bool>(false);
  auto duration = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "record",
      "Sample a program's CPU time with call stacks into a capture file.\n"
      "  microscope record [-o FILE] [-F HZ] [--duration TIME] -- PROG ARGS...\n"
      "  microscope record --pid PID [--duration TIME]\n"
      "Launch mode follows every thread and child process; it ends when PROG exits\n"
      "(exit status: PROG's), at --duration (PROG then gets SIGTERM), or at Ctrl-C.\n"
      "Attach mode ends at Ctrl-C, --duration, or the target's exit; the target runs on.");
  cmd->add_option("-o,--output", options->output, "capture file to write")->capture_default_str();
  CLI::Option* freq =
      cmd->add_option("-F,--frequency", options->frequency, "samples per second per thread")
          ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--preset", options->preset,
                  "rate and stack copy: quick (499 Hz, 8 KiB), default (999 Hz, 16 KiB), "
                  "deep (3999 Hz, 64 KiB); -F and --stack-copy override")
      ->capture_default_str()
      ->check(CLI::IsMember({"quick", "default", "deep"}));
  auto call_graph = std::make_shared<std::string>("auto");
  cmd->add_option("-g,--call-graph", *call_graph,
                  "user stacks: fp (kernel frame-pointer chain), dwarf (CFI unwinding of the "
                  "copied stack), auto (CFI where a module has it, frame pointers where not)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp", "dwarf", "auto"}));
  CLI::Option* stack =
      cmd->add_option(
             "--stack-copy", options->stack_copy,
             "bytes of user stack copied per sample for dwarf/auto (multiple of 8, max 65528)")
          ->check(CLI::Range(8u, 65528u));
  cmd->add_option("-p,--pid", options->pid, "attach to this running process")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-d,--duration", *duration, "stop after TIME (e.g. 10s, 500ms, 2m)");
  cmd->add_option("-m,--mmap-pages", options->mmap_pages,
                  "ring buffer data pages per CPU, a power of two (more: fewer losses)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 16));
  cmd->add_option("--symbolize", options->symbolize,
                  "now: name frames (functions, file:line, inlined calls) from this host's "
                  "files; later: store build IDs and offsets only, name them with "
                  "`microscope symbolize` (on any host)")
      ->capture_default_str()
      ->check(CLI::IsMember({"now", "later"}));
  CLI::Option* off_cpu = cmd->add_flag(
      "--off-cpu,!--no-off-cpu", options->off_cpu,
      "record time off CPU (BPF, sched_switch): each interval's state, waker and stacks "
      "(on in the deep preset)");
  auto off_cpu_min = std::make_shared<std::string>("20us");
  cmd->add_option("--off-cpu-min", *off_cpu_min,
                  "off-CPU intervals shorter than TIME are only counted, without stacks")
      ->capture_default_str();
  cmd->add_flag("--syscalls", options->syscalls,
                "also trace the target's system calls (BPF on raw_syscalls), as `microscope "
                "syscalls` does, in the same capture");
  auto stack_min = std::make_shared<std::string>();
  AddSyscallStackMinOption(cmd, stack_min.get());
  cmd->add_flag("-q,--quiet", *quiet, "no status line or summary on stderr");
  cmd->add_option("command", options->command, "program and arguments to launch (after --)");
  return [options, quiet, duration, freq, stack, call_graph, off_cpu, off_cpu_min,
          stack_min]() -> int {
    // The preset fills what the user did not set explicitly.
    struct Preset {
      const char* name;
      uint32_t frequency;
      uint32_t stack_copy;
    };
    static constexpr Preset kPresets[] = {
        {"quick", 499, 8192}, {"default", 999, 16384}, {"deep", 3999, 65528}};
    for (const Preset& p : kPresets) {
      if (options->preset != p.name) continue;
      if (freq->count() == 0) options->frequency = p.frequency;
      if (stack->count() == 0) options->stack_copy = p.stack_copy;
    }
    if (off_cpu->count() == 0 && options->preset == "deep") options->off_cpu = true;
    if (!stack_min->empty()) {
      if (!options->syscalls) {
        PrintError("--syscall-stack-min needs --syscalls");
        return 2;
      }
      if (!ParseDurationOption("--syscall-stack-min", *stack_min, &options->syscall_stack_min_ns)) {
        return 2;
      }
    }
    if (!ParseDurationOption("--off-cpu-min", *off_cpu_min, &options->off_cpu_min_ns)) return 2;
    if (options->stack_copy % 8 != 0) {
      PrintError("--stack-copy " + std::to_string(options->stack_copy) + " is not a multiple of 8");
      return 2;
    }
    options->call_graph = *call_graph == "fp"      ? record::Processor::CallGraph::kFramePointer
                          : *call_graph == "dwarf" ? record::Processor::CallGraph::kDwarf
                                                   : record::Processor::CallGraph::kAuto;
    if (!duration->empty() &&
        !ParseDurationOption("--duration", *duration, &options->duration_ns)) {
      return 2;
    }
    if (options->pid == 0 && options->command.empty()) {
      PrintError("record: give a program to launch (-- PROG ARGS) or --pid PID");
      return 2;
    }
    if (options->pid != 0 && !options->command.empty()) {
      PrintError("record: give either a program to launch or --pid, not both");
      return 2;
    }
    return RunRecording(*options, *quiet);
  };
}

}  // namespace microscope::cli
