// The captures one query reads, each with the facts its tables derive
// (stack depths, paired zones, label spans, loss counts), and the numbering
// that makes every id (thread, stack, frame, ...) unique across them: a
// table's ids run on from one capture to the next, so a join on ids needs no
// `capture` term whatever the number of captures.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/report.h"
#include "analysis/zones.h"
#include "base/status.h"
#include "capture/capture.h"

namespace microscope::sql {

// The kinds of rows that have ids.
enum class IdKind : uint8_t {
  kModule,
  kMapping,
  kProcess,
  kThread,
  kFunction,
  kFrame,
  kStack,
  kSample,
  kSyscall,
  kOffCpu,
  kZone,
  kTrace,  // (imported traces: microscope import)
  kTraceTrack,
  kTraceEvent,
};
inline constexpr size_t kIdKinds = 14;

// One capture of a query (a file, or a continuous directory read as one).
struct Part {
  std::string name;  // as the user named it
  uint32_t index = 0;
  capture::Capture capture;
  // The first id of each kind in this capture.
  std::array<uint64_t, kIdKinds> base{};
  std::vector<uint32_t> stack_depth;  // per stack node: 0 for a root
  analysis::Zones zones;
  std::vector<analysis::ProbeLabelSpan> probe_labels;
  std::vector<uint32_t> marks;     // rows of probe_records that are marks
  std::vector<uint32_t> counters;  // ... that are counter values
  std::vector<std::pair<std::string, uint64_t>> losses;
  std::vector<std::pair<uint32_t, uint32_t>> source_values;  // (source, value index or kNone)
  std::vector<std::string> unnamed;  // per frame without a function: its name
  // Imported traces' rows, flattened: (trace, row in it).
  std::vector<std::pair<uint32_t, uint32_t>> trace_tracks, trace_events, trace_flows;
  // The first flattened track and event of each trace.
  std::vector<uint32_t> trace_first_track, trace_first_event;

  size_t Rows(IdKind kind) const;
  // What the report and the tables call a frame: its function's name, or
  // for a frame without one its module and offset
  // (analysis::UnnamedFrameName), "?" for a named frame without a name.
  std::string_view FrameName(capture::FrameId frame) const;
  // The costs per function as `report` counts them by default (metric,
  // inlines on, the mixed look); made at first use. Errors: cancelled.
  Result<const std::vector<analysis::ReportFunction>*> FunctionCosts(analysis::Cancel cancel) const;
  // (sample row, zone occurrence) for each sample inside a zone on its
  // thread (the innermost one), in sample order; made at first use.
  const std::vector<std::pair<uint32_t, uint32_t>>& ZoneSamples() const;

  // Per thread with readings: its window (first to last reading) and what
  // its counters and off-CPU intervals say of it; made at first use.
  struct ThreadWindow {
    capture::ThreadId thread = capture::kNone;
    uint64_t start = 0, end = 0;
    int64_t on_cpu = 0, run_delay = 0, timeslices = 0;  // deltas over the window
    uint64_t off_cpu[capture::kOffCpuStateCount] = {};  // intervals clipped to the window
  };
  const std::vector<ThreadWindow>& ThreadWindows() const;
  // Per scope of the readings (a cgroup, "system"): the last value of each
  // key and its change over the window, in key order.
  struct ScopeWindow {
    capture::StringId scope = capture::kNone;
    uint64_t start = 0, end = 0;
    std::vector<std::pair<capture::StringId, std::pair<int64_t, int64_t>>> keys;  // (last, delta)
    // The delta of `key` (`last` when `last_value`); nullopt when not read.
    std::optional<int64_t> Value(const capture::Capture& c, std::string_view key,
                                 bool last_value = false) const;
  };
  const std::vector<ScopeWindow>& ScopeWindows() const;

 private:
  mutable std::optional<std::vector<analysis::ReportFunction>> costs_;
  mutable std::optional<std::vector<std::pair<uint32_t, uint32_t>>> zone_samples_;
  mutable std::optional<std::vector<ThreadWindow>> thread_windows_;
  mutable std::optional<std::vector<ScopeWindow>> scope_windows_;
};

class Corpus {
 public:
  // Appends a capture under `name`.
  void Add(std::string name, capture::Capture capture);
  const std::vector<std::unique_ptr<Part>>& parts() const { return parts_; }
  uint64_t Total(IdKind kind) const { return next_[size_t(kind)]; }
  // The capture a global id of `kind` lies in and its row there, or null.
  std::pair<const Part*, uint32_t> Locate(IdKind kind, int64_t id) const;

 private:
  std::vector<std::unique_ptr<Part>> parts_;
  std::array<uint64_t, kIdKinds> next_{};
};

}  // namespace microscope::sql
