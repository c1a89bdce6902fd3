// Loads bpf/stack.bpf.c (the only code that includes its skeleton): the user
// stack copier, the first program on the sampling events when the recorder
// copies stacks by BPF instead of the kernel's fixed sample_stack_user. It
// copies as far as each thread's walks need (stack_ends, kept from what the
// unwinder read: StackExtents) into the sample's own ring, just
// before the sample, and passes the sample on to the program chained
// behind it (the runtimes' walker).
#pragma once

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "src/record/stack_extents.h"

namespace microscope::record {

class Collector;
class SharedBpfMaps;  // bpf_loader.h

class StackCopier final : public StackExtents::Listener {
 public:
  // `default_bytes`: copied for a thread whose stack's end is not learned.
  static Result<std::unique_ptr<StackCopier>> Load(uint32_t default_bytes);
  ~StackCopier();
  StackCopier(const StackCopier&) = delete;
  StackCopier& operator=(const StackCopier&) = delete;

  // Runs the copier at each sample of the collector's sampling events, its
  // copies going into their rings; a program attached later goes behind it.
  Status Attach(Collector* collector);
  // Shares what it learned of each thread's stack (stack_ends, stack_vmas)
  // with the programs loaded next (the off-CPU and system call tracers),
  // so their copies are sized as the samples' are.
  Status ShareExtents(SharedBpfMaps* maps);

  // Thread `tid`'s walks read up to `end` (its copies need reach no
  // further, with a margin); one wanted more than it got (the next copy is
  // as large as a record holds, until a walk teaches the end again); it is
  // gone (StackExtents tells).
  void Learned(uint32_t tid, uint64_t end) override;
  void Exhausted(uint32_t tid) override;
  void Forgotten(uint32_t tid) override;

  // Copies that did not fit in their ring.
  uint64_t Lost() const;
  // The most bytes of stack one copy holds.
  static uint32_t MaxBytes();

  struct State;  // libbpf's objects; defined in the .cc only

 private:
  explicit StackCopier(std::unique_ptr<State> state);
  Status Set(uint32_t tid, uint64_t end, uint32_t want);
  std::unique_ptr<State> state_;
};

}  // namespace microscope::record
