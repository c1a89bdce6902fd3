// `microscope syscalls`: a recording of system calls only, traced by BPF
// (bpf/syscalls.bpf.c), no CPU samples. Processes and threads come from the
// events themselves (pid, tid, the thread's name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture/result.h"

namespace microscope::record {

struct SyscallRecordOptions {
  std::string output = "syscalls.mscap";
  std::vector<std::string> command;  // launch mode
  int pid = 0;                       // attach mode when non-zero
  uint64_t duration_ns = 0;          // 0: until the target exits or Ctrl-C
  bool quiet = false;
};

// Traces and writes the capture. Returns the exit status to end with: the
// launched program's, or 0 for an attach.
Result<int> RunSyscallRecord(const SyscallRecordOptions& options);

}  // namespace microscope::record
