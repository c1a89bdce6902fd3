// The source line of a CPython instruction, from its code object's
// co_linetable (3.11 on; the format is described in CPython's
// Objects/locations.md): entries of a first byte (1, a 4-bit code, the
// number of 2-byte code units less one) and the code's operands, each
// moving the line from co_firstlineno.
#pragma once

#include <cstdint>
#include <span>

namespace microscope::runtimes::python {

struct LineLookup {
  enum Kind : uint8_t {
    kLine,       // `line` is the instruction's source line
    kNoLine,     // the instruction has no line (code 15: artificial code)
    kPastEnd,    // the index lies past the table's last entry
    kMalformed,  // the table is cut short or an entry does not start with bit 7
  };
  Kind kind = kMalformed;
  int line = 0;
};

// The line of the instruction at `unit` (2-byte code units from the first
// instruction, co_code_adaptive) in a code object with `first_line`.
LineLookup LineOfInstruction(std::span<const uint8_t> table, int first_line, uint32_t unit);

}  // namespace microscope::runtimes::python
