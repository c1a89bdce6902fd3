// The GDB JIT interface: a JIT defines `__jit_debug_descriptor` { u32
// version; u32 action_flag; entry* relevant; entry* first; } and links
// entries { next; prev; symfile_addr; symfile_size } to in-memory ELF
// objects whose symbols name its code. Read from the target's memory, which
// is untrusted: entries and objects are bounded, and an object that is not
// ELF is refused by where it is.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/record/process_memory.h"
#include "src/runtimes/jit/perf_map.h"
#include "src/unwind/cfi_table.h"

namespace microscope::runtimes::jit {

struct GdbJitEntry {
  uint64_t symfile = 0, size = 0;
};

// The registered entries, from the descriptor at `descriptor`; at most
// kMaxEntries (more is an error naming where the list went on).
inline constexpr size_t kMaxGdbJitEntries = 4096;
Result<std::vector<GdbJitEntry>> ReadGdbJitEntries(record::ProcessMemory& memory, uint64_t descriptor);

// An object's functions (symbols with a size), where they run: the symbol's
// value, plus its section's sh_addr in a relocatable object (ET_REL, as
// LLVM's JITs register them, sections placed by sh_addr).
Result<std::vector<JitSymbol>> GdbJitObjectSymbols(std::span<const uint8_t> elf);
// The object's CFI (.eh_frame or .debug_frame, at its sections' sh_addr);
// refused when it has none.
Result<std::unique_ptr<unwind::CfiTable>> GdbJitObjectCfi(std::span<const uint8_t> elf);

}  // namespace microscope::runtimes::jit
