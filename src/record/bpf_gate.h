// Loads bpf/gate.bpf.c (the only code that includes its skeleton): the
// budget's sample gate, which keeps one sample in N and passes kept ones on
// to the runtimes' walker (budget.h, budget_source.cc).
#pragma once

#include <cstdint>
#include <memory>

#include "base/status.h"

namespace microscope::record {

class SampleGate {
 public:
  static Result<std::unique_ptr<SampleGate>> Load();
  ~SampleGate();
  SampleGate(const SampleGate&) = delete;
  SampleGate& operator=(const SampleGate&) = delete;

  int program_fd() const;
  // Kept samples go on to program `fd` (a perf_event program: the walker).
  Status Chain(int fd);
  Status Set(uint32_t keep_one_in, bool walks);
  struct Counts {
    uint64_t kept = 0;
    uint64_t dropped = 0;
  };
  Counts counts() const;

  struct State;  // libbpf's objects; defined in the .cc only

 private:
  explicit SampleGate(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace microscope::record
