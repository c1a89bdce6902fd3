// The seam where JIT code is named at record time: perf maps, jitdump
// files, the GDB JIT interface. A source hands the processor a JitNamer
// (EventSource::jit_namer()); the processor asks it about each user frame
// that lands in anonymous code, and a frame it names goes in a module of
// its own (the map, dump or object that named it) with its function set:
// no build ID proves such names later, so they are kept now.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "src/record/mapping_watcher.h"

namespace microscope::unwind {
class CfiTable;
}

namespace microscope::record {

// Told of mappings (MappingWatcher): a JIT maps its jitdump file so that
// profilers find it, and the GDB JIT interface's descriptor is a symbol of
// a mapped module.
class JitNamer : public MappingWatcher {
 public:
  struct Symbol {
    std::string_view module;  // what named it, as a module path ("/tmp/perf-12.map")
    std::string_view name;    // the function
  };
  virtual ~JitNamer() = default;
  // What names `address` of process `pid` (anonymous code), or nullopt.
  // The views are valid during the call.
  virtual std::optional<Symbol> Lookup(uint32_t pid, uint64_t address) = 0;
  // The unwinding rules that cover `address` of process `pid` (anonymous
  // code this namer names), at absolute addresses; null when it has none
  // (the unwinding policy for code without CFI applies). Valid while the
  // namer lives.
  virtual const unwind::CfiTable* UnwindTable(uint32_t pid, uint64_t address) = 0;
};

}  // namespace microscope::record
