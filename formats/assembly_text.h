// Reads the machine code a report's assembly view names (report --asm,
// serve's assembly view), on the host that shows the report: each module's
// file, opened by the path the capture names under the source view's rules
// (formats/source_text.h: serve shows only what anyone could read), proven
// to be the file recorded by its build ID, and disassembled (Capstone) over
// the symbols that hold the costed addresses, each instruction with its
// costs. Everything left out says why ("not shown: ...").
#pragma once

#include <cstdint>

#include "analysis/report.h"
#include "formats/source_text.h"

namespace microscope::formats {

// A module file larger than this is not read (its symbol tables are).
inline constexpr uint64_t kMaxModuleBytes = uint64_t(1) << 30;
// Bytes of one symbol's code disassembled; the rest is counted.
inline constexpr uint64_t kMaxAssemblyBytes = 256 << 10;
// Symbols shown for one module (the function and its split-off parts).
inline constexpr size_t kMaxAssemblyRanges = 16;

// Fills each module's ranges (or unreadable) of `assembly`, opening files
// through `open`.
void ReadAssemblyText(analysis::ReportAssembly* assembly, const SourceOpener& open);

}  // namespace microscope::formats
