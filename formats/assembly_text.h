// Reads the machine code a report's assembly view names (report --asm,
// serve's assembly view), on the host that shows the report: each module's
// file, opened by the path the capture names under the source view's rules
// (formats/source_text.h: serve shows only what anyone could read), proven
// to be the file recorded by its build ID, and disassembled (Capstone) over
// the symbols that hold the costed addresses (a stripped file's from its
// debug file under /usr/lib/debug/.build-id, opened alike and proven by
// the same ID), each instruction with its costs. Everything left out says
// why ("not shown: ...").
#pragma once

#include <cstdint>

#include "analysis/report.h"
#include "formats/source_text.h"

namespace microscope::formats {

// A module file is read whole, at most this (its debug file too).
inline constexpr uint64_t kMaxModuleBytes = uint64_t(512) << 20;
// Bytes of one symbol's code disassembled, and of all the report's; the
// rest is counted.
inline constexpr uint64_t kMaxAssemblyBytes = 256 << 10;
inline constexpr uint64_t kMaxAssemblyTotalBytes = 1 << 20;
// Symbols shown for one module (the most costly: the function and its
// split-off parts), and modules read (the most costly).
inline constexpr size_t kMaxAssemblyRanges = 16;
inline constexpr size_t kMaxAssemblyModules = 16;
// A module's function symbols taken, and the longest name.
inline constexpr size_t kMaxSymbols = 4 << 20;
inline constexpr size_t kMaxSymbolName = 4096;

// Fills each module's ranges (or unreadable) of `assembly`, opening files
// through `open`.
void ReadAssemblyText(analysis::ReportAssembly* assembly, const SourceOpener& open);

// What a report's views show from files of the host showing it: the source
// view's lines and the assembly view's code, each when the report has it
// (report and serve alike, so that their JSON agrees).
void ReadViewFiles(analysis::ReportModel* model, const SourceOpener& open);

}  // namespace microscope::formats
