// The user registers every stack copy carries, in perf's order for the mask
// the collector asks for (AX BX CX DX SI DI BP SP IP R8..R15; perf refuses
// DS ES FS GS): perf samples, and the BPF events that copy stacks
// (bpf/stack_copy.h fixes the count for both sides).
#pragma once

#include <cstddef>
#include <cstdint>

#include "bpf/stack_copy.h"
#include "src/unwind/dwarf_expr.h"

namespace microscope::record {

inline constexpr size_t kUserRegCount = MICROSCOPE_USER_REGS;
inline constexpr uint64_t kUserRegsMask = 0xff01ffull;
static_assert(__builtin_popcountll(kUserRegsMask) == kUserRegCount);

// Each copied register as a DWARF register number (IP is the return address column).
inline constexpr int kUserRegToDwarf[kUserRegCount] = {0, 3, 2,  1,  4,  5,  6,  7, unwind::kRegRa,
                                                       8, 9, 10, 11, 12, 13, 14, 15};

// The stack pointer's place among them.
inline constexpr size_t kUserRegSp = 7;
static_assert(kUserRegToDwarf[kUserRegSp] == unwind::kRegRsp);

using UserRegs = uint64_t[kUserRegCount];

}  // namespace microscope::record
