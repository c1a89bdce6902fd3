// Reads V8's optimized code (Maglev and TurboFan) out of a running process,
// by the build's V8Layout: the Code object whose instructions hold a pc,
// its source position table and the positions of the calls it inlined, so
// that a compiled frame gets the line its own function is at. Target memory
// is untrusted: the Code is found by its InstructionStream (instructions
// start 64-byte aligned after a header whose second word is the Code) and
// proved by its type and by pointing back at that stream and start; tables
// are bounded, and each refusal says what was wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "src/record/process_memory.h"
#include "src/runtimes/node/layout.h"
#include "src/runtimes/node/line_table.h"

namespace microscope::runtimes::node {

struct CompiledCode {
  uint64_t code = 0;   // the tagged Code object
  uint64_t start = 0;  // its instructions
  uint64_t size = 0;
  int64_t kind = -1;    // V8's CodeKind
  uint64_t shared = 0;  // its function's SharedFunctionInfo, from its deoptimization data
  std::vector<PositionEntry> positions;  // by offset in the instructions
  // Each inlined call: where it is in its caller (a script offset), the
  // caller's own inlining id (-1: the outermost function), and the inlined
  // function (its SharedFunctionInfo from the deoptimization data's
  // literals, with its name and script words as they were read; 0: not
  // known, cleared or out of the literals).
  struct Inlined {
    int64_t position = -1;
    int32_t caller = -1;
    uint64_t shared = 0, name = 0, script = 0;
  };
  std::vector<Inlined> inlined;
  bool optimized = false;  // Maglev or TurboFan (kind = baseline + 1 or + 2)
  // Baseline (Sparkplug) code: the bytecode array it runs, and where the
  // code of each bytecode ends (its offset in the instructions) with that
  // bytecode's offset, in order; -1: the prologue.
  bool baseline = false;
  uint64_t bytecode_array = 0;
  std::vector<std::pair<int64_t, int64_t>> bytecode_ends;
};

// The code whose instructions hold `pc`; refused when no InstructionStream
// is found within `max_scan` bytes below it, or what is found is not proved.
// Only an optimized code's tables, and a baseline code's bytecode offset
// table with its bytecodes (sized by the image's kBytecodeSizes), are read.
Result<CompiledCode> ReadCompiledCode(record::ProcessMemory& memory, const V8Layout& layout,
                                      uint64_t pc, uint64_t max_scan = 512 * 1024);

// Whether the InstructionStream at `code`'s start still names it: new code
// at the same address is another Code.
bool StillThere(record::ProcessMemory& memory, const V8Layout& layout, const CompiledCode& code);

// A function running at a pc of optimized code, and where in it (a script
// offset; -1: not known).
struct InlinedAt {
  const CompiledCode::Inlined* function = nullptr;  // null: the code's own function
  int64_t position = -1;
};

// The functions at `pc` of optimized `code`, innermost first: each function
// inlined there with the position it runs at, then the outermost (the
// frame's own function, into which the others were inlined) with the
// position of its call into the first, or of the code at pc. The outermost
// is always last. `return_address`: pc follows the call it returns from (V8
// looks up the instruction before it). False, `chain` empty: no position
// there, or an inlining chain that does not end (untrusted ids).
bool FunctionsAt(const CompiledCode& code, uint64_t pc, bool return_address,
                 std::vector<InlinedAt>* chain);

// The offset of the bytecode baseline `code` runs at `pc` (V8's
// BytecodeOffsetIterator: the bytecode whose code ends at or after it);
// nullopt in the prologue or past the table.
std::optional<int64_t> BaselineOffset(const CompiledCode& code, uint64_t pc, bool return_address);

}  // namespace microscope::runtimes::node
