// The typed events the event sources hand the processor (event_source.h),
// apart from the loaders that read them, so that the processor knows the
// events and not the BPF programs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/record/user_regs.h"

namespace microscope::record {

// An interval a thread spent off CPU (off-CPU source).
struct OffCpuInterval {
  uint64_t start_ns = 0;  // 0: off CPU since before the recording (cut at start)
  uint64_t end_ns = 0;    // 0: still off CPU at the end (cut at end)
  uint64_t time_ns = 0;   // when the stacks were taken (orders it among samples)
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t waker_tid = 0;
  uint32_t waker_pid = 0;
  uint8_t state = 0;  // capture::OffCpuState
  uint8_t flags = 0;  // capture::kOffCpu* bits
  bool has_regs = false;
  std::string comm;
  std::string waker_comm;
  std::vector<uint64_t> kernel_stack;  // innermost first
  UserRegs regs = {};
  std::vector<uint8_t> user_stack;    // from regs SP upward
  std::vector<uint8_t> runtime_walk;  // the thread's interpreted frames then (empty: none)
};

// Intervals too short to keep, counted per thread and state (off-CPU source).
struct OffCpuShortCount {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint8_t state = 0;
  uint64_t count = 0;
  uint64_t total_ns = 0;
};

// A finished system call (system-call source).
struct SyscallEvent {
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  uint64_t duration_ns = 0;
  int64_t ret = 0;  // -errno on failure
  uint64_t args[3] = {};
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t nr = 0;   // x86-64 system call number
  std::string comm;  // the thread's name
  // Calls at least stack_min_ns long: the caller's user registers and stack
  // at the call's exit.
  bool has_stack = false;
  UserRegs regs = {};
  std::vector<uint8_t> user_stack;
  std::vector<uint8_t> runtime_walk;  // the caller's interpreted frames (empty: none)
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

}  // namespace microscope::record
