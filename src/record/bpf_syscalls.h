// Loads bpf/syscalls.bpf.c (the only code that includes its skeleton) and
// reads its events: every system call of the followed processes (and of the
// children they fork) with entry time, duration, return value and first
// arguments.
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

class SyscallTracer {
 public:
  struct Options {
    uint64_t stack_min_ns = 0;             // calls this long carry a user stack (0: none)
    uint32_t stack_copy = 16384;           // bytes of user stack per slow call
    uint32_t walk_frames = 1024;           // interpreted frames per walk (bpf/walk.h)
    SharedBpfMaps* shared_maps = nullptr;  // the runtimes' walker maps, to walk their frames too
  };
  // Loads and attaches the programs, following `pids` (tgids). Errors say
  // what the kernel refused (no BTF, no permission).
  static Result<std::unique_ptr<SyscallTracer>> Start(const Options& options,
                                                      std::span<const int32_t> pids);
  ~SyscallTracer();
  SyscallTracer(const SyscallTracer&) = delete;
  SyscallTracer& operator=(const SyscallTracer&) = delete;

  Status Follow(int32_t pid);
  // Appends the events that are ready, waiting up to `timeout_ms` for one.
  Status Poll(int timeout_ms, std::vector<SyscallEvent>* out);
  // Calls whose event found the ring full.
  uint64_t lost() const;

  // Readable when events are waiting (the BPF ring's epoll fd).
  int wait_fd() const;

  struct State;  // libbpf's objects; defined in the .cc only

 private:
  explicit SyscallTracer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace microscope::record
