// One module's call-frame information decoded into compact rows, so the
// per-sample unwinder does a binary search, not a DWARF interpretation.
//
// Built from .eh_frame (or .debug_frame) with libdw's CFI API: an FDE
// listed in .eh_frame_hdr (or, lacking it, a function symbol) is stepped
// through with dwarf_cfi_addrframe, and each [start, end) rule set becomes a
// row. A file's .eh_frame is decoded on demand, one FDE when an address in
// it is first looked up: a large module (node's executable: 96,000 FDEs)
// would otherwise hold up the first sample that lands in it for a sixth of
// a second, while the samples behind it wait and the process they came from
// may exit. Rows of the common x86-64 shape ("CFA = RSP|RBP + k; RA at
// CFA+n; RBP and RBX same or at CFA+m") are "fast"; any other (signal
// frames, CFA expressions) keeps its full rule set for the general
// evaluator. RBX is followed as well as RBP because glibc's lazy-binding
// trampoline (_dl_runtime_resolve) realigns its stack and defines its CFA
// from RBX, which its callee saved.
//
// A table is used by one thread at a time: lookups decode and cache.
#pragma once

#include <libelf.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/unwind/dwarf_expr.h"

namespace microscope::unwind {

enum class RuleKind : uint8_t {
  kSame,       // the caller's value is this frame's
  kUndefined,  // not recoverable
  kExpr,       // evaluate expr: an address to read, or a value (stack_value)
};

struct RegRule {
  RuleKind kind = RuleKind::kSame;
  uint32_t expr_begin = 0;
  uint32_t expr_len = 0;
};

struct GeneralRow {
  uint32_t cfa_begin = 0;  // CFA expression (yields the CFA's value)
  uint32_t cfa_len = 0;
  RegRule regs[kRegCount];
};

struct CfiRow {
  static constexpr uint8_t kGeneral = 1;      // rules in general_[general]
  static constexpr uint8_t kRaUndefined = 2;  // outermost frame: the stack ends here
  static constexpr uint8_t kRbpSaved = 4;     // caller's RBP at CFA + rbp_offset
  static constexpr uint8_t kRbpUndefined = 8;
  static constexpr uint8_t kSignal = 16;    // a signal frame: the caller's pc is exact
  static constexpr uint8_t kRbxSaved = 32;  // caller's RBX at CFA + rbx_offset
  static constexpr uint8_t kRbxUndefined = 64;

  uint64_t start;
  uint32_t length;
  int32_t cfa_offset;
  uint32_t general;
  int16_t ra_offset;
  int16_t rbp_offset;
  int16_t rbx_offset;
  uint8_t cfa_reg;
  uint8_t flags;

  bool SameRules(const CfiRow& o) const {
    return general == o.general && cfa_offset == o.cfa_offset && ra_offset == o.ra_offset &&
           rbp_offset == o.rbp_offset && rbx_offset == o.rbx_offset && cfa_reg == o.cfa_reg &&
           flags == o.flags && (flags & kGeneral) == 0;
  }
};
static_assert(sizeof(CfiRow) == 32, "rows stay compact");

class CfiTable {
 public:
  enum class Decoding {
    kOnDemand,  // an FDE when first looked up (.eh_frame only: a copy is kept)
    kUpFront,   // every FDE now
  };
  // The CFI of `elf`, which the table does not keep. A module without CFI
  // gives an empty table (has_cfi() false), which the auto policy unwinds
  // with frame pointers. The CFI is checked (cfi_check.h) now, whole.
  static Result<std::unique_ptr<CfiTable>> FromElf(Elf* elf,
                                                   Decoding decoding = Decoding::kOnDemand);
  // CFI that lies in memory, not in a file: a JIT's .eh_frame and its
  // .eh_frame_hdr (a jitdump's unwinding information), at the addresses
  // their pc-relative encodings are relative to. Refused when libdw reads
  // no CFI from them.
  static Result<std::unique_ptr<CfiTable>> FromEhFrame(std::span<const uint8_t> eh_frame,
                                                       uint64_t eh_frame_address,
                                                       std::span<const uint8_t> eh_frame_hdr,
                                                       uint64_t eh_frame_hdr_address);
  // A table from rows made by hand (tests) or proven from code (`source`
  // says how).
  static std::unique_ptr<CfiTable> FromRows(std::vector<CfiRow> rows,
                                            std::vector<GeneralRow> general = {},
                                            std::vector<ExprOp> exprs = {},
                                            std::string source = "hand-made");

  ~CfiTable();

  bool has_cfi() const { return has_cfi_; }
  // Rows decoded so far.
  size_t size() const;
  size_t general_rows() const { return general_.size(); }
  const std::string& source() const { return source_; }

  // The row covering link-time address `vaddr`, or null. The row stays
  // where it is for the table's life.
  const CfiRow* Find(uint64_t vaddr) const;
  const GeneralRow& general(uint32_t i) const { return general_[i]; }
  std::span<const ExprOp> expr(uint32_t begin, uint32_t len) const {
    return std::span(exprs_).subspan(begin, len);
  }

 private:
  struct OnDemand;  // the copy of .eh_frame and the FDEs decoded from it

  CfiTable() = default;
  static Result<std::unique_ptr<CfiTable>> UpFront(Elf* elf);
  static Result<std::unique_ptr<CfiTable>> FromEhFrameSection(Elf* elf);
  void Finish();
  const CfiRow* FindOnDemand(uint64_t vaddr) const;

  bool has_cfi_ = false;
  std::string source_;
  std::vector<CfiRow> rows_;  // decoded up front, sorted
  std::unique_ptr<OnDemand> on_demand_;
  // Grow as FDEs are decoded on demand (by index: rows name them so).
  mutable std::vector<GeneralRow> general_;
  mutable std::vector<ExprOp> exprs_;
  // A direct-mapped cache of recent lookups: samples hit the same few
  // functions over and over.
  static constexpr size_t kCacheSize = 256;
  mutable uint64_t cache_key_[kCacheSize];
  mutable const CfiRow* cache_row_[kCacheSize];
};

}  // namespace microscope::unwind
