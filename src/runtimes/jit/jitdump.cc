#include "src/runtimes/jit/jitdump.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "base/scoped_fd.h"

namespace microscope::runtimes::jit {
namespace {

constexpr uint32_t kMagic = 0x4A695444;  // "JiTD"
constexpr uint32_t kCodeLoad = 0, kCodeMove = 1, kCodeClose = 3, kUnwindingInfo = 4;
constexpr size_t kHeaderMin = 40;
constexpr size_t kRecordHeader = 16;       // id, total_size, timestamp
constexpr uint32_t kMaxRecord = 64 << 20;  // a record's claimed size

template <typename T>
T Get(std::span<const uint8_t> bytes, size_t at, bool swapped) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  if (!swapped) return v;
  if constexpr (sizeof(T) == 4) return T(__builtin_bswap32(uint32_t(v)));
  if constexpr (sizeof(T) == 8) return T(__builtin_bswap64(uint64_t(v)));
  return v;
}

}  // namespace

Result<JitDumpHeader> ParseJitDumpHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderMin) {
    return Status::Error(StatusCode::kDataLoss,
                         "jitdump header cut at " + std::to_string(bytes.size()) + " bytes");
  }
  JitDumpHeader h;
  const uint32_t magic = Get<uint32_t>(bytes, 0, false);
  if (magic != kMagic && magic != __builtin_bswap32(kMagic)) {
    return Status::Error(StatusCode::kDataLoss,
                         "not a jitdump (magic " + std::to_string(magic) + ")");
  }
  h.swapped = magic != kMagic;
  h.version = Get<uint32_t>(bytes, 4, h.swapped);
  h.size = Get<uint32_t>(bytes, 8, h.swapped);
  h.pid = Get<uint32_t>(bytes, 20, h.swapped);
  if (h.size < kHeaderMin || h.size > 4096) {
    return Status::Error(StatusCode::kDataLoss,
                         "jitdump header claims " + std::to_string(h.size) + " bytes");
  }
  return h;
}

JitDumpRecords ParseJitDumpRecords(std::span<const uint8_t> bytes, bool swapped) {
  JitDumpRecords out;
  size_t at = 0;
  // An unwinding information record describes the code load that follows.
  std::vector<uint8_t> unwinding;
  uint64_t eh_frame_hdr_size = 0;
  while (bytes.size() - at >= kRecordHeader && !out.closed) {
    const uint32_t id = Get<uint32_t>(bytes, at, swapped);
    const uint32_t size = Get<uint32_t>(bytes, at + 4, swapped);
    if (size < kRecordHeader || size > kMaxRecord) {
      out.error =
          "record at byte " + std::to_string(at) + " claims " + std::to_string(size) + " bytes";
      break;
    }
    if (bytes.size() - at < size) break;  // not whole yet
    std::span<const uint8_t> r = bytes.subspan(at + kRecordHeader, size - kRecordHeader);
    if (id == kCodeLoad) {
      // pid, tid, vma, code_addr, code_size, code_index, name, code bytes
      constexpr size_t kFixed = 4 + 4 + 8 + 8 + 8 + 8;
      const void* nul =
          r.size() > kFixed ? std::memchr(r.data() + kFixed, 0, r.size() - kFixed) : nullptr;
      const uint64_t addr = r.size() >= kFixed ? Get<uint64_t>(r, 16, swapped) : 0;
      const uint64_t code_size = r.size() >= kFixed ? Get<uint64_t>(r, 24, swapped) : 0;
      if (nul == nullptr || code_size == 0 || addr + code_size < addr) {
        out.error = "code load record at byte " + std::to_string(at) + " is malformed";
        break;
      }
      const char* name = reinterpret_cast<const char*>(r.data() + kFixed);
      JitSymbol load{addr, addr + code_size, std::string(name)};
      load.unwinding = std::move(unwinding);
      load.eh_frame_hdr_size = eh_frame_hdr_size;
      unwinding.clear();
      out.ops.push_back({false, std::move(load), {}});
    } else if (id == kCodeMove) {
      // pid, tid, vma, old_code_addr, new_code_addr, code_size, code_index
      if (r.size() < 4 + 4 + 8 * 5) {
        out.error = "code move record at byte " + std::to_string(at) + " is cut";
        break;
      }
      const JitDumpRecords::Move m{Get<uint64_t>(r, 16, swapped), Get<uint64_t>(r, 24, swapped),
                                   Get<uint64_t>(r, 32, swapped)};
      if (m.size == 0 || m.to + m.size < m.to) {
        out.error = "code move record at byte " + std::to_string(at) + " moves " +
                    std::to_string(m.size) + " bytes to " + std::to_string(m.to);
        break;
      }
      out.ops.push_back({true, {}, m});
    } else if (id == kUnwindingInfo) {
      // unwinding_size, eh_frame_hdr_size, mapped_size, then the data:
      // .eh_frame, then .eh_frame_hdr. V8 writes a header alone (no
      // .eh_frame): no rules. One whose sizes disagree is not read (the
      // record's own size is sound: the records after it are).
      const uint64_t size_of = r.size() >= 24 ? Get<uint64_t>(r, 0, swapped) : 0;
      eh_frame_hdr_size = r.size() >= 24 ? Get<uint64_t>(r, 8, swapped) : 0;
      unwinding.clear();
      if (r.size() < 24 || size_of > r.size() - 24 || eh_frame_hdr_size > size_of) {
        ++out.unknown;
      } else if (eh_frame_hdr_size < size_of) {
        unwinding.assign(r.begin() + 24, r.begin() + 24 + std::ptrdiff_t(size_of));
      }
    } else if (id == kCodeClose) {
      out.closed = true;
    } else {
      ++out.unknown;
    }
    at += size;
    out.consumed = at;
  }
  return out;
}

Result<std::unique_ptr<unwind::CfiTable>> JitDumpUnwindTable(const JitSymbol& s) {
  const std::span<const uint8_t> all(s.unwinding);
  const size_t hdr_size = size_t(s.eh_frame_hdr_size);
  auto refuse = [&](const std::string& why) {
    return Status::Error(StatusCode::kDataLoss, "unwinding information of " + s.name + ": " + why);
  };
  if (hdr_size < 20 || hdr_size >= all.size()) return refuse("no .eh_frame_hdr table");
  const std::span<const uint8_t> eh_frame = all.first(all.size() - hdr_size);
  const std::span<const uint8_t> hdr = all.last(hdr_size);
  // version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4
  if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
    return refuse(".eh_frame_hdr encodings not read");
  const int32_t eh_frame_ptr = Get<int32_t>(hdr, 4, false);
  const uint32_t count = Get<uint32_t>(hdr, 8, false);
  if (count == 0 || count > (hdr_size - 12) / 8) return refuse("an empty .eh_frame_hdr table");
  const int32_t first = Get<int32_t>(hdr, 12, false);
  const uint64_t hdr_address = s.start - uint64_t(int64_t(first));
  const uint64_t eh_frame_address = hdr_address + 4 + uint64_t(int64_t(eh_frame_ptr));
  ASSIGN_OR_RETURN(std::unique_ptr<unwind::CfiTable> table,
                   unwind::CfiTable::FromEhFrame(eh_frame, eh_frame_address, hdr, hdr_address));
  if (table->Find(s.start) == nullptr) return refuse("no rule for the code's start");
  return table;
}

Result<std::unique_ptr<JitDump>> JitDump::Open(int root, const std::string& path, uid_t owner,
                                               int64_t started) {
  ASSIGN_OR_RETURN(OwnedFile file, OwnedFile::Check(root, path, owner, started));
  ASSIGN_OR_RETURN(std::vector<uint8_t> head, file.Read(0, 4096));
  Result<JitDumpHeader> header = ParseJitDumpHeader(head);
  if (!header.ok())
    return Status::Error(StatusCode::kDataLoss, path + ": " + header.status().message());
  auto dump = std::make_unique<JitDump>();
  dump->file_ = std::move(file);
  dump->header_ = *header;
  dump->offset_ = header->size;
  return dump;
}

Result<size_t> JitDump::ReadMore() {
  if (done_ || offset_ >= kMaxTotal) return size_t(0);
  ASSIGN_OR_RETURN(std::vector<uint8_t> buf,
                   file_.Read(offset_, std::min(kMaxRead, size_t(kMaxTotal - offset_))));
  JitDumpRecords r = ParseJitDumpRecords(buf, header_.swapped);
  offset_ += r.consumed;
  unknown_ += r.unknown;
  size_t added = 0;
  for (JitDumpRecords::Op& op : r.ops) {
    if (!op.is_move) {
      ranges_.Add(std::move(op.load));
      ++added;
      continue;
    }
    // In place: a move never copies (a dump of many moves of one load
    // with a big unwinding record costs nothing more).
    added += ranges_.Move(op.move.from, op.move.to, op.move.size) ? 1 : 0;
  }
  if (r.closed) done_ = true;
  if (!r.error.empty()) {
    done_ = true;
    return Status::Error(StatusCode::kDataLoss, file_.path + ": " + r.error);
  }
  if (r.consumed == 0 && buf.size() == kMaxRead) {
    done_ = true;
    return Status::Error(StatusCode::kDataLoss, file_.path + ": a record longer than a read");
  }
  return added;
}

}  // namespace microscope::runtimes::jit
