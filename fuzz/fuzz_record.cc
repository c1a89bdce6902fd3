// The kernel record decoder over arbitrary records, under layouts chosen by
// the input's first byte (with and without callchains, user registers,
// stack copies and BPF output); and the collector's ring copy over the same
// bytes laid into a ring, cutting stacks at learned ends, then decoded.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "src/record/collector.h"
#include "src/record/decode.h"
#include "src/record/stack_extents.h"

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

  // As Collector::Collect copies a sample ring: records from an offset
  // the input chooses, wrapping the ring's end, stacks of 256 bytes asked
  // for, cut where threads 1 to 16 were learned to end.
  static const StackExtents extents = [] {
    StackExtents e;
    for (uint32_t tid = 1; tid <= 16; ++tid) e.Learn(tid, 0x7ff8 + tid * 24);
    return e;
  }();
  const bool with_ids = (layout.sample_type & (1u << 16)) != 0 && (layout.sample_type & 2) != 0;
  const StackTrim trim{.extents = with_ids ? &extents : nullptr,
                       .callchain_at = 56,
                       .tid_at = 28,
                       .regs = uint32_t(std::popcount(layout.regs_user_mask)),
                       .sp_index = 7};
  std::vector<uint8_t> ring(1024);
  const size_t n = std::min(records.size(), ring.size());
  const size_t at = size_t(data[0]) * 8;
  for (size_t i = 0; i < n; ++i) ring[(at + i) % ring.size()] = records[i];
  std::vector<uint8_t> arena;
  RingCopyStats stats;
  (void)CopyRingRecords(ring, at, at + n, &arena, &stats, 256, layout.raw_ids, trim);
  ForEachRecord(arena, [&](uint32_t, std::span<const uint8_t> record) {
    (void)DecodeRecord(record, layout);
    return true;
  });
  return 0;
}
