// The kernel record decoder over arbitrary records, under layouts chosen by
// the input's first byte (with and without callchains, user registers,
// stack copies and BPF output).
#include <cstddef>
#include <cstdint>
#include <span>

#include "src/record/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope::record;
  if (size < 1) return 0;
  // PERF_SAMPLE_: IP 1, TID 2, TIME 4, ADDR 8, ID 64, CPU 128, PERIOD 256,
  // CALLCHAIN 32, RAW 1024, REGS_USER 4096, STACK_USER 8192, IDENTIFIER 65536.
  static constexpr uint64_t kLayouts[] = {
      1 | 2 | 4 | 128 | 256 | 32,
      1 | 2 | 4 | 128 | 256 | 32 | 4096 | 8192,
      65536 | 1 | 2 | 4 | 128 | 256 | 32 | 4096 | 8192,
      kRawSampleType,
  };
  SampleLayout layout;
  layout.sample_type = kLayouts[data[0] % 4];
  layout.regs_user_mask = (data[0] & 4) ? 0xff0fffULL : 0;
  layout.sample_id_all = (data[0] & 8) != 0;
  if (data[0] & 16) layout.raw_ids = {1, 7, 42};
  const std::span<const uint8_t> records(data + 1, size - 1);
  // As the collector walks an arena: every whole record in turn.
  ForEachRecord(records, [&](uint32_t, std::span<const uint8_t> record) {
    (void)DecodeRecord(record, layout);
    return true;
  });
  (void)DecodeRecord(records, layout);
  return 0;
}
