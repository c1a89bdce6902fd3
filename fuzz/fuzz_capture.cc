// The capture reader: container (header, zstd frame) and the payload's
// validator. Inputs are whole .mscap files; a payload that the validator
// accepts is also summarized, as every reader of a capture does first.
#include <cstddef>
#include <cstdint>
#include <span>

#include "analysis/summary.h"
#include "capture/container.h"
#include "capture/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope;
  const std::span<const uint8_t> bytes(data, size);
  if (auto payload = capture::DecodeContainer(bytes); payload.ok()) {
    if (auto c = capture::ParseCapturePayload(*payload); c.ok()) (void)analysis::Summarize(*c);
  }
  // The payload alone too: the validator sees mutations the compressor
  // would hide.
  if (auto c = capture::ParseCapturePayload(bytes); c.ok()) (void)analysis::Summarize(*c);
  return 0;
}
