// The folded-stack importer (Brendan Gregg's format, as flamegraph tools
// and our own convert write it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "formats/folded.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)microscope::formats::ReadFolded(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
