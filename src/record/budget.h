// The budget controller (record --budget): keeps the recorder's own cost,
// its CPU time and its BPF programs' run time, within a share of one CPU by
// stepping down a ladder of cheaper settings when a period costs more, and
// back up when periods cost well under. A pure function of what it is
// told: the same observations give the same steps (tests replay traces).
// The recording applies each level (budget_source.cc) and stores each step
// in the capture.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture.h"

namespace microscope::record {

// What a level costs less by: samples kept one in `keep_one_in` (the rest
// dropped by the kernel before they are written: the effective frequency is
// the asked-for one divided by it), copied stack bytes unwound at most
// `stack_bytes`, the runtimes' BPF frame walks on or off, and the recorder's
// rounds of draining and processing every `round_ms` (each round costs
// about the same however few samples it finds).
struct BudgetLevel {
  uint32_t keep_one_in = 1;
  uint32_t stack_bytes = 0;
  bool walks = true;
  uint32_t round_ms = 10;
  bool operator==(const BudgetLevel&) const = default;
};

// Level 0 is what was asked for; each next level roughly halves the cost of
// the one before (the sampling rate, then the unwound bytes, alternately;
// the walks go and rounds take 20 ms where the rate is a quarter, 40 ms
// where it is a sixteenth), down to about 10 samples a second.
std::vector<BudgetLevel> BudgetLadder(uint32_t frequency, uint32_t stack_copy);

// One period's measurement.
struct BudgetObservation {
  uint64_t time = 0;     // its end (CLOCK_MONOTONIC)
  uint64_t wall_ns = 0;  // its length
  uint64_t cpu_ns = 0;   // the recorder's CPU time in it (all its threads)
  uint64_t bpf_ns = 0;   // its BPF programs' run time in it (0: not measured)
};

class BudgetController {
 public:
  BudgetController(uint32_t budget_ppm, uint32_t frequency, uint32_t stack_copy);

  // Takes a period's measurement; returns the step made, when the level
  // changes. Rules: a period over the budget steps down (two levels past
  // twice the budget, three past four times it); three periods in a row
  // under 40% of it (the level up would cost about twice) step back up one.
  std::optional<capture::BudgetStep> Observe(const BudgetObservation& o);

  uint32_t level() const { return level_; }
  const BudgetLevel& current() const { return ladder_[level_]; }
  const std::vector<BudgetLevel>& ladder() const { return ladder_; }

 private:
  uint32_t budget_ppm_;
  uint32_t frequency_;
  std::vector<BudgetLevel> ladder_;
  uint32_t level_ = 0;
  uint32_t calm_ = 0;  // periods in a row well under the budget
};

// "1%", "0.5%", "2.5%" -> millionths of one CPU (1% = 10000); refused
// outside (0, 100%].
bool ParseBudget(const std::string& text, uint32_t* ppm);

}  // namespace microscope::record
