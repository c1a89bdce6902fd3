// Markers: what happened on each thread over time, as the Firefox
// Profiler's marker chart and table show it. The program's zones (nested,
// with their depth), marks, labels and counters; time off CPU by state
// (with who woke the thread); system calls; and gaps the recording does
// not know. Bounded: past `max_rows` the longest are kept and the rest
// counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "capture/capture.h"

namespace microscope::analysis {

enum class MarkerKind : uint8_t { kZone, kMark, kLabel, kCounter, kOffCpu, kSyscall, kGap };
inline constexpr size_t kMarkerKindCount = 7;
// "zone", "mark", "label", "counter", "off-cpu", "syscall", "gap".
const char* MarkerKindName(MarkerKind kind);

struct Marker {
  MarkerKind kind = MarkerKind::kZone;
  int32_t tid = 0;     // 0: every thread (a gap of every process)
  uint64_t start = 0;  // ns after the recording's start
  uint64_t end = 0;    // == start for an instant (a mark, a counter's value)
  uint32_t depth = 0;  // a zone's nesting
  std::string name;
  std::string detail;  // its state and waker, a call's result, a label's value, ...
};

struct Markers {
  std::vector<Marker> rows;  // by start, then depth
  size_t total = 0;          // markers the filter kept
  size_t left_out = 0;       // of those, past the bound (the shortest)
};

// The markers of the threads, time range and zone the filter keeps (a
// marker is kept when it overlaps the range).
Markers ComputeMarkers(const capture::Capture& c, const SampleFilter& filter, size_t max_rows,
                       Cancel cancel = {});

}  // namespace microscope::analysis
