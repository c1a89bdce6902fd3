// Per-thread density lanes: how many samples each thread had in each of N
// equal time buckets across the recording, and how long it was off CPU in
// each bucket per state, for a terminal timeline.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/filter.h"
#include "capture/capture.h"

namespace microscope::analysis {

struct Lane {
  capture::ThreadId thread;
  uint64_t total = 0;  // samples
  std::vector<uint32_t> buckets;
  // Off-CPU nanoseconds per state in each bucket (each interval split over
  // the buckets it overlaps, as stored: incomplete ones are not stretched).
  // Empty when the thread has no off-CPU intervals.
  std::array<std::vector<uint64_t>, capture::kOffCpuStateCount> off_cpu;
  uint64_t off_cpu_ns = 0;
};

struct Lanes {
  uint64_t start = 0;
  uint64_t bucket_ns = 1;
  size_t bucket_count = 0;
  std::vector<Lane> lanes;  // by total samples desc, then off-CPU time desc, then tid
};

// Samples from `capture.samples` (CPU samples: pass the capture, not a
// ForMetric one), off-CPU time from `capture.off_cpu` (intervals kept by
// `filter` at their start).
Lanes ComputeLanes(const capture::Capture& capture, const SampleFilter& filter, size_t buckets);

// What a lane column shows: the state the thread spent most of the column
// in when that is more than half of it off CPU; else on CPU when it has
// samples; else the state it was off CPU in, if at all.
enum class LaneCell : uint8_t { kEmpty, kOnCpu, kSleeping, kUninterruptible, kPreempted, kOther };
LaneCell CellOf(const Lanes& lanes, const Lane& lane, size_t bucket);

}  // namespace microscope::analysis
