// What a recording is asked to do: the record and syscalls commands fill
// it, the recording (session.h) and its event sources (sources.h) read it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/record/processor.h"
#include "src/record/snapshot_trigger.h"
#include "src/record/target_memory.h"

namespace microscope::record {

struct RecordOptions {
  std::string output = "microscope.mscap";
  uint32_t frequency = 999;
  uint64_t duration_ns = 0;  // 0: until the target exits or a stop is asked for
  uint32_t mmap_pages = 0;   // ring data pages per CPU (power of two); 0: by call graph
  Processor::CallGraph call_graph = Processor::CallGraph::kAuto;
  uint32_t stack_copy = 16384;  // bytes of user stack per sample (dwarf, auto)
  std::string preset = "default";
  // "now": name frames from this host's files before writing; "later":
  // store module identities and offsets only (`microscope symbolize`).
  std::string symbolize = "now";
  // Event sources. Off-CPU intervals (sched_switch) of the target's threads;
  // shorter ones than off_cpu_min_ns are only counted.
  bool off_cpu = false;
  // Time off CPU totalled per thread from the scheduler's own counts
  // (schedstat, and each thread's at its exit by BPF: exit_source.h), in
  // two states (blocked; runnable, waiting for a CPU): nothing runs at a
  // context switch (record --level 0).
  bool off_cpu_totals = false;
  uint64_t off_cpu_min_ns = 20000;
  // System calls (raw_syscalls) of the target's threads; calls at least
  // syscall_stack_min_ns long carry the caller's user stack (0: none).
  bool syscalls = false;
  uint64_t syscall_stack_min_ns = 0;
  // The targets' own counters every 100 ms (readings_source.h): schedstat,
  // their cgroup's CPU quota and throttling, pressure.
  bool readings = false;
  // false: no CPU samples, only the process and mapping records the event
  // sources need (`microscope syscalls`); then the sources are required.
  bool samples = true;
  // false: the samples carry no call chain (record --level 0): counts by
  // thread, no stacks, no user stack copy, no runtimes' walks.
  bool stacks = true;
  // Each runtime's frames (src/runtimes/runtime.h; by its name: "python",
  // "node"), walked by BPF at every stack: "auto" (when BPF loads; otherwise
  // said once the runtime appears), "bpf" (required), "off". A runtime not
  // named here is "auto".
  std::map<std::string, std::string, std::less<>> runtimes;
  // The most interpreted frames a walk keeps, every runtime alike (each
  // also stops at what its walk has room for: bpf/walk.h).
  uint32_t runtime_frames = 1024;
  std::string_view RuntimeMode(std::string_view runtime) const {
    auto it = runtimes.find(runtime);
    return it != runtimes.end() ? std::string_view(it->second) : std::string_view("auto");
  }
  // The program's own probes (sdk/) to record: "all", names and NAME*
  // prefixes separated by commas; empty: none.
  std::string probes;
  // The most bytes kept for what the targets write (perf maps, jitdumps,
  // GDB JIT objects, probe rings), in all: target_memory.h.
  uint64_t target_memory = kDefaultTargetMemory;
  // Always-on. Keep only the rows of the last rolling_ns in memory (0: every
  // row); the capture written at the end, and each snapshot, holds that window.
  uint64_t rolling_ns = 0;
  // Non-empty: publish a capture of each segment_ns into this directory
  // (capture/segments.h) instead of one capture at `output`, deleting the
  // oldest once older than retain_ns or past retain_bytes in all (0: no limit).
  std::string continuous_dir;
  uint64_t segment_ns = 10'000'000'000;
  uint64_t retain_ns = 0;
  uint64_t retain_bytes = 0;
  // With rolling_ns or continuous_dir: a snapshot when one of these fires
  // (snapshot_trigger.h), at most one per snapshot_min_interval_ns.
  std::vector<SnapshotTrigger> snapshot_when;
  uint64_t snapshot_min_interval_ns = 10'000'000'000;
  // The share of one CPU the recorder keeps its own cost to (millionths;
  // 0: no budget): budget.h.
  uint32_t budget_ppm = 0;
  std::vector<std::string> command;  // launch mode
  int pid = 0;                       // attach mode when non-zero
};

}  // namespace microscope::record
