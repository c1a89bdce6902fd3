// One function's place in the call graph (the Firefox Profiler's sidebar,
// pprof's peek): its self and total cost, the functions that called it and
// those it called, each with the cost of the samples where it did. A
// sample counts once per caller and once per callee, however often the
// function recurses in its stack.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "analysis/profile.h"
#include "capture/capture.h"

namespace microscope::analysis {

struct Neighbor {
  std::string name;
  std::string module;
  Cost cost;  // the samples where it called the function (or was called by it)
};

struct Neighbors {
  std::string name;
  std::string module;
  Cost self;
  Cost total;
  std::vector<Neighbor> callers;  // by cost desc, then name; the first `top`
  std::vector<Neighbor> callees;
  size_t more_callers = 0;  // past `top`
  size_t more_callees = 0;
};

// nullopt when no function of the capture has that name.
std::optional<Neighbors> ComputeNeighbors(const capture::Capture& c, const FunctionKeys& keys,
                                          const SampleFilter& filter, const std::string& name,
                                          size_t top, Cancel cancel = {});

}  // namespace microscope::analysis
