// Putting another tool's trace (trace_json.h) on a capture's timeline. The
// placement is stated, never guessed: by a clock the trace states (Kineto's
// baseTimeNanoseconds, wall-clock time, against the capture's wall-clock
// start), by a clock the user states (--clock monotonic|realtime), by an
// offset the user gives, or by an anchor both sides recorded (an event of
// the trace and a probes mark or zone of the same name in the capture). A
// trace none of these places stays on its own axis and says so. Each says
// which it used and how far it may be off.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"
#include "formats/trace_json.h"

namespace microscope::formats {

// --map NAME=PID[:TID]: the trace's process NAME (its pid as the trace
// spells it; "NAME/TID" for one of its threads) is the capture's process
// PID (and thread TID).
struct TraceMap {
  std::string trace_pid;
  std::string trace_tid;  // empty: every thread of trace_pid
  int32_t pid = 0;
  int32_t tid = 0;  // 0: the process only
};
Result<TraceMap> ParseTraceMap(std::string_view text);

struct PlaceOptions {
  std::string clock;              // "" (what the trace states), "monotonic", "realtime", "own-axis"
  std::optional<int64_t> offset;  // the trace's zero this long after the capture's start
  std::string anchor;             // an event name both sides recorded
  std::vector<TraceMap> maps;
  // Where it came from: recorded with it.
  std::string path;
  std::string digest;
  uint64_t imported_at = 0;  // wall-clock ns
};

// The trace on `capture`'s clock (or its own axis), its tracks mapped to
// the capture's processes and threads: by the user's maps, by the anchor's
// two sides, or (placed on the capture's clock) by the trace's own numeric
// pids and tids where the capture has them. Refuses a trace the capture
// holds already (by digest), a placement before the clock's zero, and an
// anchor or map that names nothing.
Result<capture::Trace> PlaceTrace(const capture::Capture& capture, ParsedTrace parsed,
                                  const PlaceOptions& options);

}  // namespace microscope::formats
