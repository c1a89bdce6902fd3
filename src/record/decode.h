// Decodes one perf ring record (untrusted bytes) into a typed event.
// Checks size, alignment and every field against the record's length; the
// layout of samples and of the sample_id_all trailer follows the sample_type
// the collector asked for (SampleLayout). Views point into the record bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace microscope::record {

// Which optional sample fields were requested (perf_event_attr).
struct SampleLayout {
  uint64_t sample_type = 0;
  uint64_t regs_user_mask = 0;
  bool sample_id_all = true;
  // The ids (PERF_SAMPLE_IDENTIFIER) of BPF output events writing into the
  // same rings, sorted: their samples are kRaw records of their own layout
  // (kRawSampleType). Needs PERF_SAMPLE_IDENTIFIER in sample_type.
  std::vector<uint64_t> raw_ids;
};

// The sample layout of BPF output events (PERF_COUNT_SW_BPF_OUTPUT):
// IDENTIFIER, TID, TIME, CPU and RAW.
inline constexpr uint64_t kRawSampleType =
    (1u << 16) | (1u << 1) | (1u << 2) | (1u << 7) | (1u << 10);

enum class EventType : uint8_t {
  kSample,
  kRaw,    // a sample of a BPF output event: `raw` holds what the program wrote
  kMmap2,  // MMAP2, and MMAP (prot then says only exec or not)
  kComm,
  kFork,
  kExit,
  kLost,
  kLostSamples,
  kThrottle,
  kUnthrottle,
  kOther,  // a record type we do not use (counted, skipped)
};

struct Event {
  EventType type = EventType::kOther;
  uint32_t raw_type = 0;
  uint16_t misc = 0;
  // From the sample or the sample_id_all trailer.
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint32_t cpu = 0;
  uint64_t id = 0;
  // kSample
  uint64_t ip = 0;
  uint64_t period = 0;
  std::span<const uint8_t> callchain;  // nr u64 words, unaligned-safe view
  uint64_t regs_abi = 0;
  std::span<const uint8_t> regs;   // u64 per bit of regs_user_mask
  std::span<const uint8_t> stack;  // dyn_size bytes of copied user stack
  // A runtime's walk written just before this sample into its ring (paired
  // by the pump; empty when none).
  std::span<const uint8_t> walk;
  // kRaw
  std::span<const uint8_t> raw;
  // kMmap2
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  uint32_t prot = 0;
  uint32_t flags = 0;
  std::span<const uint8_t> build_id;  // empty unless the kernel supplied one
  // The file's device and inode when no build ID was sent (0: not known).
  uint32_t dev_major = 0, dev_minor = 0;
  uint64_t inode = 0;
  std::string_view filename;
  // kComm: name; kFork/kExit: ppid/ptid
  std::string_view comm;
  bool exec = false;
  uint32_t ppid = 0;
  uint32_t ptid = 0;
  // kLost / kLostSamples
  uint64_t lost = 0;

  size_t CallchainSize() const { return callchain.size() / 8; }
  uint64_t CallchainAt(size_t i) const;
};

// perf_event.h record types and flags we rely on (kept here so the decoder
// and its tests do not depend on the installed uapi header's version).
inline constexpr uint32_t kRecordMmap = 1;
inline constexpr uint32_t kRecordLost = 2;
inline constexpr uint32_t kRecordComm = 3;
inline constexpr uint32_t kRecordExit = 4;
inline constexpr uint32_t kRecordThrottle = 5;
inline constexpr uint32_t kRecordUnthrottle = 6;
inline constexpr uint32_t kRecordFork = 7;
inline constexpr uint32_t kRecordSample = 9;
inline constexpr uint32_t kRecordMmap2 = 10;
inline constexpr uint32_t kRecordLostSamples = 13;
inline constexpr uint16_t kMiscCommExec = 1 << 13;
inline constexpr uint16_t kMiscMmapData = 1 << 13;  // MMAP/MMAP2 of a data mapping
inline constexpr uint16_t kMiscMmapBuildId = 1 << 14;
inline constexpr uint16_t kMiscCpumodeMask = 7;
// Callchain words at or above kContextMax mark where the next addresses
// come from (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER), not frames.
inline constexpr uint64_t kContextKernel = uint64_t(-128);
inline constexpr uint64_t kContextUser = uint64_t(-512);
inline constexpr uint64_t kContextMax = uint64_t(-4095);

struct RecordHeader {
  uint32_t type;
  uint16_t misc;
  uint16_t size;
};
static_assert(sizeof(RecordHeader) == 8, "perf_event_header is 8 bytes");

// Decodes `record` (header included). Errors name the field and offset.
Result<Event> DecodeRecord(std::span<const uint8_t> record, const SampleLayout& layout);

// Walks an arena of records back to back (as the collector copies them out
// of a ring), calling `fn(type, record)` with each whole record, header
// included, until `fn` returns false. Returns the offset of the first record
// not taken; a header that does not fit ends the walk at the arena's end.
template <typename Fn>
size_t ForEachRecord(std::span<const uint8_t> arena, Fn fn) {
  size_t off = 0;
  while (off + sizeof(RecordHeader) <= arena.size()) {
    RecordHeader h;
    std::memcpy(&h, arena.data() + off, sizeof(h));
    if (h.size < sizeof(h) || off + h.size > arena.size()) return arena.size();
    if (!fn(h.type, arena.subspan(off, h.size))) break;
    off += h.size;
  }
  return off;
}

// The records copied out of one ring, in ring order, as the drains took
// them: each chunk holds whole records, and the front chunk's first bytes
// may be processed already. A drain's bytes are moved in and whole chunks
// dropped once processed, so that no record is copied again between its
// ring and the processor (appending to one buffer and erasing its front
// moved every record twice more: a fifth of the recorder's time).
class RingArena {
 public:
  RingArena() = default;
  explicit RingArena(std::vector<uint8_t> bytes) { Append(std::move(bytes)); }

  void Append(std::vector<uint8_t>&& chunk) {
    if (!chunk.empty()) chunks_.push_back(std::move(chunk));
  }
  // Moves `other`'s chunks (none consumed) in after these.
  void Append(RingArena&& other) {
    for (std::vector<uint8_t>& chunk : other.chunks_) Append(std::move(chunk));
    other.chunks_.clear();
  }
  bool empty() const { return chunks_.empty(); }

  // Where a walk stopped: the record at `offset` of chunk `chunk` (past the
  // last chunk: every record was taken).
  struct Position {
    size_t chunk = 0;
    size_t offset = 0;
  };
  // Calls fn(type, record) for each record not yet consumed, in order, until
  // fn returns false (ForEachRecord over the chunks).
  template <typename Fn>
  Position ForEach(Fn fn) const {
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const size_t from = c == 0 ? start_ : 0;
      bool stopped = false;
      const size_t end = from + ForEachRecord(std::span<const uint8_t>(chunks_[c]).subspan(from),
                                              [&](uint32_t type, std::span<const uint8_t> record) {
                                                stopped = !fn(type, record);
                                                return !stopped;
                                              });
      if (stopped) return {c, end};
    }
    return {chunks_.size(), 0};
  }
  // Drops the records before `p` (a position ForEach returned).
  void Consume(Position p) {
    for (size_t i = 0; i < p.chunk && !chunks_.empty(); ++i) chunks_.pop_front();
    start_ = chunks_.empty() ? 0 : p.offset;
  }

 private:
  std::deque<std::vector<uint8_t>> chunks_;
  size_t start_ = 0;  // bytes of chunks_.front() already consumed
};

// The threads whose FORK record is in the arenas: created by a thread whose
// events were already open, so they inherited those events.
std::set<uint32_t> ForkedTids(const std::vector<RingArena>& arenas, const SampleLayout& layout);

}  // namespace microscope::record
