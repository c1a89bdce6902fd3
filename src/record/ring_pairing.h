// Pairs each record a BPF program wrote into a sample ring (a runtime's
// walk, a stack copy: EventType::kRaw) with the sample it was written for:
// the programs run in the sample's overflow handler and write just before
// the sample, on the same CPU, so the record's sample is the next sample in
// that ring.
// Pairing is by ring order, never by time (kernels may stamp either first).
// A walk whose sample never came (lost to a full ring) is dropped when the
// ring's next sample or loss record shows it, and counted.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include <linux/types.h>

#include <cstring>

#include "bpf/stack_copy.h"
#include "src/record/decode.h"
#include "src/record/user_regs.h"

namespace microscope::record {

class RingPairing {
 public:
  // A walk or a stack copy (bpf/stack_copy.h) read from ring `ring`.
  void Hold(size_t ring, const Event& raw) {
    Slot& s = Ensure(ring);
    Part& p = IsStackCopy(raw.raw) ? s.stack : s.walk;
    if (p.held) ++(&p == &s.stack ? stacks_unpaired_ : unpaired_);
    p.held = true;
    p.tid = raw.tid;
    p.bytes.assign(raw.raw.begin(), raw.raw.end());
  }

  // Any other record of ring `ring`, in ring order: a sample of the held
  // walk's (or copy's) thread takes it (valid until EndRound); a sample of
  // another thread or a loss record shows its sample was lost. A copy
  // taken from another stack pointer than the sample's registers say is
  // not the sample's (counted as lost too).
  void Next(size_t ring, Event* e) {
    if (ring >= slots_.size()) return;
    Slot& s = slots_[ring];
    if (s.walk.held && Take(&s.walk, e, &unpaired_)) e->walk = taken_.back();
    if (s.stack.held && Take(&s.stack, e, &stacks_unpaired_)) {
      std::span<const uint8_t> copy = taken_.back();
      ustack_record_header h;
      std::memcpy(&h, copy.data(), sizeof(h));
      uint64_t sp = 0;
      const size_t at = size_t(kUserRegSp) * 8;
      if (e->regs.size() >= at + 8) std::memcpy(&sp, e->regs.data() + at, 8);
      if (h.sp == sp && h.size <= copy.size() - sizeof(h)) {
        e->stack = copy.subspan(sizeof(h), h.size);
        ++stacks_paired_;
        stack_bytes_ += h.size;
      } else {
        ++stacks_unpaired_;
      }
    }
  }

  // The walks and copies handed to samples this round are no longer needed.
  void EndRound() { taken_.clear(); }

  // Walks still waiting at the end of the recording are unpaired.
  uint64_t TakeUnpaired(bool final) {
    if (final) {
      for (Slot& s : slots_) {
        unpaired_ += s.walk.held ? 1 : 0;
        stacks_unpaired_ += s.stack.held ? 1 : 0;
        s.walk.held = s.stack.held = false;
      }
    }
    uint64_t n = unpaired_;
    unpaired_ = 0;
    return n;
  }
  // Stack copies that found no sample, so far.
  uint64_t stacks_unpaired() const { return stacks_unpaired_; }
  uint64_t stacks_paired() const { return stacks_paired_; }
  uint64_t stack_bytes() const { return stack_bytes_; }

  // A stack copier's record: its magic, and a header that fits.
  static bool IsStackCopy(std::span<const uint8_t> raw) {
    uint32_t magic = 0;
    if (raw.size() < sizeof(ustack_record_header)) return false;
    std::memcpy(&magic, raw.data(), sizeof(magic));
    return magic == MICROSCOPE_STACK_MAGIC;
  }

 private:
  struct Part {
    bool held = false;
    uint32_t tid = 0;
    std::vector<uint8_t> bytes;
  };
  struct Slot {
    Part walk;
    Part stack;
  };
  // Hands part `p` to sample `e` (true) or drops it as unpaired when `e`
  // shows its sample was lost; task records may come between.
  bool Take(Part* p, Event* e, uint64_t* unpaired) {
    if (e->type == EventType::kSample && e->tid == p->tid) {
      taken_.push_back(std::move(p->bytes));
    } else if (e->type == EventType::kSample || e->type == EventType::kLost ||
               e->type == EventType::kLostSamples) {
      ++*unpaired;
    } else {
      return false;
    }
    p->held = false;
    p->bytes.clear();
    return e->type == EventType::kSample && e->tid == p->tid;
  }
  Slot& Ensure(size_t ring) {
    if (slots_.size() <= ring) slots_.resize(ring + 1);
    return slots_[ring];
  }
  std::vector<Slot> slots_;
  std::deque<std::vector<uint8_t>> taken_;  // stable addresses
  uint64_t unpaired_ = 0;
  uint64_t stacks_unpaired_ = 0, stacks_paired_ = 0, stack_bytes_ = 0;
};

}  // namespace microscope::record
