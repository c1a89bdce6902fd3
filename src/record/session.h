// A recording session: launch a program (or attach to a PID), run the
// collector until the target exits, the duration passes or the user
// interrupts, then process and write the capture.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/record/bpf_offcpu.h"
#include "src/record/bpf_syscalls.h"
#include "src/record/decode.h"
#include "src/record/processor.h"

namespace microscope::record {

struct RecordOptions {
  std::string output = "microscope.mscap";
  uint32_t frequency = 999;
  uint64_t duration_ns = 0;  // 0: until the target exits or Ctrl-C
  bool quiet = false;
  uint32_t mmap_pages = 0;  // ring data pages per CPU (power of two); 0: by call graph
  Processor::CallGraph call_graph = Processor::CallGraph::kAuto;
  uint32_t stack_copy = 16384;  // bytes of user stack per sample (dwarf, auto)
  std::string preset = "default";
  // "now": name frames from this host's files before writing; "later":
  // store module identities and offsets only (`microscope symbolize`).
  std::string symbolize = "now";
  // BPF parts. Off-CPU intervals (sched_switch) of the target's threads;
  // shorter ones than off_cpu_min_ns are only counted.
  bool off_cpu = false;
  uint64_t off_cpu_min_ns = 20000;
  // System calls (raw_syscalls) of the target's threads; calls at least
  // syscall_stack_min_ns long carry the caller's user stack (0: none).
  bool syscalls = false;
  uint64_t syscall_stack_min_ns = 0;
  // false: no CPU samples, only the process and mapping records the BPF
  // parts need (`microscope syscalls`); then the BPF parts are required.
  bool samples = true;
  std::vector<std::string> command;  // launch mode
  int pid = 0;                       // attach mode when non-zero
};

// Host, kernel release, clock and recorder name in a capture's settings.
void FillRecordingHost(capture::Settings* s);
// A wait status as a shell reports it (exit code, or 128 + signal).
int ExitStatusForShell(int wait_status);
// CLOCK_MONOTONIC in ns: the clock of samples and BPF events.
uint64_t MonotonicNowNs();

// Ctrl-C, SIGTERM and SIGHUP end a recording: they set StopSignal().
void CatchStopSignals();
int StopSignal();

// Records and writes the capture. Returns the exit status `record` should
// end with: the launched program's, or 0 for an attach.
Result<int> RunRecord(const RecordOptions& options);

// Decodes the records at the front of each arena stamped at or before
// `watermark`, feeds them to `processor` in time order, and erases them from
// the arenas. Malformed records become counted problems.
// Events read from the BPF programs, each list in the order of the time
// its stacks were taken (off-CPU: time_ns; calls: their exit).
struct BpfEvents {
  std::vector<OffCpuInterval> off_cpu;
  std::vector<SyscallEvent> syscalls;
};

// BPF events (`bpf`, when given) stamped at or before the watermark are
// merged in by time and erased.
void PumpArenas(std::vector<std::vector<uint8_t>>* arenas, const SampleLayout& layout,
                uint64_t watermark, Processor* processor, BpfEvents* bpf = nullptr);

// Decodes every record of every arena and feeds them to `processor` in time
// order. Malformed records become counted problems.
void ProcessArenas(const std::vector<std::vector<uint8_t>>& arenas, const SampleLayout& layout,
                   Processor* processor);

}  // namespace microscope::record
