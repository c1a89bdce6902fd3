// Other tools' traces imported onto a capture (capture::Trace): their spans
// by name (count, total, percentiles, and the CPU samples of the capture's
// thread inside them), and their tracks as timeline lanes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/filter.h"
#include "capture/capture.h"

namespace microscope::analysis {

// What each imported trace is and how it was placed.
struct ReportTraceSource {
  std::string path;
  std::string format;
  std::string tool;
  std::string clock;
  std::string clock_note;
  std::optional<uint64_t> uncertainty_ns;
  uint64_t events = 0;
  uint64_t tracks = 0;
  uint64_t mapped_tracks = 0;  // on the capture's processes
  uint64_t flows = 0;
  uint64_t skipped = 0;
  std::vector<std::string> notes;
};

// One row per (trace, span name).
struct ReportSpanRow {
  size_t trace = 0;
  std::string name;
  std::string track;  // the track of its first occurrence ("group / name"), or "several"
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t mean_ns = 0;
  uint64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;  // nearest rank
  // CPU samples (counts) of the capture's thread a track is mapped to whose
  // innermost span of that track it was; the filter's samples only.
  uint64_t samples = 0;
  double sample_percent = 0;  // of the filter's CPU samples
};

struct ReportTraces {
  std::vector<ReportTraceSource> sources;
  std::vector<ReportSpanRow> spans;  // by total time, then trace, then name
  size_t shown = 0;
};

ReportTraces BuildTracesReport(const capture::Capture& c, size_t top,
                               const SampleFilter& filter = SampleFilter());

// An imported track across a timeline of `buckets` columns of `bucket_ns`
// from `start`: how much of each column its outermost spans cover (0 to 1),
// its instants in each, and a counter's largest value in each (NaN: none).
// Traces on their own axis are not on the capture's timeline: none of
// their tracks is a lane.
struct TraceLane {
  size_t trace = 0;
  uint32_t track = 0;
  std::string name;  // "group / track"
  capture::TraceTrackKind kind = capture::TraceTrackKind::kThread;
  int32_t pid = 0, tid = 0;                      // the capture's, when mapped
  uint64_t spans = 0, instants = 0, values = 0;  // in the window
  std::vector<float> covered;
  std::vector<uint32_t> instant_counts;
  std::vector<double> counter_max;
};
std::vector<TraceLane> ComputeTraceLanes(const capture::Capture& c, uint64_t start,
                                         uint64_t bucket_ns, size_t buckets);

}  // namespace microscope::analysis
