// The capture reader: container (header, zstd frame) and the payload's
// validator. Inputs are whole .mscap files; a payload that the validator
// accepts is also summarized, as every reader of a capture does first, and
// cut, compacted and merged as a segment directory's reader does: each
// result must validate again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "analysis/summary.h"
#include "analysis/zones.h"
#include "capture/container.h"
#include "capture/reader.h"
#include "capture/compact.h"
#include "capture/window.h"

namespace {

// A recording's parts (capture/window.h): cut at the middle of the
// capture's span, compacted, merged back. Anything but a valid result is
// a bug the fuzzer reports (abort).
void CutAndMerge(const microscope::capture::Capture& c) {
  using namespace microscope;
  capture::Capture live = c;
  capture::Capture first;
  capture::TimeCut cut;
  cut.before = c.settings.start_time / 2 + c.settings.end_time / 2;
  capture::TakeEventRows(&live, cut, &first);
  // The taken rows with the whole dictionaries: what a segment is.
  capture::Capture part = c;
  part.samples = std::move(first.samples);
  part.syscalls = std::move(first.syscalls);
  part.off_cpu = std::move(first.off_cpu);
  part.off_cpu_short = std::move(first.off_cpu_short);
  part.labels = std::move(first.labels);
  part.probe_records = std::move(first.probe_records);
  capture::CompactDictionaries(&part);
  capture::CompactDictionaries(&live);
  capture::NormalizeEventRows(&part);
  capture::NormalizeEventRows(&live);
  if (!capture::ValidateCapture(part).ok() || !capture::ValidateCapture(live).ok()) abort();
  std::vector<capture::Capture> parts;
  parts.push_back(std::move(part));
  parts.push_back(std::move(live));
  capture::Capture merged = capture::MergeCaptures(std::move(parts));
  if (!capture::ValidateCapture(merged).ok()) abort();
  if (merged.samples.size() != c.samples.size()) abort();
}

void Read(const microscope::capture::Capture& c) {
  using namespace microscope;
  (void)analysis::Summarize(c);
  CutAndMerge(c);
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
