// Perf maps (/tmp/perf-PID.map: "START SIZE name" lines, hex, as node
// --perf-basic-prof, CPython -X perf and other JITs write them): read
// incrementally from the target's file, refused when another user owns it
// or it is older than its process (left by an earlier process of that pid).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope::unwind {
class CfiTable;
}

namespace microscope::runtimes::jit {

struct JitSymbol {
  uint64_t start = 0, end = 0;
  std::string name;
  // A jitdump's unwinding information for the code: its .eh_frame followed
  // by its .eh_frame_hdr (the last `eh_frame_hdr_size` bytes); empty when
  // none came with it.
  std::vector<uint8_t> unwinding;
  uint64_t eh_frame_hdr_size = 0;
  // The code's unwinding rules once looked for (from `unwinding`, else
  // proven from the code): kept with the symbol, so that code loaded over
  // it is looked at again.
  mutable std::shared_ptr<const unwind::CfiTable> cfi;
  mutable bool cfi_tried = false;
};

// The complete lines of `text` (up to its last newline): their symbols, how
// many bytes they took, and how many were malformed (skipped).
struct PerfMapLines {
  std::vector<JitSymbol> symbols;
  size_t consumed = 0;
  size_t malformed = 0;
};
PerfMapLines ParsePerfMapLines(std::string_view text);

// The code ranges a map names; a later line replaces earlier ones it
// overlaps (a JIT reusing its memory).
class SymbolRanges {
 public:
  void Add(JitSymbol symbol);
  // The symbol whose code holds `from` now starts at `to` and is `size`
  // bytes (a jitdump's code move): moved, never copied, with its unwinding
  // information; what it lands on is dropped. False when no code holds
  // `from`.
  bool Move(uint64_t from, uint64_t to, uint64_t size);
  const JitSymbol* Find(uint64_t address) const;
  size_t size() const { return by_start_.size(); }
  // About how many bytes the symbols take, their names and unwinding
  // information with them (what a recording's target memory counts).
  uint64_t bytes() const { return bytes_; }

 private:
  static uint64_t Cost(const JitSymbol& s);
  void Insert(JitSymbol symbol);
  std::map<uint64_t, JitSymbol> by_start_;
  uint64_t bytes_ = 0;
};

// A file a JIT writes for the process (its perf map, its jitdump), checked
// to be the process's own: a regular file its user owns, last written after
// it started. `path` is the file as the process names it, resolved beneath
// `root` (its /proc/PID/root) by the file policy: one component at a time,
// never above `root`, following only links of root or of the owner in
// directories no one else can write (never one in /tmp), never an absolute
// link (which would resolve against the recorder's root, not the
// process's). Each read checks that the file is still the owner's.
struct OwnedFile {
  std::string path;
  ScopedFd fd;
  uint32_t uid = 0;
  static Result<OwnedFile> Check(int root, const std::string& path, uid_t owner, int64_t started);
  // Up to `max` bytes from `offset` (fewer where the file ends).
  Result<std::vector<uint8_t>> Read(uint64_t offset, size_t max) const;
};

class PerfMap {
 public:
  static constexpr size_t kMaxRead = 1 << 20;    // bytes read at once
  static constexpr size_t kMaxTotal = 64 << 20;  // bytes read of one map

  // The map at `path` (as the target sees it, beneath its root directory
  // `root`), whose owner must be `owner` and whose last change must not
  // precede `started` (the process's start, in seconds since the epoch).
  static Result<std::unique_ptr<PerfMap>> Open(int root, const std::string& path, uid_t owner,
                                               int64_t started);
  // Reads what was appended since (at most kMaxRead); the count of new
  // symbols.
  Result<size_t> ReadMore();
  const JitSymbol* Find(uint64_t address) const { return ranges_.Find(address); }
  size_t malformed() const { return malformed_; }
  bool exhausted() const { return offset_ >= kMaxTotal; }
  uint64_t bytes() const { return ranges_.bytes(); }

 private:
  OwnedFile file_;
  uint64_t offset_ = 0;  // bytes of complete lines taken
  size_t malformed_ = 0;
  SymbolRanges ranges_;
};

}  // namespace microscope::runtimes::jit
