// Probe sites as a program lays them out (sdk/c/microscope.h): the static
// sites of a module's microscope_sites section, read from its ELF file, and
// the run-time sites of its table, read from its memory. Both are untrusted
// bytes: a malformed entry is an error naming its address, never a read
// past the bytes given.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace microscope::probes {

struct SiteText {
  uint64_t address = 0;  // where the entry is (the section's addresses, or the table's)
  uint8_t kind = 0;      // MICROSCOPE_KIND_*
  uint32_t line = 0;
  std::string name;
  std::string file;
};

struct SiteSection {
  std::vector<SiteText> sites;
  size_t malformed = 0;  // entries refused (the rest of the section is still read)
  std::string first_error;
};

// The entries of a microscope_sites section whose bytes start at `address`.
// Padding between the objects' pieces (zero words) is skipped.
SiteSection ParseSiteSection(std::span<const uint8_t> bytes, uint64_t address);

// One slot of the run-time table (MICROSCOPE_RUNTIME_SITE_SIZE bytes at
// `address`): nullopt while the program is still writing it (no magic yet).
Result<std::optional<SiteText>> ParseRuntimeSlot(std::span<const uint8_t> slot, uint64_t address);

}  // namespace microscope::probes
