// Pairs each record a BPF program wrote into a sample ring (a runtime's
// walk, EventType::kRaw) with the sample it was written for: the program
// runs in the sample's overflow handler and writes just before the sample,
// on the same CPU, so the walk's sample is the next sample in that ring.
// Pairing is by ring order, never by time (kernels may stamp either first).
// A walk whose sample never came (lost to a full ring) is dropped when the
// ring's next sample or loss record shows it, and counted.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "src/record/decode.h"

namespace microscope::record {

class RingPairing {
 public:
  // A walk read from ring `ring`.
  void Hold(size_t ring, const Event& raw) {
    Slot& s = Ensure(ring);
    if (s.held) ++unpaired_;
    s.held = true;
    s.tid = raw.tid;
    s.bytes.assign(raw.raw.begin(), raw.raw.end());
  }

  // Any other record of ring `ring`, in ring order: a sample of the held
  // walk's thread takes it (valid until EndRound); a sample of another
  // thread or a loss record shows the walk's sample was lost.
  void Next(size_t ring, Event* e) {
    if (ring >= slots_.size() || !slots_[ring].held) return;
    Slot& s = slots_[ring];
    if (e->type == EventType::kSample && e->tid == s.tid) {
      taken_.push_back(std::move(s.bytes));
      e->walk = taken_.back();
    } else if (e->type == EventType::kSample || e->type == EventType::kLost ||
               e->type == EventType::kLostSamples) {
      ++unpaired_;
    } else {
      return;  // task records may come between
    }
    s.held = false;
    s.bytes.clear();
  }

  // The walks handed to samples this round are no longer needed.
  void EndRound() { taken_.clear(); }

  // Walks still waiting at the end of the recording are unpaired.
  uint64_t TakeUnpaired(bool final) {
    if (final) {
      for (Slot& s : slots_) {
        unpaired_ += s.held ? 1 : 0;
        s.held = false;
      }
    }
    uint64_t n = unpaired_;
    unpaired_ = 0;
    return n;
  }

 private:
  struct Slot {
    bool held = false;
    uint32_t tid = 0;
    std::vector<uint8_t> bytes;
  };
  Slot& Ensure(size_t ring) {
    if (slots_.size() <= ring) slots_.resize(ring + 1);
    return slots_[ring];
  }
  std::vector<Slot> slots_;
  std::deque<std::vector<uint8_t>> taken_;  // stable addresses
  uint64_t unpaired_ = 0;
};

}  // namespace microscope::record
