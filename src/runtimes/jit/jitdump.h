// jitdump files (perf's format: /tmp/jit-PID.dump or wherever the JIT
// writes it, such as node --perf-prof in its working directory; the JIT
// maps the file so that profilers find it): code-load and code-move records
// name the JIT's code, read incrementally as the file grows.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/runtimes/jit/perf_map.h"
#include "src/unwind/cfi_table.h"

namespace microscope::runtimes::jit {

struct JitDumpHeader {
  uint32_t version = 0;
  uint32_t size = 0;  // bytes of the header, the first record after them
  uint32_t pid = 0;
  bool swapped = false;  // written on a host of the other byte order
};
Result<JitDumpHeader> ParseJitDumpHeader(std::span<const uint8_t> bytes);

// The whole records at the start of `bytes`.
struct JitDumpRecords {
  // Code loads and moves, in the file's order (a move names what was loaded
  // before it; a later load may reuse the memory).
  struct Move {
    uint64_t from, to, size;
  };
  struct Op {
    bool is_move = false;
    JitSymbol load;
    Move move{};
  };
  std::vector<Op> ops;
  size_t consumed = 0;  // bytes of whole records
  size_t unknown = 0;   // records of kinds not read (debug info, ...)
  bool closed = false;  // a JIT_CODE_CLOSE record
  std::string error;    // a record that cannot be whole (the rest is not read)
};
JitDumpRecords ParseJitDumpRecords(std::span<const uint8_t> bytes, bool swapped);

// The unwinding rules of a code load that came with unwinding information
// (`symbol.unwinding`), at the code's addresses: the .eh_frame_hdr's first
// table entry is the code's start, which places both sections (the writer
// placed them after the code as it saw fit). Refused, with the reason,
// when the information does not describe the code.
Result<std::unique_ptr<unwind::CfiTable>> JitDumpUnwindTable(const JitSymbol& symbol);

class JitDump {
 public:
  static constexpr size_t kMaxRead = 4 << 20;     // bytes read at once
  static constexpr size_t kMaxTotal = 256 << 20;  // bytes read of one file

  // The dump at `path`: checked as a perf map is (owner, not older than the
  // process), its header read.
  static Result<std::unique_ptr<JitDump>> Open(int root, const std::string& path, uid_t owner,
                                               int64_t started);
  // Reads the records appended since; the count of new symbols.
  Result<size_t> ReadMore();
  const JitSymbol* Find(uint64_t address) const { return ranges_.Find(address); }
  size_t unknown_records() const { return unknown_; }
  uint64_t bytes() const { return ranges_.bytes(); }

 private:
  OwnedFile file_;
  JitDumpHeader header_;
  uint64_t offset_ = 0;
  size_t unknown_ = 0;
  bool done_ = false;  // closed, or a record that cannot be read
  SymbolRanges ranges_;
};

}  // namespace microscope::runtimes::jit
