// The seam for what must know each process's executable mappings as the
// recording learns them: JIT namers (jit_namer.h) and the probes source,
// which finds a program's instrumentation in the modules it maps. A source
// hands the processor one through EventSource::mapping_watcher().
#pragma once

#include <cstdint>

namespace microscope::record {

struct MappedModule;  // splicer.h

class MappingWatcher {
 public:
  virtual ~MappingWatcher() = default;
  // Each executable mapping as it appears (those already known first).
  virtual void OnMapping(const MappedModule& mapping) = 0;
  // Process `pid`'s address space ended (it exec'd another program, or
  // exited and its pid may be reused): nothing read for it holds.
  virtual void Forget(uint32_t pid) = 0;
};

}  // namespace microscope::record
