// What JITs write and register: perf map lines, jitdump records (with their
// unwinding information turned into CFI), GDB JIT objects (symbols, CFI),
// and the rules proven from a function's first instructions. The first
// byte picks the reader.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "src/runtimes/jit/entry_code.h"
#include "src/runtimes/jit/gdb_jit.h"
#include "src/runtimes/jit/jitdump.h"
#include "src/runtimes/jit/perf_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope::runtimes::jit;
  if (size < 1) return 0;
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      PerfMapLines l = ParsePerfMapLines(
          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      SymbolRanges ranges;
      for (JitSymbol& s : l.symbols) ranges.Add(std::move(s));
      (void)ranges.Find(0x7f0000001000);
      break;
    }
    case 1: {
      (void)ParseJitDumpHeader(bytes);
      JitDumpRecords r = ParseJitDumpRecords(bytes, (data[0] & 4) != 0);
      for (const JitDumpRecords::Op& op : r.ops) {
        if (!op.is_move && !op.load.unwinding.empty()) (void)JitDumpUnwindTable(op.load);
      }
      break;
    }
    case 2:
      (void)GdbJitObjectSymbols(bytes);
      (void)GdbJitObjectCfi(bytes);
      break;
    case 3:
      if (auto t = ProveEntryCode(bytes, 0x7f0000000000)) (void)t->Find(0x7f0000000008);
      break;
  }
  return 0;
}
