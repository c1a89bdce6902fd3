// Other tools' traces in the Chrome trace event format (JSON), as Chrome,
// Perfetto's JSON importer, Node's trace events and PyTorch's profiler
// (Kineto, and torch.autograd's own writer) write it: the array form and
// the object form ({"traceEvents": [...]}), gzipped or not. The events
// become a capture::Trace on the trace's own clock; trace_place.h puts it
// on a capture's.
//
// Read as catapult and Perfetto read it: `ts` and `dur` are microseconds
// (fractions kept to the nanosecond) whatever `displayTimeUnit` says (a
// display preference); complete (X), begin/end (B/E), instant (i/I/R),
// counter (C: one track per argument), async (b/e/n; S/F/T), flow (s/t/f,
// bound to the enclosing slice, or for an `f` without `"bp":"e"` to the
// next one to begin) and metadata (M: process and thread names, labels and
// sort indexes) events. Kineto's baseTimeNanoseconds, deviceProperties and
// the correlation ids between a CUDA launch and its kernel are kept. Other
// phases are counted and left out, and the trace's notes say so.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::formats {

struct TraceJsonLimits {
  uint64_t max_bytes = 4ull << 30;   // the JSON text (a gzipped file: inflated)
  uint64_t max_events = 20'000'000;  // events kept
  size_t max_args_bytes = 4096;      // an event's arguments, as JSON text
};

struct ParsedTrace {
  // Everything but the events' places: format, tool, notes, device
  // properties, strings, tracks, events (start 0) and flows.
  capture::Trace trace;
  // Each event's time on the trace's own clock, in ns (events in order).
  std::vector<int64_t> own_start;
  // Kineto's baseTimeNanoseconds: the wall-clock time (ns since the epoch)
  // of the trace's own zero.
  std::optional<int64_t> base_time;
  // The finest step its times were written in: 1 (ns) where any time has a
  // fraction of a microsecond, else 1000.
  uint64_t resolution_ns = 1000;
};

// True when `bytes` (maybe gzipped) start as JSON a trace would: `[` or `{`.
bool LooksLikeTraceJson(std::span<const uint8_t> bytes);

// Errors name the byte (malformed JSON) or the event (by its index in the
// trace's events, from 0) and what is wrong with it.
Result<ParsedTrace> ReadTraceJson(std::span<const uint8_t> bytes,
                                  const TraceJsonLimits& limits = {});

}  // namespace microscope::formats
