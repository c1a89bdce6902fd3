// What a program instrumented with the probes SDK hands the recorder: the
// static sites of its microscope_sites section (from its ELF file), a
// run-time site's slot and a thread's ring words (from its memory). The
// first byte picks the reader.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "src/probes/abi.h"
#include "src/probes/ring_records.h"
#include "src/probes/site_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope::probes;
  if (size < 1) return 0;
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      (void)ParseSiteSection(bytes, 0x400000);
      break;
    case 1:
      (void)ParseRuntimeSlot(
          bytes.first(std::min<size_t>(bytes.size(), MICROSCOPE_RUNTIME_SITE_SIZE)),
          0x7f0000000000);
      break;
    case 2: {
      std::vector<uint64_t> words(bytes.size() / 8);
      if (!words.empty()) std::memcpy(words.data(), bytes.data(), words.size() * 8);
      uint32_t tid = 0;
      (void)DecodeRingWords(words, &tid);
      break;
    }
  }
  return 0;
}
