// Unwinding rules proven from a JIT function's own machine code, for code
// no CFI describes: CPython's perf trampolines (3.12 and 3.13 keep no frame
// pointer; 3.14 on push one), which run every Python function under
// `-X perf`. From the entry, the instructions that fall through are
// followed while each is one whose effect on the stack is known (endbr64,
// push/pop rbp, mov rsp to rbp, add/sub of a constant to rsp, calls, nops);
// each one's rule (where the return address and the caller's rbp lie) is
// a row. Code past the first other instruction (or a jump) is not proven:
// no frame pointer is assumed there.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "src/unwind/cfi_table.h"

namespace microscope::runtimes::jit {

// Rows for the code at `address` (`code`: its bytes, as many as were read),
// at absolute addresses; null when not even its first instruction is
// proven.
std::unique_ptr<unwind::CfiTable> ProveEntryCode(std::span<const uint8_t> code, uint64_t address);

}  // namespace microscope::runtimes::jit
