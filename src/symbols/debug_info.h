// Source lines and inline chains for a module's addresses, from its DWARF
// (.debug_line, .debug_info) read with elfutils' libdw: the line table is
// decoded once into a sorted address -> (file, line) table; inline chains
// are asked of libdw per distinct address.
//
// libdw rather than libdwarf: libdwarf exports functions of the same names
// (dwarf_lineaddr, dwarf_lineno, dwarf_linesrc, ...) with other signatures,
// so the two cannot share a binary with the libdw-based unwinder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capture/result.h"
#include "src/util/scoped_fd.h"

struct Dwarf;

namespace microscope::symbols {

struct InlineCall {
  std::string function;   // the inlined function
  std::string call_file;  // where its caller called it
  uint32_t call_line = 0;
};

class DebugInfo {
 public:
  static Result<std::unique_ptr<DebugInfo>> Load(const std::string& path);
  ~DebugInfo();

  // The file and line of `vaddr`, or false when no row covers it.
  bool Lookup(uint64_t vaddr, std::string_view* file, uint32_t* line) const;
  // The functions inlined at `vaddr`, innermost first (empty when none).
  std::vector<InlineCall> InlineChain(uint64_t vaddr) const;
  size_t rows() const { return rows_.size(); }

 private:
  struct Row {
    uint64_t address;
    uint32_t file;  // index into files_; kNoFile ends a sequence
    uint32_t line;
  };
  static constexpr uint32_t kNoFile = 0xFFFFFFFFu;
  DebugInfo() = default;

  ScopedFd fd_;
  Dwarf* dwarf_ = nullptr;
  std::vector<Row> rows_;
  std::vector<std::string> files_;
};

}  // namespace microscope::symbols
