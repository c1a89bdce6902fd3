// Chrome trace JSON (Kineto's and Perfetto's forms), as `microscope import`
// reads it and places it on a capture: any input is refused or becomes a
// trace that, with the capture, validates and reads back from its file
// alike; the report's spans and lanes are computed over it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "analysis/traces.h"
#include "capture/reader.h"
#include "capture/writer.h"
#include "formats/trace_json.h"
#include "formats/trace_place.h"

namespace {

// A recording of one thread with a probes mark "anchor" at 5 ms, whose
// wall-clock start is known.
microscope::capture::Capture Target() {
  using namespace microscope::capture;
  Capture c;
  c.strings = {"app", "anchor"};
  c.processes.push_back({100, 1, 0, 0, 1000000, 900000000});
  c.threads.push_back({100, 0, 0, 1000000, 900000000});
  for (uint64_t t = 1000000; t < 900000000; t += 1000000) {
    c.samples.time.push_back(t);
    c.samples.thread.push_back(0);
    c.samples.stack.push_back(kNone);
    c.samples.weight.push_back(1000000);
    c.samples.end.push_back(StackEnd::kEmpty);
  }
  c.probe_sites.kind = {ProbeKind::kMark};
  c.probe_sites.name = {1};
  c.probe_sites.file = {kNone};
  c.probe_sites.line = {0};
  c.probe_sites.module = {kNone};
  c.probe_records.time = {5000000};
  c.probe_records.thread = {0};
  c.probe_records.site = {0};
  c.probe_records.op = {ProbeOp::kMark};
  c.settings.start_time = 1000000;
  c.settings.end_time = 900000000;
  c.settings.realtime_start = 1700000000000000000ull;
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope;
  static const capture::Capture target = Target();
  formats::TraceJsonLimits limits;
  limits.max_bytes = 16 << 20;
  limits.max_events = 100000;
  auto parsed = formats::ReadTraceJson(std::span<const uint8_t>(data, size), limits);
  if (!parsed.ok()) return 0;
  // Each way of placing it: what the trace states, an anchor, an offset.
  for (int how = 0; how < 3; ++how) {
    formats::PlaceOptions o;
    if (how == 1) o.anchor = "anchor";
    if (how == 2) o.offset = 2000000;
    auto placed = formats::PlaceTrace(target, *parsed, o);
    if (!placed.ok()) continue;
    capture::Capture c = target;
    c.traces.push_back(std::move(placed).value());
    if (!capture::ValidateCapture(c).ok()) __builtin_trap();
    auto back = capture::ParseCapturePayload(capture::SerializeCapture(c));
    if (!back.ok() || back->traces.size() != 1 ||
        back->traces[0].events.start != c.traces[0].events.start ||
        back->traces[0].tracks != c.traces[0].tracks)
      __builtin_trap();
    analysis::BuildTracesReport(c, 20);
    analysis::ComputeTraceLanes(c, c.settings.start_time, 1000000, 900);
  }
  return 0;
}
