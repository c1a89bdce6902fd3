// A check of a CFI section's records before libdw interprets them.
//
// libdw sizes a frame's rule array by the highest register number an
// instruction names, up to INT32_MAX / 24 registers: one damaged record in
// a module, a jitdump or a GDB JIT object would have it allocate and clear
// 2 GB at each lookup (found by fuzz_jit). CheckCfiSection walks every CIE
// and FDE as dwarf_next_cfi reads them and refuses a section whose
// instructions (or a CIE's return address register) name a register
// beyond those that exist, and one whose .eh_frame_hdr points at an offset
// where no FDE starts (libdw would read a record there that the walk never
// saw).
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <span>

#include "base/status.h"

namespace microscope::unwind {

// `data`: the section's bytes (.eh_frame when `eh_frame`, else
// .debug_frame); `fde_offsets`: the section offsets .eh_frame_hdr's table
// gives, if any.
Status CheckCfiSection(const unsigned char* e_ident, Elf_Data* data, bool eh_frame,
                       std::span<const uint64_t> fde_offsets);

}  // namespace microscope::unwind
