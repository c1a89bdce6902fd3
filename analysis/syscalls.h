// System calls as `strace -c` summarizes them: per call name the count,
// the failures, and the total, mean and longest time; and the slowest
// single calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capture/capture.h"

namespace microscope::analysis {

// The kernel's name for an x86-64 system call number ("read", "openat"),
// from <asm/unistd_64.h> at build time; "syscall_N" for numbers it lacks.
std::string SyscallName(uint32_t nr);

// The errno name of a failed call's return value ("ENOENT"), or "" when the
// value is no error (-4095..-1 are errors, as the kernel returns them).
std::string ErrnoName(int64_t ret);

struct SyscallRow {
  uint32_t nr = 0;
  std::string name;
  uint64_t calls = 0;
  uint64_t errors = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
  uint64_t mean_ns() const { return calls == 0 ? 0 : total_ns / calls; }
};

struct SlowCall {
  size_t index = 0;  // row in capture.syscalls
  uint32_t nr = 0;
  std::string name;
  capture::ThreadId thread = capture::kNone;
  uint64_t time = 0;
  uint64_t duration_ns = 0;
  int64_t ret = 0;
  capture::StackId stack = capture::kNone;  // the caller's user stack, for slow calls
};

struct SyscallTable {
  std::vector<SyscallRow> rows;   // by total time, longest first; ties by name
  std::vector<SlowCall> slowest;  // longest first; ties by start time
  uint64_t calls = 0;
  uint64_t errors = 0;
  uint64_t total_ns = 0;
};

SyscallTable ComputeSyscalls(const capture::Capture& c, size_t slowest = 10);

}  // namespace microscope::analysis
