// Collector: copying whole records out of a perf ring into an arena (the
// ring's head and tail as the kernel's ABI gives them), a sample's user
// stack cut where its thread's walks stop reading (stack_extents.h).
#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <span>
#include <vector>

#include "src/record/collector.h"

namespace microscope::record {

namespace {

// `len` bytes of the ring from `pos` (which may wrap its end) onto `arena`.
void AppendFromRing(std::span<const uint8_t> data, size_t pos, size_t len,
                    std::vector<uint8_t>* arena) {
  const size_t first = std::min(len, data.size() - pos);
  arena->insert(arena->end(), data.data() + pos, data.data() + pos + first);
  if (first < len) arena->insert(arena->end(), data.data(), data.data() + (len - first));
}

uint64_t RingWord(std::span<const uint8_t> data, size_t pos) {
  uint64_t v = 0;
  std::memcpy(&v, data.data() + pos % data.size(), 8);  // 8-aligned: never wraps
  return v;
}

// Where a sample's user stack lies in its record (at `pos` in the ring),
// found forward from its callchain's length: 0 where the record is not laid
// out as `trim` says, or carries no stack.
struct SampleStackAt {
  size_t stack_at = 0;  // the stack's size word
  uint64_t size = 0;    // the bytes of stack the record holds
  uint64_t dyn = 0;     // of them, filled by the kernel
  uint64_t sp = 0;      // the user stack pointer, 0 when unknown
};

SampleStackAt FindSampleStack(std::span<const uint8_t> data, size_t pos, size_t record_size,
                              uint32_t stack_copy, const StackTrim& trim) {
  if (trim.callchain_at == 0 || record_size < trim.callchain_at + 8) return {};
  const uint64_t frames = RingWord(data, pos + trim.callchain_at);
  if (frames >= record_size / 8) return {};
  const size_t regs_at = trim.callchain_at + 8 + size_t(frames) * 8;
  if (regs_at + 8 > record_size) return {};
  const uint64_t abi = RingWord(data, pos + regs_at);
  const size_t stack_at = regs_at + 8 + (abi != 0 ? size_t(trim.regs) * 8 : 0);
  if (stack_at + 16 > record_size) return {};
  SampleStackAt at{.stack_at = stack_at, .size = RingWord(data, pos + stack_at)};
  if (at.size == 0 || at.size > stack_copy || stack_at + 16 + at.size != record_size) return {};
  at.dyn = RingWord(data, pos + record_size - 8);
  if (at.dyn > at.size) return {};
  if (abi != 0 && trim.sp_index < trim.regs) {
    at.sp = RingWord(data, pos + regs_at + 8 + size_t(trim.sp_index) * 8);
  }
  return at;
}

}  // namespace

uint64_t CopyRingRecords(std::span<const uint8_t> data, uint64_t tail, uint64_t head,
                         std::vector<uint8_t>* arena, RingCopyStats* stats, uint32_t stack_copy,
                         std::span<const uint64_t> raw_ids, const StackTrim& trim) {
  const size_t size = data.size();
  if (head - tail > size) {
    ++stats->errors;  // more unread bytes than the ring holds: not a ring we understand
    return head;
  }
  // One allocation for the round's bytes at most, not one growth per record
  // (and no zero-filling of what is copied over at once).
  arena->reserve(arena->size() + size_t(head - tail));
  while (tail < head) {
    RecordHeader h;
    size_t pos = size_t(tail % size);
    // Headers are 8-byte aligned and the data area is a multiple of 8, so a
    // header never wraps; the body may.
    std::memcpy(&h, data.data() + pos, sizeof(h));
    if (h.size < sizeof(h) || h.size % 8 != 0 || h.size > head - tail || h.size > size) {
      ++stats->errors;  // a corrupt ring: drop what is left rather than misparse it
      return head;
    }
    const size_t old = arena->size();
    const SampleStackAt at =
        h.type == kRecordSample && stack_copy != 0 &&
                !std::binary_search(raw_ids.begin(), raw_ids.end(), RingWord(data, pos + 8))
            ? FindSampleStack(data, pos, h.size, stack_copy, trim)
            : SampleStackAt{};
    if (at.stack_at != 0) {
      // A sample's user stack: u64 size, data[size], u64 dyn_size, last in
      // the record. The size is what was asked for, or less where the record
      // would not fit its 16-bit size (a 64 KiB copy never does).
      uint64_t dyn = at.dyn;
      if (trim.extents != nullptr && at.sp != 0) {
        // Only as far as the thread's walks read (none of it when the
        // stack pointer lies above that: the thread's walks know nothing of
        // this stack).
        const uint64_t tid_word = RingWord(data, pos + trim.tid_at / 8 * 8);
        const uint32_t tid = uint32_t(trim.tid_at % 8 == 0 ? tid_word : tid_word >> 32);
        const uint64_t end = trim.extents->End(tid, at.sp);
        if (end != 0) dyn = std::min(dyn, end - at.sp);
      }
      const size_t kept = (dyn + 7) / 8 * 8;
      AppendFromRing(data, pos, at.stack_at + 8 + kept, arena);
      arena->insert(arena->end(), reinterpret_cast<const uint8_t*>(&dyn),
                    reinterpret_cast<const uint8_t*>(&dyn) + 8);
      RecordHeader small = h;
      small.size = uint16_t(h.size - at.size + kept);
      std::memcpy(arena->data() + old, &small, sizeof(small));
      const uint64_t stack_size = kept;
      std::memcpy(arena->data() + old + at.stack_at, &stack_size, 8);
    } else {
      AppendFromRing(data, pos, h.size, arena);
    }
    if (h.type == kRecordSample) {
      ++stats->samples;
    } else if (h.type == kRecordLost && h.size >= 24) {
      uint64_t lost;
      std::memcpy(&lost, arena->data() + old + 16, 8);
      stats->lost += lost;
    }
    tail += h.size;
  }
  return tail;
}

void Collector::DrainRing(size_t index, std::vector<uint8_t>* arena, RingCopyStats* stats,
                          std::span<const uint64_t> raw_ids, const StackTrim& trim) {
  Ring& ring = rings_[index];
  auto* meta = static_cast<perf_event_mmap_page*>(ring.base);
  const uint8_t* data = static_cast<const uint8_t*>(ring.base) + getpagesize();
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  tail = CopyRingRecords(std::span(data, ring.data_size), tail, head, arena, stats,
                         ring.samples && !options_.stack_by_bpf ? options_.stack_copy : 0, raw_ids,
                         trim);
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

}  // namespace microscope::record
