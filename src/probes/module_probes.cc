#include "src/probes/module_probes.h"

#include <gelf.h>

#include <cstring>
#include <span>

#include "src/probes/abi.h"
#include "src/probes/probe_source.h"
#include "src/symbols/elf_handle.h"

namespace microscope::probes {
namespace {

constexpr uint64_t kMaxSection = 64ull << 20;

// The names and prefixes of a selection, as written (commas between).
std::vector<std::string_view> SelectionItems(std::string_view selection) {
  std::vector<std::string_view> items;
  while (!selection.empty()) {
    const size_t comma = selection.find(',');
    items.push_back(selection.substr(0, comma));
    selection = comma == std::string_view::npos ? std::string_view() : selection.substr(comma + 1);
  }
  return items;
}

}  // namespace

bool Selected(std::string_view selection, std::string_view name) {
  for (std::string_view item : SelectionItems(selection)) {
    if (item == "all" || item == "*") return true;
    if (item.ends_with('*') ? name.starts_with(item.substr(0, item.size() - 1)) : name == item)
      return true;
  }
  return false;
}

Result<std::string> SelectionLines(std::string_view selection) {
  std::string lines;
  if (selection.empty()) return Status::Error("an empty selection (all, NAME or PREFIX*)");
  for (std::string_view item : SelectionItems(selection)) {
    if (item.empty()) return Status::Error("an empty name in the selection");
    if (item.find('\n') != std::string_view::npos || item.find('\0') != std::string_view::npos)
      return Status::Error("a name with a line break or NUL in the selection");
    if (item.find('*') != std::string_view::npos && item.find('*') != item.size() - 1)
      return Status::Error("'" + std::string(item) + "': '*' only ends a prefix");
    lines += item == "all" ? std::string_view("*") : item;
    lines += '\n';
  }
  if (lines.size() >= MICROSCOPE_SELECTION_SIZE) {
    return Status::Error("the selection takes " + std::to_string(lines.size()) +
                         " bytes; a program keeps " +
                         std::to_string(MICROSCOPE_SELECTION_SIZE - 1));
  }
  return lines;
}

ModuleProbes ReadModuleProbes(const std::string& file) {
  ModuleProbes out;
  Result<symbols::ElfFile> elf = symbols::OpenElfFile(file);
  if (!elf.ok()) return out;
  Elf* e = elf.value().elf.get();
  GElf_Shdr ctl_shdr;
  Elf_Scn* ctl = symbols::SectionByName(e, "microscope_ctl", &ctl_shdr);
  if (ctl == nullptr) return out;
  out.has_ctl = true;
  out.ctl_vaddr = ctl_shdr.sh_addr;
  Elf_Data* ctl_data = elf_getdata(ctl, nullptr);
  microscope_ctl initial;
  if (ctl_shdr.sh_type != SHT_PROGBITS || ctl_data == nullptr || ctl_data->d_buf == nullptr ||
      ctl_data->d_size < kCtlSize) {
    out.refused = "its microscope_ctl section holds no control block";
    return out;
  }
  std::memcpy(&initial, ctl_data->d_buf, sizeof(initial));
  if (initial.magic != MICROSCOPE_CTL_MAGIC) {
    out.refused = "its control block has no magic";
    return out;
  }
  if (initial.version != kAbiVersion) {
    out.refused = "its probes are of layout version " + std::to_string(initial.version) +
                  "; this recorder reads version " + std::to_string(kAbiVersion);
    return out;
  }
  Result<std::vector<symbols::LoadSegment>> loads = symbols::ElfLoadSegments(e);
  if (!loads.ok()) {
    out.refused = loads.status().message();
    return out;
  }
  out.loads = std::move(loads).value();
  GElf_Shdr sites_shdr;
  Elf_Scn* sites = symbols::SectionByName(e, "microscope_sites", &sites_shdr);
  if (sites != nullptr && sites_shdr.sh_type == SHT_PROGBITS && sites_shdr.sh_size <= kMaxSection) {
    Elf_Data* data = elf_getdata(sites, nullptr);
    if (data != nullptr && data->d_buf != nullptr) {
      SiteSection parsed = ParseSiteSection(
          std::span<const uint8_t>(static_cast<const uint8_t*>(data->d_buf), data->d_size),
          sites_shdr.sh_addr);
      out.sites = std::move(parsed.sites);
      if (parsed.malformed > 0) {
        out.refused = std::to_string(parsed.malformed) + " malformed site entries, the first: " +
                      parsed.first_error;  // said, and the good entries still read
      }
    }
  }
  return out;
}

}  // namespace microscope::probes
