// Loads bpf/offcpu.bpf.c (the only code that includes its skeleton) and
// reads its events: each interval a followed thread spent off CPU, at least
// `min_ns` long, with its state, its waker and its stacks (kernel frames, and
// the user registers and stack bytes our unwinder needs); shorter intervals
// are only counted.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/record/source_events.h"

namespace microscope::record {

class SharedBpfMaps;  // bpf_loader.h

struct OffCpuLoss {
  uint64_t intervals = 0;  // sent into a full ring
  uint64_t total_ns = 0;
  uint64_t untracked = 0;  // switch-outs the map of open intervals had no room for
  uint64_t malformed = 0;  // events shorter than their fixed part or tail (dropped)
};

class OffCpuTracer {
 public:
  struct Options {
    uint64_t min_ns = 20000;
    uint32_t stack_copy = 16384;           // bytes of user stack per interval
    uint32_t walk_frames = 1024;           // interpreted frames per walk (bpf/walk.h)
    SharedBpfMaps* shared_maps = nullptr;  // the runtimes' walker maps, to walk their frames too
  };
  // Loads and attaches the programs, following `pids` (tgids) and the
  // processes they start. Errors say what the kernel refused.
  static Result<std::unique_ptr<OffCpuTracer>> Start(const Options& options,
                                                     std::span<const int32_t> pids);
  ~OffCpuTracer();
  OffCpuTracer(const OffCpuTracer&) = delete;
  OffCpuTracer& operator=(const OffCpuTracer&) = delete;

  Status Follow(int32_t pid);
  // A thread found off CPU when the recording began (attach): its interval
  // starts then and is marked cut at start.
  Status SeedOffCpu(int32_t pid, int32_t tid, uint8_t state);
  // Takes a seed back (the thread was seen running after all), unless the
  // program has meanwhile seen the thread switch.
  void Unseed(int32_t tid);
  // Appends the intervals that are ready, waiting up to `timeout_ms`.
  Status Poll(int timeout_ms, std::vector<OffCpuInterval>* out);
  // Detaches the programs and appends what remains: intervals still open
  // (cut at end, no stacks) and intervals switched in but never sent.
  Status Finish(std::vector<OffCpuInterval>* out);
  std::vector<OffCpuShortCount> ShortCounts() const;
  OffCpuLoss Loss() const;

  // Readable when events are waiting (the BPF ring's epoll fd).
  int wait_fd() const;

  struct State;  // libbpf's objects; defined in the .cc only

 private:
  explicit OffCpuTracer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The state letter of /proc/PID/task/TID/stat as an OffCpuState; -1 when the
// thread is running or gone (a zombie).
int OffCpuStateOfLetter(char letter);

}  // namespace microscope::record
