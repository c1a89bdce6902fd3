// Serializes a Capture into the .mscap container.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::capture {

// The FlatBuffers payload alone (uncompressed), for tests and benchmarks.
std::vector<uint8_t> SerializeCapture(const Capture& capture);

// Writes `capture` to `path` atomically (temporary name, then rename).
Status WriteCapture(const Capture& capture, const std::string& path);

}  // namespace microscope::capture
