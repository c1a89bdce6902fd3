#include "src/record/decode.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include <sys/mman.h>

#include "base/byte_reader.h"

namespace microscope::record {
namespace {

Status Truncated(const char* field, size_t offset) {
  return Status::Error(std::string("record truncated reading ") + field + " at offset " +
                       std::to_string(offset));
}

#define READ_OR_FAIL(reader, out, field) \
  if (!(reader).Read(out)) return Truncated(field, (reader).offset())

// The sample_id_all trailer: fields in this fixed order when requested.
Status ReadTrailer(ByteReader& r, const SampleLayout& l, Event* e) {
  const uint64_t t = l.sample_type;
  if (t & PERF_SAMPLE_TID) {
    READ_OR_FAIL(r, &e->pid, "sample_id.pid");
    READ_OR_FAIL(r, &e->tid, "sample_id.tid");
  }
  if (t & PERF_SAMPLE_TIME) READ_OR_FAIL(r, &e->time, "sample_id.time");
  if (t & PERF_SAMPLE_ID) READ_OR_FAIL(r, &e->id, "sample_id.id");
  if (t & PERF_SAMPLE_STREAM_ID) {
    uint64_t stream;
    READ_OR_FAIL(r, &stream, "sample_id.stream_id");
  }
  if (t & PERF_SAMPLE_CPU) {
    uint32_t res;
    READ_OR_FAIL(r, &e->cpu, "sample_id.cpu");
    READ_OR_FAIL(r, &res, "sample_id.res");
  }
  if (t & PERF_SAMPLE_IDENTIFIER) READ_OR_FAIL(r, &e->id, "sample_id.identifier");
  return OkStatus();
}

// Fields of PERF_RECORD_SAMPLE in the kernel's output order
// (kernel/events/core.c perf_output_sample).
Status ReadSample(ByteReader& r, const SampleLayout& l, Event* e) {
  const uint64_t t = l.sample_type;
  constexpr uint64_t kSupported =
      PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
      PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
      PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  if (t & ~kSupported) return Status::Error("sample_type has fields this decoder does not know");
  if (t & PERF_SAMPLE_IDENTIFIER) READ_OR_FAIL(r, &e->id, "sample.identifier");
  if (t & PERF_SAMPLE_IP) READ_OR_FAIL(r, &e->ip, "sample.ip");
  if (t & PERF_SAMPLE_TID) {
    READ_OR_FAIL(r, &e->pid, "sample.pid");
    READ_OR_FAIL(r, &e->tid, "sample.tid");
  }
  if (t & PERF_SAMPLE_TIME) READ_OR_FAIL(r, &e->time, "sample.time");
  if (t & PERF_SAMPLE_ADDR) READ_OR_FAIL(r, &e->addr, "sample.addr");
  if (t & PERF_SAMPLE_ID) READ_OR_FAIL(r, &e->id, "sample.id");
  if (t & PERF_SAMPLE_STREAM_ID) {
    uint64_t stream;
    READ_OR_FAIL(r, &stream, "sample.stream_id");
  }
  if (t & PERF_SAMPLE_CPU) {
    uint32_t res;
    READ_OR_FAIL(r, &e->cpu, "sample.cpu");
    READ_OR_FAIL(r, &res, "sample.res");
  }
  if (t & PERF_SAMPLE_PERIOD) READ_OR_FAIL(r, &e->period, "sample.period");
  if (t & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr;
    READ_OR_FAIL(r, &nr, "sample.callchain.nr");
    if (nr > r.remaining() / 8) {
      return Status::Error("callchain of " + std::to_string(nr) +
                           " entries overruns the record at offset " + std::to_string(r.offset()));
    }
    if (!r.View(nr * 8, &e->callchain)) return Truncated("sample.callchain", r.offset());
  }
  if (t & PERF_SAMPLE_REGS_USER) {
    READ_OR_FAIL(r, &e->regs_abi, "sample.regs_user.abi");
    if (e->regs_abi != 0) {
      size_t n = size_t(std::popcount(l.regs_user_mask)) * 8;
      if (!r.View(n, &e->regs)) return Truncated("sample.regs_user", r.offset());
    }
  }
  if (t & PERF_SAMPLE_STACK_USER) {
    uint64_t size;
    READ_OR_FAIL(r, &size, "sample.stack_user.size");
    if (size > 0) {
      std::span<const uint8_t> data;
      if (size > r.remaining()) return Truncated("sample.stack_user.data", r.offset());
      r.View(size, &data);
      uint64_t dyn_size;
      READ_OR_FAIL(r, &dyn_size, "sample.stack_user.dyn_size");
      if (dyn_size > size) {
        return Status::Error("stack_user dyn_size " + std::to_string(dyn_size) +
                             " exceeds its size " + std::to_string(size));
      }
      e->stack = data.first(dyn_size);
    }
  }
  return OkStatus();
}

// A BPF output event's sample (kRawSampleType).
Status ReadRaw(ByteReader& r, Event* e) {
  e->type = EventType::kRaw;
  uint32_t res, size;
  READ_OR_FAIL(r, &e->id, "raw.identifier");
  READ_OR_FAIL(r, &e->pid, "raw.pid");
  READ_OR_FAIL(r, &e->tid, "raw.tid");
  READ_OR_FAIL(r, &e->time, "raw.time");
  READ_OR_FAIL(r, &e->cpu, "raw.cpu");
  READ_OR_FAIL(r, &res, "raw.res");
  READ_OR_FAIL(r, &size, "raw.size");
  if (!r.View(size, &e->raw)) return Truncated("raw.data", r.offset());
  return OkStatus();
}

bool IsRawSample(std::span<const uint8_t> body, const SampleLayout& layout) {
  uint64_t id;
  if (layout.raw_ids.empty() || !(layout.sample_type & PERF_SAMPLE_IDENTIFIER) || body.size() < 8)
    return false;
  std::memcpy(&id, body.data(), 8);
  return std::binary_search(layout.raw_ids.begin(), layout.raw_ids.end(), id);
}

// What MMAP and MMAP2 share: the task and range first ...
Status ReadMappingRange(ByteReader& r, const char* kind, Event* e) {
  e->type = EventType::kMmap2;
  if (!r.Read(&e->pid) || !r.Read(&e->tid) || !r.Read(&e->addr) || !r.Read(&e->len) ||
      !r.Read(&e->pgoff)) {
    return Truncated((std::string(kind) + ".pid/tid/addr/len/pgoff").c_str(), r.offset());
  }
  return OkStatus();
}

// ... and the file's name last (NUL-terminated, padded to 8 bytes; the
// trailer follows), with the range checked.
Status ReadMappingName(ByteReader& r, const char* kind, Event* e) {
  if (!r.PaddedString(&e->filename)) {
    return Status::Error(std::string(kind) +
                         " filename is not NUL-terminated within the record at offset " +
                         std::to_string(r.offset()));
  }
  if (e->len == 0 || e->addr + e->len < e->addr) {
    return Status::Error(std::string(kind) + " range is empty or wraps the address space");
  }
  return OkStatus();
}

// MMAP2: the mapping, its file (by name, and by build ID when the kernel
// sends one, else its device and inode) and protection.
Status ReadMmap2(ByteReader& r, uint16_t misc, Event* e) {
  RETURN_IF_ERROR(ReadMappingRange(r, "mmap2", e));
  if (misc & kMiscMmapBuildId) {
    uint8_t size;
    uint8_t reserved[3];
    READ_OR_FAIL(r, &size, "mmap2.build_id_size");
    READ_OR_FAIL(r, &reserved, "mmap2.reserved");
    std::span<const uint8_t> id;
    if (!r.View(20, &id)) return Truncated("mmap2.build_id", r.offset());
    if (size > 20) {
      return Status::Error("mmap2 build_id_size " + std::to_string(size) + " exceeds 20");
    }
    e->build_id = id.first(size);
  } else {
    uint64_t generation;
    READ_OR_FAIL(r, &e->dev_major, "mmap2.maj");
    READ_OR_FAIL(r, &e->dev_minor, "mmap2.min");
    READ_OR_FAIL(r, &e->inode, "mmap2.ino");
    READ_OR_FAIL(r, &generation, "mmap2.ino_generation");
  }
  READ_OR_FAIL(r, &e->prot, "mmap2.prot");
  READ_OR_FAIL(r, &e->flags, "mmap2.flags");
  return ReadMappingName(r, "mmap2", e);
}

// MMAP (perf.data files: the kernel's and synthesized mappings, and
// recordings without mmap2): no inode or protection; an executable mapping
// unless the kernel marked it data.
Status ReadMmap(ByteReader& r, uint16_t misc, Event* e) {
  RETURN_IF_ERROR(ReadMappingRange(r, "mmap", e));
  e->prot = (misc & kMiscMmapData) != 0 ? PROT_READ : PROT_READ | PROT_EXEC;
  return ReadMappingName(r, "mmap", e);
}

Status ReadComm(ByteReader& r, uint16_t misc, Event* e) {
  e->type = EventType::kComm;
  e->exec = (misc & kMiscCommExec) != 0;
  READ_OR_FAIL(r, &e->pid, "comm.pid");
  READ_OR_FAIL(r, &e->tid, "comm.tid");
  if (!r.PaddedString(&e->comm)) {
    return Status::Error("comm name is not NUL-terminated within the record at offset " +
                         std::to_string(r.offset()));
  }
  return OkStatus();
}

// FORK and EXIT, with their trailer.
Status ReadTask(ByteReader& r, const SampleLayout& layout, uint32_t type, Event* e) {
  e->type = type == kRecordFork ? EventType::kFork : EventType::kExit;
  READ_OR_FAIL(r, &e->pid, "task.pid");
  READ_OR_FAIL(r, &e->ppid, "task.ppid");
  READ_OR_FAIL(r, &e->tid, "task.tid");
  READ_OR_FAIL(r, &e->ptid, "task.ptid");
  READ_OR_FAIL(r, &e->time, "task.time");
  // The trailer repeats pid/tid/time; keep the record's own values.
  Event trailer;
  if (layout.sample_id_all) RETURN_IF_ERROR(ReadTrailer(r, layout, &trailer));
  e->cpu = trailer.cpu;
  e->id = trailer.id;
  return OkStatus();
}

// THROTTLE and UNTHROTTLE, with their trailer.
Status ReadThrottle(ByteReader& r, const SampleLayout& layout, uint32_t type, Event* e) {
  e->type = type == kRecordThrottle ? EventType::kThrottle : EventType::kUnthrottle;
  uint64_t time, stream;
  READ_OR_FAIL(r, &time, "throttle.time");
  READ_OR_FAIL(r, &e->id, "throttle.id");
  READ_OR_FAIL(r, &stream, "throttle.stream_id");
  e->time = time;
  Event trailer;
  if (layout.sample_id_all) RETURN_IF_ERROR(ReadTrailer(r, layout, &trailer));
  e->pid = trailer.pid;
  e->tid = trailer.tid;
  e->cpu = trailer.cpu;
  return OkStatus();
}

}  // namespace

uint64_t Event::CallchainAt(size_t i) const {
  uint64_t v;
  std::memcpy(&v, callchain.data() + i * 8, 8);
  return v;
}

Result<Event> DecodeRecord(std::span<const uint8_t> record, const SampleLayout& layout) {
  Event e;
  RecordHeader h;
  if (record.size() < sizeof(h)) return Status::Error("record shorter than its 8-byte header");
  std::memcpy(&h, record.data(), sizeof(h));
  if (h.size < sizeof(h) || h.size % 8 != 0 || h.size > record.size()) {
    return Status::Error("record header size " + std::to_string(h.size) +
                         " is invalid (below 8, not a multiple of 8, or beyond the " +
                         std::to_string(record.size()) + " bytes available)");
  }
  e.raw_type = h.type;
  e.misc = h.misc;
  ByteReader r(record.subspan(sizeof(h), h.size - sizeof(h)));
  switch (h.type) {
    case kRecordSample:
      if (IsRawSample(record.subspan(sizeof(h), h.size - sizeof(h)), layout)) {
        RETURN_IF_ERROR(ReadRaw(r, &e));
        return e;
      }
      e.type = EventType::kSample;
      RETURN_IF_ERROR(ReadSample(r, layout, &e));
      return e;
    case kRecordMmap2:
      RETURN_IF_ERROR(ReadMmap2(r, h.misc, &e));
      break;
    case kRecordMmap:
      RETURN_IF_ERROR(ReadMmap(r, h.misc, &e));
      break;
    case kRecordComm:
      RETURN_IF_ERROR(ReadComm(r, h.misc, &e));
      break;
    case kRecordFork:
    case kRecordExit:
      RETURN_IF_ERROR(ReadTask(r, layout, h.type, &e));
      return e;
    case kRecordLost:
      e.type = EventType::kLost;
      READ_OR_FAIL(r, &e.id, "lost.id");
      READ_OR_FAIL(r, &e.lost, "lost.lost");
      break;
    case kRecordLostSamples:
      e.type = EventType::kLostSamples;
      READ_OR_FAIL(r, &e.lost, "lost_samples.lost");
      break;
    case kRecordThrottle:
    case kRecordUnthrottle:
      RETURN_IF_ERROR(ReadThrottle(r, layout, h.type, &e));
      return e;
    default:
      e.type = EventType::kOther;
      return e;
  }
  if (layout.sample_id_all) {
    const uint32_t pid = e.pid, tid = e.tid;
    RETURN_IF_ERROR(ReadTrailer(r, layout, &e));
    // A mapping's or name's own task, not the trailer's: the same from the
    // kernel, zero in the records perf synthesizes into its files.
    if (e.type == EventType::kMmap2 || e.type == EventType::kComm) {
      e.pid = pid;
      e.tid = tid;
    }
  }
  return e;
}

std::set<uint32_t> ForkedTids(const std::vector<RingArena>& arenas, const SampleLayout& layout) {
  std::set<uint32_t> tids;
  for (const RingArena& arena : arenas) {
    arena.ForEach([&](uint32_t type, std::span<const uint8_t> record) {
      if (type != kRecordFork) return true;
      Result<Event> e = DecodeRecord(record, layout);
      if (e.ok()) tids.insert(e->tid);
      return true;
    });
  }
  return tids;
}

}  // namespace microscope::record
