// Loads what the unwinder needs from one module image: its build ID, its
// PT_LOAD segments (for the load bias) and its CFI table. Loaded once per
// build ID and shared by every process that maps the module.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/symbols/elf_image.h"
#include "src/unwind/cfi_table.h"

namespace microscope::record {

struct ModuleCfi {
  std::vector<uint8_t> build_id;
  std::vector<symbols::LoadSegment> loads;
  std::unique_ptr<unwind::CfiTable> table;

  // The bias (pc - link-time address) of a mapping of this module at
  // `start` with file offset `pgoff`; false when no segment holds pgoff.
  bool Bias(uint64_t start, uint64_t pgoff, uint64_t* bias) const;
};

Result<std::unique_ptr<ModuleCfi>> LoadModuleCfi(const std::string& path);

// Module CFI loaded once per build ID and shared: by every process that
// maps the module, and by successive recordings in one program.
class CfiCache {
 public:
  // The CFI of the module with `build_id` (when known) from the first of
  // `paths` that holds it (the target's view of the file first, when it has
  // its own root), or of the in-memory `image` (the vDSO) when it is
  // non-empty. A file whose build ID differs from the recorded one is
  // refused and the next path tried.
  Result<std::shared_ptr<const ModuleCfi>> Get(const std::vector<uint8_t>& build_id,
                                               std::span<const std::string> paths,
                                               std::span<const uint8_t> image = {});

 private:
  std::map<std::string, std::shared_ptr<const ModuleCfi>> modules_;
};
Result<std::unique_ptr<ModuleCfi>> LoadModuleCfiFromMemory(std::span<const uint8_t> image);

}  // namespace microscope::record
