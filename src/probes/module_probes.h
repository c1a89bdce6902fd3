// What a module's file says of its probes (its control block and static
// sites, read once per file), and what a selection (`--probes`) picks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/probes/site_entries.h"
#include "src/symbols/elf_image.h"

namespace microscope::probes {

// A module's probes as its file has them.
struct ModuleProbes {
  bool has_ctl = false;
  std::string refused;  // why its probes are not read
  uint64_t ctl_vaddr = 0;
  std::vector<symbols::LoadSegment> loads;
  std::vector<SiteText> sites;  // at link-time addresses
};

// Reads the sections of `file` (any problem said in `refused`; a file
// without probes has no control block).
ModuleProbes ReadModuleProbes(const std::string& file);

}  // namespace microscope::probes
