// Source lines for a module's addresses, from its DWARF line programs
// (.debug_line): a sorted address -> (file, line) table,
// built once per module. A module without line information (or with
// malformed DWARF) gives an error naming why; its frames just lack lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capture/result.h"

namespace microscope::symbols {

class LineTable {
 public:
  struct Row {
    uint64_t address;
    uint32_t file;  // index into files(); kNoFile ends a sequence
    uint32_t line;
  };
  static constexpr uint32_t kNoFile = 0xFFFFFFFFu;

  // Reads `path`'s line programs; addresses are link-time (vaddr).
  static Result<LineTable> Load(const std::string& path);

  // The file and line of `vaddr`, or false when no row covers it.
  bool Lookup(uint64_t vaddr, std::string_view* file, uint32_t* line) const;
  size_t size() const { return rows_.size(); }

 private:
  std::vector<Row> rows_;
  std::vector<std::string> files_;
};

}  // namespace microscope::symbols
