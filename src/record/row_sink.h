// Where event sources put what they read: typed rows, handed to the sink
// the recording owns (the processor, which keeps them in time with the
// samples and cuts them into parts). A source names threads, stacks and
// strings through the sink and appends whole rows; it never holds or
// edits the recording's tables, and the sink finishes the rows it was
// given (intervals still open are closed at the end, tables sorted).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "capture/capture.h"
#include "src/record/user_regs.h"

namespace microscope::record {

class RowSink {
 public:
  virtual ~RowSink() = default;

  // The thread an event names as of `time`, named `comm` when no COMM
  // record named it.
  virtual capture::ThreadId EventThread(uint32_t pid, uint32_t tid, uint64_t time,
                                        std::string_view comm) = 0;
  // Names the thread's latest row as its runtime names it (Python's
  // threading) at `time`: the name COMM records give it is not taken after
  // this, but an exec before `time` (processed after) keeps it too.
  virtual void NameThread(uint32_t pid, uint32_t tid, uint64_t time, std::string_view name) = 0;
  // The thread's latest row (it may have exited), or a new one from the start.
  virtual capture::ThreadId LatestThread(uint32_t pid, uint32_t tid) = 0;
  // A stack BPF took at `time`: `kernel` as bpf_get_stack gives it (where
  // it was taken, then return addresses), then, given `regs`, the user
  // frames unwound from them and `user_stack`; spliced (with `walk`, a
  // runtime's walk of the same moment) and interned. `*end` (when given)
  // says how it ended.
  virtual capture::StackId EventStack(uint32_t pid, uint32_t tid, uint64_t time,
                                      std::span<const uint64_t> kernel, const UserRegs* regs,
                                      std::span<const uint8_t> user_stack, capture::StackEnd* end,
                                      std::span<const uint8_t> walk = {}) = 0;
  virtual capture::StringId Intern(std::string_view s) = 0;
  // The recording's start: an interval already open when it began starts there.
  virtual uint64_t start_time() const = 0;
  // When the thread's row begins: its FORK record, or the recording's start
  // for one that was there already.
  virtual uint64_t ThreadStart(capture::ThreadId thread) const = 0;

  // Rows, appended as the pump delivers their events in time order. An
  // off-CPU interval may still be open (end 0): the sink closes it at the
  // end of the recording.
  virtual void Add(const capture::OffCpu::Row& row) = 0;
  virtual void Add(const capture::OffCpuShort::Row& row) = 0;
  virtual void Add(const capture::Syscalls::Row& row) = 0;
  virtual void Add(const capture::ProbeRecords::Row& row) = 0;
  virtual void Add(const capture::Readings::Row& row) = 0;
  // A probe site, once per site: the id its records name.
  virtual capture::ProbeSiteId Add(const capture::ProbeSites::Row& row) = 0;

  virtual void CountProblem(std::string_view kind, std::string_view example,
                            uint64_t times = 1) = 0;
  // Facts about the targets and the recording's own levels.
  virtual void SetExitStatus(uint32_t pid, int status) = 0;
  // The budget's levels (budget.h). From `time` on the kernel keeps one
  // sample in `keep_one_in`: each kept sample stands for that many (its
  // weight is multiplied), so totals stay the CPU time spent.
  virtual void SetSampleScale(uint64_t time, uint32_t keep_one_in) = 0;
  // A window where the recording does not know what happened (a runtime's
  // walker not yet on a process): drawn as a gap, never as idle time.
  virtual void AddGap(const capture::Gap& gap) = 0;
  // Unwinds at most the first `bytes` of each copied user stack (0: all).
  virtual void SetStackLimit(uint32_t bytes) = 0;
};

}  // namespace microscope::record
