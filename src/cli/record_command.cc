#include <cstdlib>
#include <map>
#include <memory>

#include "base/duration.h"
#include "src/cli/commands.h"
#include "src/cli/push.h"
#include "src/cli/recording.h"
#include "src/probes/probe_source.h"
#include "src/record/budget.h"
#include "src/record/proc.h"
#include "src/record/snapshot_trigger.h"
#include "src/runtimes/runtime.h"

namespace microscope::cli {

namespace {

// `text` read by `parse`, positive, into *out; otherwise prints the error.
bool ParsePositive(const char* option, const std::string& text,
                   Result<uint64_t> (*parse)(std::string_view), const char* what, uint64_t* out) {
  Result<uint64_t> v = parse(text);
  if (v.ok() && *v == 0) v = Status::Error("'" + text + "' is not a positive " + what);
  if (!v.ok()) {
    PrintError(std::string(option) + ": " + v.status().message());
    return false;
  }
  *out = *v;
  return true;
}

}  // namespace

bool ParseDurationOption(const char* option, const std::string& text, uint64_t* ns) {
  return ParsePositive(option, text, ParseDuration, "duration", ns);
}

bool ParseSizeOption(const char* option, const std::string& text, uint64_t* bytes) {
  return ParsePositive(option, text, ParseByteSize, "size", bytes);
}

void AddSyscallStackMinOption(CLI::App* cmd, std::string* text) {
  cmd->add_option("--syscall-stack-min", *text,
                  "system calls lasting at least TIME also store the caller's user stack "
                  "(e.g. 1ms; default: no stacks)");
}

namespace {

// record's flags as given, before the preset fills what they left open.
struct RecordFlags {
  record::RecordOptions options;
  bool quiet = false;
  std::string duration;
  std::string call_graph = "auto";
  std::string off_cpu_min = "20us";
  std::string stack_min;
  std::string target_memory;
  CLI::Option* freq = nullptr;
  CLI::Option* stack = nullptr;
  CLI::Option* off_cpu = nullptr;
  CLI::Option* probes = nullptr;
  CLI::Option* preset = nullptr;
  CLI::Option* off_cpu_min_option = nullptr;
  CLI::Option* syscalls = nullptr;
  std::map<std::string, CLI::Option*> runtime_modes;
  int level = -1;                // --level: -1 not given
  uint32_t level_frequency = 0;  // the level's own rate; 0: its preset's
  // Always-on.
  std::string rolling;
  std::string segment;
  std::string retain;
  std::string retain_bytes;
  std::string budget;
  PushOptions push;
  std::string push_queue;
  std::vector<std::string> snapshot_when;  // parsed into options.snapshot_when
  std::string snapshot_min_interval;
};

// What is sampled and how: rate, stacks, the process, off-CPU time.
void AddSamplingFlags(CLI::App* cmd, RecordFlags* f) {
  cmd->add_option("-o,--output", f->options.output, "capture file to write")->capture_default_str();
  f->freq = cmd->add_option("-F,--frequency", f->options.frequency, "samples per second per thread")
                ->check(CLI::Range(1u, 100000u));
  f->preset =
      cmd->add_option("--preset", f->options.preset,
                      "rate and stack copy: quick (499 Hz, 8 KiB), default (999 Hz, 16 KiB), "
                      "deep (3999 Hz, 64 KiB); -F and --stack-copy override")
          ->capture_default_str()
          ->check(CLI::IsMember({"quick", "default", "deep"}));
  cmd->add_option(
         "--level", f->level,
         "depth for its cost, one number: 0 CPU samples (99 Hz, by events on every CPU) "
         "counted by thread, no stacks, and time off CPU totalled by thread from the "
         "scheduler's own counts (blocked; runnable, waiting for a CPU); 1 the quick preset; "
         "2 the default preset; 3 the deep preset (with --off-cpu) plus system calls, those "
         "of 1 ms or more with their stacks, and every runtime's frames. Flags given "
         "beside it override it. Measured here (bench/overhead.py, 2 CPUs, the program's "
         "slowdown, medians): level 0 +0.2 to +1.0% on a CPU-bound C program and +1.0 to "
         "+2.0% on two threads waking each other in turn (perf record -g: +9.6% and +55% "
         "in the same run); levels 1/2/3 +5.4/+8.7/+14.5% on the C program (perf -g "
         "+3.1%), +1.8/+1.4/+10.8% on a Node.js one (+1.5%), +47/+44/+137% on the "
         "ping-pong (+54%): their events on each thread cost at every switch")
      ->check(CLI::Range(0, 3));
  cmd->add_option("-g,--call-graph", f->call_graph,
                  "user stacks: fp (kernel frame-pointer chain), dwarf (CFI unwinding of the "
                  "copied stack), auto (CFI where a module has it, frame pointers where not)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp", "dwarf", "auto"}));
  f->stack =
      cmd->add_option(
             "--stack-copy", f->options.stack_copy,
             "bytes of user stack copied per sample for dwarf/auto (multiple of 8, max 65528); "
             "with BPF, for a thread whose need is not yet learned and whose stack's mapping "
             "is not found")
          ->check(CLI::Range(8u, 65528u));
  cmd->add_option("-p,--pid", f->options.pid, "attach to this running process")->check(PidCheck());
  cmd->add_option("-d,--duration", f->duration, "stop after TIME (e.g. 10s, 500ms, 2m)");
  cmd->add_option("-m,--mmap-pages", f->options.mmap_pages,
                  "ring buffer data pages per CPU, a power of two (more: fewer losses). "
                  "Default: 256 with -g fp; with a stack copy, room for a quarter second of "
                  "samples per CPU: 512 (quick), 2048 (default), 16384 (deep) pages")
      ->check(CLI::Range(1u, 1u << 16));
  cmd->add_option("--symbolize", f->options.symbolize,
                  "now: name frames (functions, file:line, inlined calls) from this host's "
                  "files; later: store build IDs and offsets only, name them with "
                  "`microscope symbolize` (on any host)")
      ->capture_default_str()
      ->check(CLI::IsMember({"now", "later"}));
  f->off_cpu = cmd->add_flag(
      "--off-cpu,!--no-off-cpu", f->options.off_cpu,
      "record time off CPU (BPF, sched_switch): each interval's state, waker and stacks "
      "(on in the deep preset)");
  f->off_cpu_min_option =
      cmd->add_option("--off-cpu-min", f->off_cpu_min,
                      "off-CPU intervals shorter than TIME are only counted, without stacks")
          ->capture_default_str();
}

// The sources beside the samples: each registered runtime's frames, system
// calls, probes, and the memory what the targets write may take.
void AddSourceFlags(CLI::App* cmd, RecordFlags* f) {
  for (const runtimes::Runtime* r : runtimes::Registered()) {  // --python, --node
    std::string& mode = f->options.runtimes[std::string(r->name)];
    mode = "auto";
    f->runtime_modes[std::string(r->name)] =
        cmd->add_option("--" + std::string(r->name), mode,
                        std::string(r->help) +
                            ": auto (when BPF loads, otherwise say why), bpf (required), off")
            ->capture_default_str()
            ->check(CLI::IsMember({"auto", "bpf", "off"}));
  }
  cmd->add_option("--runtime-frames", f->options.runtime_frames,
                  "the most Python or JavaScript frames a stack keeps; deeper stacks keep their "
                  "innermost and say they were cut (at most 2045 Python, 1168 JavaScript frames)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 2045u));
  f->syscalls =
      cmd->add_flag("--syscalls", f->options.syscalls,
                    "also trace the target's system calls (BPF on raw_syscalls), as `microscope "
                    "syscalls` does, in the same capture");
  AddSyscallStackMinOption(cmd, &f->stack_min);
  cmd->add_flag("--readings", f->options.readings,
                "also read, every 100 ms, the target's own counters: each thread's schedstat "
                "(on CPU, waiting for a CPU), its cgroup's CPU quota and throttling, pressure "
                "(PSI); the capture's readings table");
  f->probes =
      cmd->add_option("--probes", f->options.probes,
                      "the program's own zones, marks, labels and counters (sdk/: C, C++, Python, "
                      "Node) to record: all, NAME or PREFIX*, several separated by commas");
  cmd->add_option("--target-memory", f->target_memory,
                  "most memory kept, in all, for what the profiled programs write and the "
                  "recorder reads: their perf maps, jitdumps, GDB JIT objects and probe rings "
                  "(default 256M); past it a program's are no longer read, with a note in the "
                  "capture, and the recording goes on");
}

// --rolling, --continuous and what goes with them.
void AddAlwaysOnFlags(CLI::App* cmd, RecordFlags* f) {
  cmd->add_option("--rolling", f->rolling,
                  "keep only the last TIME in memory (e.g. 60s), for a run of any length; "
                  "the capture written at the end and each snapshot hold that window")
      ->group("Always-on");
  cmd->add_option("--continuous", f->options.continuous_dir,
                  "publish a complete capture of each segment into DIR "
                  "(microscope-TIME-PID-N.mscap) instead of one at -o")
      ->group("Always-on");
  cmd->add_option("--segment", f->segment, "length of each --continuous segment (default 10s)")
      ->group("Always-on");
  cmd->add_option("--retain", f->retain,
                  "delete --continuous segments older than TIME (e.g. 1h, 7d)")
      ->group("Always-on");
  cmd->add_option("--retain-bytes", f->retain_bytes,
                  "delete the oldest --continuous segments past SIZE in all (e.g. 500M, 2G)")
      ->group("Always-on");
  cmd->add_option(
         "--snapshot-when", f->snapshot_when,
         "with --rolling or --continuous: take a snapshot (as SIGUSR1 does) when the "
         "program's probes or the recording say so: counter:NAME>VALUE (or <VALUE), "
         "zone:NAME>TIME (a zone that lasted longer, e.g. zone:request>50ms), mark:NAME, "
         "cpu:THREAD>PERCENT (threads of that name over the last second of samples), "
         "offcpu:STATE>TIME (time off CPU in a state, sleeping, uninterruptible, preempted "
         "or other, in the intervals that ended in the last second; with --off-cpu) or "
         "lost>N (records lost since the start); repeatable; the probes named are recorded")
      ->group("Always-on");
  cmd->add_option("--snapshot-min-interval", f->snapshot_min_interval,
                  "at most one --snapshot-when snapshot per TIME (default 10s); firings sooner "
                  "are counted in the capture's notes, not taken")
      ->group("Always-on");
  cmd->add_option("--budget", f->budget,
                  "keep the recorder's own cost (its CPU time and its BPF programs' run time) "
                  "within this share of one CPU, e.g. 1%: it samples less often, unwinds fewer "
                  "stack bytes and drops the runtimes' frame walks step by step while over, and "
                  "steps back while well under; each change is in the capture (needs BPF)")
      ->group("Always-on");
  cmd->add_option("--push", f->push.url,
                  "send each --continuous segment as pprof to a continuous-profiling store's "
                  "ingest (Pyroscope's POST /ingest?format=pprof: Grafana Pyroscope, Alloy's "
                  "receiver), e.g. http://pyroscope:4040; queued on disk in DIR/.push and retried "
                  "with backoff, never holding up the recording")
      ->group("Always-on");
  cmd->add_option("--push-app", f->push.app,
                  "the application name profiles are filed under (default: the program's name)")
      ->group("Always-on");
  cmd->add_option("--push-queue", f->push_queue,
                  "most bytes of profiles waiting to be sent (default 64M); past it the oldest go")
      ->group("Always-on");
}

void AddRecordFlags(CLI::App* app, RecordFlags* f) {
  CLI::App* cmd = app->add_subcommand(
      "record",
      "Sample a program's CPU time with call stacks into a capture file.\n"
      "  microscope record [-o FILE] [-F HZ] [--duration TIME] -- PROG ARGS...\n"
      "  microscope record --pid PID [--duration TIME]\n"
      "Launch mode follows every thread and child process; it ends when PROG exits\n"
      "(exit status: PROG's), at --duration (PROG then gets SIGTERM), or at Ctrl-C.\n"
      "Attach mode ends at Ctrl-C, --duration, or the target's exit; the target runs on.");
  AddSamplingFlags(cmd, f);
  AddSourceFlags(cmd, f);
  AddAlwaysOnFlags(cmd, f);
  cmd->add_flag("-q,--quiet", f->quiet, "no status line or summary on stderr");
  cmd->add_option("command", f->options.command, "program and arguments to launch (after --)");
}

// --rolling, --continuous and their settings; false after printing why
// they do not go together.
bool ResolveAlwaysOn(RecordFlags& f) {
  record::RecordOptions& o = f.options;
  if (!f.budget.empty() && !record::ParseBudget(f.budget, &o.budget_ppm)) {
    PrintError("--budget '" + f.budget +
               "': a share of one CPU in percent, over 0 and at most "
               "100%, e.g. 1% or 0.5%");
    return false;
  }
  const bool continuous = !o.continuous_dir.empty();
  if (!f.rolling.empty() && !ParseDurationOption("--rolling", f.rolling, &o.rolling_ns))
    return false;
  if (o.rolling_ns != 0 && continuous) {
    PrintError("--rolling and --continuous do not go together: segments already bound memory");
    return false;
  }
  for (const auto& [flag, text] :
       {std::pair<const char*, const std::string&>{"--segment", f.segment},
        {"--retain", f.retain},
        {"--retain-bytes", f.retain_bytes}}) {
    if (!text.empty() && !continuous) {
      PrintError(std::string(flag) + " needs --continuous DIR");
      return false;
    }
  }
  if (!f.segment.empty() && !ParseDurationOption("--segment", f.segment, &o.segment_ns))
    return false;
  if (!f.snapshot_when.empty() || !f.snapshot_min_interval.empty()) {
    if (o.rolling_ns == 0 && !continuous) {
      PrintError(
          "--snapshot-when takes snapshots of an always-on recording: give --rolling TIME "
          "or --continuous DIR");
      return false;
    }
    if (f.snapshot_when.empty()) {
      PrintError("--snapshot-min-interval goes with --snapshot-when");
      return false;
    }
    if (!f.snapshot_min_interval.empty() &&
        !ParseDurationOption("--snapshot-min-interval", f.snapshot_min_interval,
                             &o.snapshot_min_interval_ns)) {
      return false;
    }
    // The probes the triggers name are recorded (beside those --probes asked for).
    for (const std::string& text : f.snapshot_when) {
      Result<record::SnapshotTrigger> t = record::ParseSnapshotTrigger(text);
      if (!t.ok()) {
        PrintError(t.status().message());
        return false;
      }
      o.snapshot_when.push_back(*t);
      using Kind = record::SnapshotTrigger::Kind;
      if (t->kind == Kind::kOffCpu && !o.off_cpu) {
        PrintError("--snapshot-when '" + text +
                   "': off-CPU intervals are recorded with --off-cpu (or --preset deep)");
        return false;
      }
      if (t->kind != Kind::kCounter && t->kind != Kind::kZone && t->kind != Kind::kMark) continue;
      if (t->name.find_first_of(",*") != std::string::npos) {
        PrintError("--snapshot-when '" + text + "': a probe's name, without ',' or '*'");
        return false;
      }
      if (o.probes != "all") o.probes += (o.probes.empty() ? "" : ",") + t->name;
    }
  }
  if (!f.push.url.empty() || !f.push.app.empty() || !f.push_queue.empty()) {
    if (!continuous) {
      PrintError("--push sends --continuous segments: give --continuous DIR");
      return false;
    }
    if (f.push.url.empty()) {
      PrintError("--push-app and --push-queue go with --push URL");
      return false;
    }
    if (Result<std::pair<std::string, std::string>> e = IngestEndpoint(f.push.url); !e.ok()) {
      PrintError(e.status().message());
      return false;
    }
    if (!f.push_queue.empty() &&
        !ParseSizeOption("--push-queue", f.push_queue, &f.push.queue_bytes)) {
      return false;
    }
    f.push.dir = o.continuous_dir;
  }
  if (o.segment_ns < 100'000'000) {
    PrintError("--segment " + f.segment + ": at least 100ms");
    return false;
  }
  if (!f.retain.empty() && !ParseDurationOption("--retain", f.retain, &o.retain_ns)) return false;
  if (!f.retain_bytes.empty() &&
      !ParseSizeOption("--retain-bytes", f.retain_bytes, &o.retain_bytes)) {
    return false;
  }
  return true;
}

// Fills in the preset and reads the durations; false (after printing the
// error) when the flags do not make a recording.
// --level N: what it sets, where the user's own flags did not.
bool ResolveLevel(RecordFlags& f) {
  if (f.level < 0) return true;
  if (f.preset->count() > 0) {
    PrintError("give --level or --preset, not both: levels 1 to 3 are the presets");
    return false;
  }
  static const char* const kLevelPresets[] = {"quick", "quick", "default", "deep"};
  f.options.preset = kLevelPresets[f.level];
  if (f.level == 0) {
    // Counts, not stacks: samples without a call chain (on every task of
    // each CPU, where a context switch costs the target nothing), time off
    // CPU totalled per thread from the scheduler's own counts (nothing runs
    // at a switch), no walks. --off-cpu asks for the intervals instead.
    f.options.stacks = false;
    // 99 Hz: each sample's interrupt is most of level 0's cost in the
    // program's own time.
    f.level_frequency = 99;
    f.options.call_graph = record::Processor::CallGraph::kFramePointer;
    f.call_graph = "fp";
    if (f.off_cpu->count() == 0) f.options.off_cpu_totals = true;
    if (f.off_cpu->count() > 0 && f.off_cpu_min_option->count() == 0) f.off_cpu_min = "1000d";
    for (auto& [name, option] : f.runtime_modes) {
      if (option->count() == 0) f.options.runtimes[name] = "off";
    }
  } else if (f.level == 3) {
    if (f.syscalls->count() == 0) f.options.syscalls = true;
    if (f.options.syscalls && f.stack_min.empty()) f.stack_min = "1ms";
  }
  return true;
}

bool ResolveRecordFlags(RecordFlags& f) {
  if (!ResolveLevel(f)) return false;
  // The preset fills what the user did not set explicitly.
  struct Preset {
    const char* name;
    uint32_t frequency;
    uint32_t stack_copy;
  };
  static constexpr Preset kPresets[] = {
      {"quick", 499, 8192}, {"default", 999, 16384}, {"deep", 3999, 65528}};
  for (const Preset& p : kPresets) {
    if (f.options.preset != p.name) continue;
    if (f.freq->count() == 0) {
      f.options.frequency = f.level_frequency != 0 ? f.level_frequency : p.frequency;
    }
    if (f.stack->count() == 0) f.options.stack_copy = p.stack_copy;
  }
  if (f.off_cpu->count() == 0 && f.options.preset == "deep") f.options.off_cpu = true;
  if (!f.stack_min.empty()) {
    if (!f.options.syscalls) {
      PrintError("--syscall-stack-min needs --syscalls");
      return false;
    }
    if (!ParseDurationOption("--syscall-stack-min", f.stack_min, &f.options.syscall_stack_min_ns)) {
      return false;
    }
  }
  if (!ParseDurationOption("--off-cpu-min", f.off_cpu_min, &f.options.off_cpu_min_ns)) return false;
  if (!f.target_memory.empty() &&
      !ParseSizeOption("--target-memory", f.target_memory, &f.options.target_memory)) {
    return false;
  }
  if (f.probes->count() > 0) {
    if (Result<std::string> lines = probes::SelectionLines(f.options.probes); !lines.ok()) {
      PrintError("--probes '" + f.options.probes + "': " + lines.status().message());
      return false;
    }
  }
  if (f.options.stack_copy % 8 != 0) {
    PrintError("--stack-copy " + std::to_string(f.options.stack_copy) + " is not a multiple of 8");
    return false;
  }
  f.options.call_graph = f.call_graph == "fp"      ? record::Processor::CallGraph::kFramePointer
                         : f.call_graph == "dwarf" ? record::Processor::CallGraph::kDwarf
                                                   : record::Processor::CallGraph::kAuto;
  if (!f.duration.empty() &&
      !ParseDurationOption("--duration", f.duration, &f.options.duration_ns)) {
    return false;
  }
  if (!ResolveAlwaysOn(f)) return false;
  if (f.options.pid == 0 && f.options.command.empty()) {
    PrintError("record: give a program to launch (-- PROG ARGS) or --pid PID");
    return false;
  }
  if (f.options.pid != 0 && !f.options.command.empty()) {
    PrintError("record: give either a program to launch or --pid, not both");
    return false;
  }
  return true;
}

}  // namespace

Runner AddRecordCommand(CLI::App& app) {
  auto flags = std::make_shared<RecordFlags>();
  AddRecordFlags(&app, flags.get());
  return [flags]() -> int {
    if (!ResolveRecordFlags(*flags)) return 2;
    PushOptions& push = flags->push;
    if (!push.url.empty()) {
      push.frequency = flags->options.frequency;
      if (push.app.empty()) {
        // The program's name, as the store lists it.
        std::string program =
            flags->options.command.empty()
                ? record::ReadComm(flags->options.pid)
                : flags->options.command[0].substr(flags->options.command[0].rfind('/') + 1);
        push.app = program.empty() ? "microscope" : program;
      }
    }
    return RunRecording(flags->options, flags->quiet, push);
  };
}

}  // namespace microscope::cli
