// Processor: what event sources use to append their rows (event_source.h):
// threads named by events, and stacks taken by BPF, unwound from the
// registers and stack bytes it copied like samples' stacks.
#include "src/record/processor.h"

#include <algorithm>

namespace microscope::record {

using capture::kNone;
using capture::StackEnd;

capture::ThreadId Processor::EventThread(uint32_t pid, uint32_t tid, uint64_t time,
                                         std::string_view comm) {
  // A thread already ended is the one an event names (its reading as a
  // zombie, a late BPF event), not a new thread of a new process.
  // One lookup for a live thread, as before.
  capture::ThreadId thread;
  if (auto live = threads_.find(tid); live != threads_.end()) {
    thread = live->second;
  } else if (std::optional<capture::ThreadId> ended = EndedThread(pid, tid)) {
    thread = *ended;
  } else {
    thread = EnsureThread(pid, tid, time);
  }
  if (capture_.threads[thread].name == kNone && !comm.empty()) {
    capture_.threads[thread].name = strings_.Intern(comm);
  }
  return thread;
}

std::optional<capture::ThreadId> Processor::EndedThread(uint32_t pid, uint32_t tid) const {
  for (size_t i = capture_.threads.size(); i-- > 0;) {
    const capture::Thread& t = capture_.threads[i];
    if (t.tid != int32_t(tid)) continue;
    if (t.end_time == 0 || capture_.processes[t.process].pid != int32_t(pid)) return std::nullopt;
    return capture::ThreadId(i);
  }
  return std::nullopt;
}

capture::ThreadId Processor::LatestThread(uint32_t pid, uint32_t tid) {
  if (auto live = threads_.find(tid); live != threads_.end()) return live->second;
  if (std::optional<capture::ThreadId> ended = EndedThread(pid, tid)) return *ended;
  return EnsureThread(pid, tid, capture_.settings.start_time);
}

void Processor::NameThread(uint32_t pid, uint32_t tid, uint64_t time, std::string_view name) {
  capture::ThreadId thread = LatestThread(pid, tid);
  auto named =
      runtime_named_.try_emplace(thread, RuntimeNamed{capture_.threads[thread].name, time}).first;
  named->second.time = std::max(named->second.time, time);
  capture_.threads[thread].name = strings_.Intern(name);
}

capture::StringId Processor::SystemName(capture::ThreadId thread) const {
  auto named = runtime_named_.find(thread);
  return named != runtime_named_.end() ? named->second.system : capture_.threads[thread].name;
}

capture::StringId Processor::Intern(std::string_view s) {
  return strings_.Intern(s);
}

// Appends to scratch_ the user frames unwound from registers and stack bytes
// copied by BPF (frame pointers in the copy where a module has no CFI, also
// in fp recordings).
capture::StackEnd Processor::UnwindCopiedStack(uint32_t tid, const UserRegs& regs,
                                               std::span<const uint8_t> stack, ProcessState& proc) {
  Event e;
  e.regs_abi = 2;  // PERF_SAMPLE_REGS_ABI_64
  e.regs = std::span(reinterpret_cast<const uint8_t*>(regs), sizeof(regs));
  e.stack = stack;
  StackEnd end;
  if (options_.call_graph != CallGraph::kFramePointer) {
    end = UnwindUser(e, proc);
  } else {
    options_.call_graph = CallGraph::kAuto;
    end = UnwindUser(e, proc);
    options_.call_graph = CallGraph::kFramePointer;
  }
  // A blocked thread's stack teaches its copies' size as a sample's does.
  if (!stack.empty()) LearnExtent(tid, end);
  return end;
}

void Processor::LearnExtent(uint32_t tid, capture::StackEnd end) {
  if (stack_extents_ == nullptr) return;
  if (end == StackEnd::kComplete && stack_read_end_ != 0) {
    stack_extents_->Learn(tid, stack_read_end_);
  } else if (end == StackEnd::kStackCopyExhausted) {
    stack_extents_->Exhausted(tid);  // the next copy whole, to learn again
  }
}

capture::StackId Processor::EventStack(uint32_t pid, uint32_t tid, uint64_t time,
                                       std::span<const uint64_t> kernel, const UserRegs* regs,
                                       std::span<const uint8_t> user_stack, StackEnd* end,
                                       std::span<const uint8_t> walk) {
  ProcessState& proc = EnsureProcess(pid, time);
  scratch_.clear();
  scratch_sp_.clear();
  scratch_label_ = {};
  // bpf_get_stack's first address is where the stack was taken; the rest
  // are return addresses.
  for (size_t i = 0; i < kernel.size(); ++i) {
    uint64_t a = kernel[i];
    if (a >= kContextMax || a < 0xffff800000000000ull) continue;  // not a kernel text address
    scratch_.push_back(KernelFrame(i == 0 ? a : a - 1));
  }
  StackEnd how =
      regs != nullptr ? UnwindCopiedStack(tid, *regs, user_stack, proc) : StackEnd::kKernelOnly;
  if (scratch_.empty()) how = StackEnd::kEmpty;
  if (end != nullptr) *end = how;
  return InternScratch(pid, tid, time, walk);
}

}  // namespace microscope::record
