// serve's broker decodes what its unprivileged server sends
// (src/serve/broker_wire.h), and the server what the broker replies: any
// bytes either decode to one well-formed message, whose encoding decodes
// to the same, or are refused.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/serve/broker_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  microscope::Result<microscope::serve::BrokerRequest> r = microscope::serve::DecodeRequest(bytes);
  if (r.ok()) {
    if (microscope::serve::EncodeRequest(*r) != bytes) abort();
  }
  std::vector<microscope::capture::SegmentFile> files;
  uint64_t left_out = 0;
  if (microscope::serve::DecodeReply(bytes, &files, &left_out).ok()) {
    // A listing that decodes encodes to the same bytes (an ok status has
    // no message).
    if (bytes.size() >= 5 && bytes[0] == 0 &&
        bytes.substr(1, 4) == std::string_view("\0\0\0\0", 4) &&
        microscope::serve::EncodeReply(microscope::OkStatus(), files, left_out) != bytes) {
      abort();
    }
  }
  return 0;
}
