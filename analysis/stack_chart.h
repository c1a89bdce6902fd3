// The stack chart: one thread's samples in time order (speedscope's "time
// order", the Firefox Profiler's stack chart), as runs of one stack. A
// sample of a time metric covers [time, time + weight) (a CPU sample its
// period, an off-CPU interval its duration); consecutive samples of the
// same stack that touch are one run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "capture/capture.h"

namespace microscope::analysis {

struct StackChartRun {
  uint64_t start = 0;  // ns after the recording's start
  uint64_t end = 0;
  uint32_t stack = 0;    // into StackChart::stacks
  uint32_t samples = 0;  // samples in the run
};

struct StackChart {
  int32_t tid = 0;  // the thread charted; 0 when no sample was kept
  std::string thread;
  uint64_t thread_samples = 0;  // its kept samples
  size_t threads = 0;           // threads with kept samples (the busiest is charted)
  std::vector<StackChartRun> runs;
  bool truncated = false;  // runs past the bound left out (the first ones are kept)
  // Each run's stack, outermost frame first, as indexes into names/modules.
  std::vector<std::vector<uint32_t>> stacks;
  std::vector<std::string> names;
  std::vector<std::string> modules;
};

// The kept samples of the busiest thread the filter keeps (the one it names,
// when it names one); at most `max_runs` runs.
StackChart ComputeStackChart(const capture::Capture& c, const FunctionKeys& keys,
                             const SampleFilter& filter, size_t max_runs, Cancel cancel = {});

}  // namespace microscope::analysis
