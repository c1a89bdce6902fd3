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
  std::vector<microscope::capture::SegmentFile> segments;
  (void)microscope::serve::DecodeReply(bytes, &segments);
  return 0;
}
