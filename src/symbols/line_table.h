// Source lines and inline chains of one module's addresses, read from its
// DWARF (.debug_line, .debug_info) with libdwarf, the one DWARF reader used
// for lines and inlines (DESIGN.md).
//
// libdwarf and elfutils' libdw export functions of the same names
// (dwarf_lineno, dwarf_child, dwarf_attr, ...) with other signatures, and
// the unwinder needs libdw. So the reader lives in its own shared module,
// libmicroscope_dwarf.so, loaded with RTLD_LOCAL | RTLD_DEEPBIND: its calls
// and libdwarf's own bind to libdwarf, everyone else's to libdw. This header
// is all the two sides share; it names no type of either library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capture/result.h"

namespace microscope::symbols {

inline constexpr uint32_t kNoName = 0xFFFFFFFFu;

// One frame of the source-level stack at an address: the function (its
// linkage name when it has one, as the DWARF spells it), and the file and
// line reached in it.
struct SourceFrame {
  uint32_t function = kNoName;  // LineTable::String id
  uint32_t file = kNoName;
  uint32_t line = 0;
};

class LineTable {
 public:
  virtual ~LineTable() = default;
  // The frames at `vaddr`, innermost (the most deeply inlined function)
  // first and the function that holds the code last. `out` is cleared; it
  // stays empty when neither a line row nor a function covers `vaddr`.
  virtual void Lookup(uint64_t vaddr, std::vector<SourceFrame>* out) const = 0;
  virtual std::string_view String(uint32_t id) const = 0;
  // Counts, for summaries and tests.
  virtual size_t line_rows() const = 0;
  virtual size_t scopes() const = 0;
};

// Reads `path`'s DWARF through the plugin. Errors name what was wrong
// ("no DWARF", "truncated .debug_info at offset ...", "plugin not found").
Result<std::unique_ptr<LineTable>> OpenLineTable(const std::string& path);

// The plugin's one entry point (C linkage, looked up with dlsym). Returns
// the table or null with a message in `error`.
using OpenLineTableFn = LineTable* (*)(const char* path, std::string* error);
inline constexpr const char* kOpenLineTableSymbol = "microscope_open_line_table";

}  // namespace microscope::symbols
