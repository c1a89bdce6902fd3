// Per-thread density lanes: how many samples each thread had in each of N
// equal time buckets across the recording, for a terminal timeline.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/filter.h"
#include "capture/capture.h"

namespace microscope::analysis {

struct Lane {
  capture::ThreadId thread;
  uint64_t total = 0;
  std::vector<uint32_t> buckets;
};

struct Lanes {
  uint64_t start = 0;
  uint64_t bucket_ns = 1;
  size_t bucket_count = 0;
  std::vector<Lane> lanes;  // by total samples desc, then tid
};

Lanes ComputeLanes(const capture::Capture& capture, const SampleFilter& filter, size_t buckets);

}  // namespace microscope::analysis
