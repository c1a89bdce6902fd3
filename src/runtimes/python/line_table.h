// The source line of a CPython instruction, from its code object's
// co_linetable (3.11 on; the format is described in CPython's
// Objects/locations.md): entries of a first byte (1, a 4-bit code, the
// number of 2-byte code units less one) and the code's operands, each
// moving the line from co_firstlineno.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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
// instruction, co_code_adaptive) in a code object with `first_line`: one
// scan of the table.
LineLookup LineOfInstruction(std::span<const uint8_t> table, int first_line, uint32_t unit);

// A code object's table decoded once (at its first read), for the lookups
// of every sample after: a binary search, where LineOfInstruction scans the
// table each time. Gives what LineOfInstruction gives for every unit.
class LineTable {
 public:
  LineTable() = default;  // no entries: every unit is past the end
  static LineTable Decode(std::span<const uint8_t> table, int first_line);
  LineLookup Find(uint32_t unit) const;

 private:
  struct Run {
    uint64_t end;  // the units before it, from the first, are in this or an earlier run
    int line;
    bool has_line;
  };
  std::vector<Run> runs_;   // in order, up to the first malformed entry
  bool malformed_ = false;  // an entry after the last run could not be read
};

}  // namespace microscope::runtimes::python
