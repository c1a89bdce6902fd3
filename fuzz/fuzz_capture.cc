// The capture reader: container (header, zstd frame) and the payload's
// validator. Inputs are whole .mscap files; a payload that the validator
// accepts is also summarized, as every reader of a capture does first.
#include <cstddef>
#include <cstdint>
#include <span>

#include "analysis/summary.h"
#include "analysis/zones.h"
#include "capture/container.h"
#include "capture/reader.h"

namespace {

void Read(const microscope::capture::Capture& c) {
  using namespace microscope;
  (void)analysis::Summarize(c);
  if (c.probe_records.size() > 0) {
    (void)analysis::BuildZonesReport(c, 20);
    (void)analysis::ProbeLaneBuckets(c, c.settings.start_time, 1000000, 60);
    capture::Capture labeled = c;
    analysis::AddProbeLabelSpans(&labeled);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope;
  const std::span<const uint8_t> bytes(data, size);
  if (auto payload = capture::DecodeContainer(bytes); payload.ok()) {
    if (auto c = capture::ParseCapturePayload(*payload); c.ok()) Read(*c);
  }
  // The payload alone too: the validator sees mutations the compressor
  // would hide.
  if (auto c = capture::ParseCapturePayload(bytes); c.ok()) Read(*c);
  return 0;
}
