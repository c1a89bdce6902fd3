// Unwinds a sampled user stack from the registers and stack bytes copied at
// interrupt time: never live process memory. Each step uses the module's
// CFI row for the pc (fast rows inline, others through the DWARF
// evaluator); where a module has no CFI at all, the auto policy takes a
// frame-pointer step instead. A stack that cannot be finished ends with a
// typed reason; nothing is appended after a step that could not be proven.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "capture/capture.h"
#include "src/unwind/cfi_table.h"
#include "src/unwind/dwarf_expr.h"

namespace microscope::unwind {

enum class Policy : uint8_t {
  kDwarf,  // CFI only
  kAuto,   // CFI where the module has it, frame pointers where it has none
};

// Where a pc's code lives: the module's CFI table and the load bias that
// turns the pc into a link-time address (vaddr = pc - bias).
struct CodeInfo {
  const CfiTable* table = nullptr;  // null: the module's CFI is unavailable
  uint64_t bias = 0;
  // Code with no CFI that keeps frame pointers (a runtime's generated
  // code): unwound by them under every policy.
  bool frame_pointers = false;
};

// The copied user stack: `bytes` were at [base, base + bytes.size()).
struct StackImage {
  uint64_t base = 0;
  std::span<const uint8_t> bytes;
  // The end of the bytes read so far (0: none): what a walk needed.
  mutable uint64_t read_end = 0;
  bool Read(uint64_t address, uint64_t* value) const {
    if (address < base || address - base > bytes.size() || bytes.size() - (address - base) < 8) {
      return false;
    }
    std::memcpy(value, bytes.data() + (address - base), 8);
    read_end = std::max(read_end, address + 8);
    return true;
  }
};

struct Frame {
  uint64_t pc;
  bool exact;       // the interrupted pc (leaf, or the frame a signal interrupted)
  uint64_t sp = 0;  // its stack pointer: its locals lie between it and its caller's
};

struct UnwindResult {
  size_t frames = 0;
  capture::StackEnd end = capture::StackEnd::kComplete;
};

// A pc lookup: returns false when `pc` is in no executable mapping.
class CodeMap {
 public:
  virtual ~CodeMap() = default;
  virtual bool Lookup(uint64_t pc, CodeInfo* info) = 0;
};

// Fills `out` (its size is the depth limit) from the leaf outwards.
UnwindResult Unwind(const Registers& regs, const StackImage& stack, CodeMap& code, Policy policy,
                    std::span<Frame> out);

}  // namespace microscope::unwind
