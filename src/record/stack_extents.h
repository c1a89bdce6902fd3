// How much of each thread's stack the unwinder needs: the end of the bytes
// its walks to the thread's outermost frame read. That frame does not move
// while the thread lives, so a sample's stack need only be copied out of the
// ring from its stack pointer up to there: above it lie the thread's TLS,
// the main thread's arguments and environment, or whatever mapping follows
// the stack, which no walk reads (tests/spin2: 550 bytes kept a sample, of
// the 4.4 and 12.4 KiB the kernel filled for its two threads).
//
// Learned from walks that completed, forgotten when a walk ran out of bytes
// (the thread moved to a stack that reaches higher: the next copy is whole
// and teaches the new end), and when the thread exits or execs. The same
// ends size the BPF stack copier's copies (bpf_stack.h), when it copies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

namespace microscope::record {

class StackExtents {
 public:
  // The end of what thread `tid`'s walks need of a stack at `sp`; 0: all of
  // its copy (nothing learned, or the stack is not below that end).
  uint64_t End(uint32_t tid, uint64_t sp) const {
    auto it = ends_.find(tid);
    return it != ends_.end() && it->second > sp ? it->second : 0;
  }
  // A walk of `tid`'s stack completed having read up to `end`.
  void Learn(uint32_t tid, uint64_t end) {
    uint64_t& e = ends_[tid];
    const bool asked = listener_ != nullptr && asked_.erase(tid) != 0;
    if (end <= e && !asked) return;
    e = std::max(e, end);
    if (listener_ != nullptr) listener_->Learned(tid, e);
  }
  // A walk of `tid`'s stack ran out of copied bytes: the thread moved to a
  // stack that reaches higher, and its next copy is whole, to learn again.
  // The BPF copier keeps the end learned so far (a walk that completes at
  // a frame below the outermost would lower it) and is told the next one.
  void Exhausted(uint32_t tid) {
    if (listener_ == nullptr) {
      ends_.erase(tid);
      return;
    }
    asked_.insert(tid);
    listener_->Exhausted(tid);
  }
  // The thread exited, or exec'd a new program (a new stack).
  void Forget(uint32_t tid) {
    ends_.erase(tid);
    asked_.erase(tid);
    if (listener_ != nullptr) listener_->Forgotten(tid);
  }

  // Told of every change (the BPF stack copier sizes its copies by them).
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void Learned(uint32_t tid, uint64_t end) = 0;
    virtual void Exhausted(uint32_t tid) = 0;
    virtual void Forgotten(uint32_t tid) = 0;
  };
  void SetListener(Listener* listener) { listener_ = listener; }

 private:
  std::unordered_map<uint32_t, uint64_t> ends_;
  std::unordered_set<uint32_t> asked_;  // copied whole since it ran out: told the next end
  Listener* listener_ = nullptr;
};

// Where a sample record keeps its fields, for cutting its user stack: the
// callchain's length word (the user registers follow the callchain, the
// stack follows them), its thread id and, among the registers, its stack
// pointer. With `extents`, a stack is cut at the end its thread's walks read.
struct StackTrim {
  const StackExtents* extents = nullptr;  // null: copy each stack as far as it was filled
  uint32_t callchain_at = 0;  // byte offset of the callchain's length; 0: stacks copied whole
  uint32_t tid_at = 0;        // byte offset of the thread id in a sample record
  uint32_t regs = 0;          // user registers after the ABI word (none when it is 0)
  uint32_t sp_index = 0;      // the stack pointer's place among them
};

}  // namespace microscope::record
