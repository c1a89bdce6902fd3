// Processor: the events of the event sources (source_events.h): off-CPU
// intervals and their short counts, system calls. Their stacks are unwound
// from the registers and stack bytes BPF copied, like samples' stacks.
#include <algorithm>

#include "src/record/processor.h"
#include "src/record/row_order.h"

namespace microscope::record {

using capture::kNone;
using capture::StackEnd;

// A thread named by a BPF event: its row, named from the event when no
// COMM record named it.
capture::ThreadId Processor::BpfThread(uint32_t pid, uint32_t tid, uint64_t time,
                                       const std::string& comm) {
  capture::ThreadId thread = EnsureThread(pid, tid, time);
  if (capture_.threads[thread].name == kNone && !comm.empty()) {
    capture_.threads[thread].name = strings_.Intern(comm);
  }
  return thread;
}

// Appends to scratch_ the user frames unwound from registers and stack bytes
// copied by BPF (frame pointers in the copy where a module has no CFI, also
// in fp recordings).
capture::StackEnd Processor::UnwindCopiedStack(const UserRegs& regs, std::span<const uint8_t> stack,
                                               ProcessState& proc) {
  Event e;
  e.regs_abi = 2;  // PERF_SAMPLE_REGS_ABI_64
  e.regs = std::span(reinterpret_cast<const uint8_t*>(regs), sizeof(regs));
  e.stack = stack;
  if (options_.call_graph != CallGraph::kFramePointer) return UnwindUser(e, proc);
  options_.call_graph = CallGraph::kAuto;
  StackEnd end = UnwindUser(e, proc);
  options_.call_graph = CallGraph::kFramePointer;
  return end;
}

void Processor::AddSyscall(const SyscallEvent& call) {
  capture::ThreadId thread = BpfThread(call.pid, call.tid, call.start_ns, call.comm);
  capture::StackId stack = kNone;
  if (call.has_stack) {
    scratch_.clear();
    UnwindCopiedStack(call.regs, call.user_stack, EnsureProcess(call.pid, call.start_ns));
    stack = InternScratch(call.pid, call.tid, call.end_ns());
  }
  capture::Syscalls& y = capture_.syscalls;
  y.time.push_back(call.start_ns);
  y.duration.push_back(call.duration_ns);
  y.thread.push_back(thread);
  y.nr.push_back(call.nr);
  y.ret.push_back(call.ret);
  y.arg0.push_back(call.args[0]);
  y.arg1.push_back(call.args[1]);
  y.arg2.push_back(call.args[2]);
  y.stack.push_back(stack);
}

void Processor::AddOffCpu(const OffCpuInterval& iv) {
  const uint64_t start = iv.start_ns != 0 ? iv.start_ns : capture_.settings.start_time;
  const uint64_t end = iv.end_ns;  // 0 (still off CPU): closed by Finish
  capture::ThreadId thread = BpfThread(iv.pid, iv.tid, std::max(start, iv.time_ns), iv.comm);
  ProcessState& proc = EnsureProcess(iv.pid, iv.time_ns);
  scratch_.clear();
  // bpf_get_stack's first address is where the stack was taken; the rest
  // are return addresses.
  for (size_t i = 0; i < iv.kernel_stack.size(); ++i) {
    uint64_t a = iv.kernel_stack[i];
    if (a >= kContextMax || a < 0xffff800000000000ull) continue;  // not a kernel text address
    scratch_.push_back(KernelFrame(i == 0 ? a : a - 1));
  }
  StackEnd stack_end =
      iv.has_regs ? UnwindCopiedStack(iv.regs, iv.user_stack, proc) : StackEnd::kKernelOnly;
  if (scratch_.empty()) stack_end = StackEnd::kEmpty;
  capture::OffCpu& o = capture_.off_cpu;
  o.start.push_back(start);
  o.end.push_back(end);
  o.thread.push_back(thread);
  o.stack.push_back(InternScratch(iv.pid, iv.tid, iv.time_ns));
  o.stack_end.push_back(stack_end);
  o.state.push_back(
      capture::OffCpuState(std::min<uint8_t>(iv.state, capture::kOffCpuStateCount - 1)));
  o.waker_tid.push_back(int32_t(iv.waker_tid));
  o.waker_name.push_back(iv.waker_tid != 0 ? strings_.Intern(iv.waker_comm) : kNone);
  o.flags.push_back(uint8_t(iv.flags & capture::kOffCpuFlagsMask));
}

void Processor::AddOffCpuShort(const OffCpuShortCount& c) {
  capture::OffCpuShort& s = capture_.off_cpu_short;
  // Counts are read at the end: the thread may have exited by then. Its
  // latest row is the one they belong to.
  capture::ThreadId thread = kNone;
  if (auto live = threads_.find(c.tid); live != threads_.end()) {
    thread = live->second;
  } else {
    for (size_t i = capture_.threads.size(); i-- > 0;) {
      if (capture_.threads[i].tid == int32_t(c.tid)) {
        thread = capture::ThreadId(i);
        break;
      }
    }
  }
  if (thread == kNone) thread = EnsureThread(c.pid, c.tid, capture_.settings.start_time);
  s.thread.push_back(thread);
  s.state.push_back(
      capture::OffCpuState(std::min<uint8_t>(c.state, capture::kOffCpuStateCount - 1)));
  s.count.push_back(c.count);
  s.total.push_back(c.total_ns);
}

void Processor::SortSyscallsByStart() {
  capture::Syscalls& y = capture_.syscalls;
  if (std::all_of(y.stack.begin(), y.stack.end(), [](uint32_t n) { return n == kNone; })) {
    y.stack.clear();  // no call carried a stack: no column
  }
  SortRowsBy(y.time, y.time, y.duration, y.arg0, y.arg1, y.arg2, y.thread, y.nr, y.ret, y.stack);
}

void Processor::SortOffCpuByStart() {
  capture::OffCpu& o = capture_.off_cpu;
  SortRowsBy(o.start, o.start, o.end, o.thread, o.stack, o.stack_end, o.state, o.waker_tid,
             o.waker_name, o.flags);
}

}  // namespace microscope::record
