// libdw's frame rules as the unwinder's rows (cfi_table.h): each rule set
// libdw gives for an address range becomes a CfiRow, in the fast shape
// (CFA and return address and saved registers at small offsets) where it
// has it, else general rules with their DWARF expressions; neighbouring
// rows with the same rules are one row.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <vector>

#include "src/unwind/cfi_table.h"

namespace microscope::unwind {

// Steps from `pc` through the rule sets that follow one another, up to
// `limit` (a row reaching past it is cut there), appending a row for each
// to `rows` (general rules to `general`, their expressions to `exprs`);
// returns where it stopped.
uint64_t StepRows(Dwarf_CFI* cfi, uint64_t pc, uint64_t limit, std::vector<CfiRow>* rows,
                  std::vector<GeneralRow>* general, std::vector<ExprOp>* exprs);

}  // namespace microscope::unwind
