// The one walk record every runtime's BPF walker writes (bpf/walk.h), read
// back from untrusted ring bytes: the header all runtimes share, checked
// once here, and the frames, which the runtime named by the header reads
// in its own layout.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"

namespace microscope::record {

struct WalkRecord {
  uint8_t runtime = 0;  // MICROSCOPE_RUNTIME_* (bpf/runtime_ids.h)
  uint8_t status = 0;   // the runtime's own
  uint8_t flags = 0;    // the runtime's own
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t context[2] = {};
  uint16_t frame_size = 0;
  uint16_t nframes = 0;
  uint16_t bound = 0;  // the most frames the walk could keep (a cut walk has this many)
  std::span<const uint8_t> frames;  // nframes * frame_size bytes, leaf first
};

// The runtime a walk record is of (its header's number); 0 when `bytes`
// are too short or do not start with the walk magic.
uint8_t WalkRuntime(std::span<const uint8_t> bytes);

// Refuses bytes that are not one whole walk record of `runtime` with frames
// of `frame_size` bytes, no more than a walk has room for, saying why;
// `what` names the runtime's walks in the message ("Python walk record").
Result<WalkRecord> ParseWalkRecord(std::span<const uint8_t> bytes, uint8_t runtime,
                                   size_t frame_size, const char* what);

}  // namespace microscope::record
