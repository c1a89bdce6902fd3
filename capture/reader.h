// Reads a .mscap file into a Capture, verifying the FlatBuffers buffer and
// then every count, index, range and cross-reference (ValidateCapture).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::capture {

// Errors read "what, where" (the caller prefixes the file name).
Result<Capture> ReadCapture(const std::string& path);
// The same from a file already opened (a regular file: base/file_policy.h).
Result<Capture> ReadCaptureFrom(int fd);
Result<Capture> ParseCapturePayload(std::span<const uint8_t> payload);
// Takes the payload: the big columns of the result view it in place.
Result<Capture> ParseCapturePayload(std::vector<uint8_t>&& payload);

// Checks every cross-reference of an in-memory capture. Importers and the
// reader call it; the recorder's output passes it by construction.
Status ValidateCapture(const Capture& capture);

}  // namespace microscope::capture
