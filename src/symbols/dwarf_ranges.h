// The address ranges of a DIE, for the DWARF lines reader (dwarf_lines.cc):
// built into microscope-dwarf with libdwarf alone.
#pragma once

#include <libdwarf/libdwarf.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace microscope::symbols {

// Frees libdwarf's error, if there is one, for the next call to set.
inline void DropError(Dwarf_Debug dbg, Dwarf_Error& err) {
  if (err != nullptr) dwarf_dealloc_error(dbg, err);
  err = nullptr;
}

// Appends the [lo, hi) ranges of `die`, from DW_AT_low_pc and
// DW_AT_high_pc or from DW_AT_ranges: in .debug_rnglists for units of
// DWARF 5 (`unit_version`), in .debug_ranges before. False when it has no
// ranges or they cannot be read.
bool ReadRanges(Dwarf_Debug dbg, Dwarf_Die die, uint16_t unit_version,
                std::vector<std::pair<uint64_t, uint64_t>>* out);

}  // namespace microscope::symbols
