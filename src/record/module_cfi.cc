#include "src/record/module_cfi.h"

#include "base/hex.h"
#include "src/symbols/elf_handle.h"

namespace microscope::record {
namespace {

Result<std::unique_ptr<ModuleCfi>> FromElf(Elf* elf) {
  if (elf_kind(elf) != ELF_K_ELF) return Status::Error(StatusCode::kDataLoss, "not an ELF file");
  auto m = std::make_unique<ModuleCfi>();
  m->build_id = symbols::ElfBuildId(elf);
  ASSIGN_OR_RETURN(m->loads, symbols::ElfLoadSegments(elf));
  ASSIGN_OR_RETURN(m->table, unwind::CfiTable::FromElf(elf));
  return m;
}

}  // namespace

bool ModuleCfi::Bias(uint64_t start, uint64_t pgoff, uint64_t* bias) const {
  // The mapping's first byte (file offset pgoff) is at `start`; the bias is
  // the same for every address of the segment.
  uint64_t vaddr;
  if (!symbols::OffsetToVaddr(loads, pgoff, &vaddr)) return false;
  *bias = start - vaddr;
  return true;
}

Result<std::shared_ptr<const ModuleCfi>> CfiCache::Get(const std::vector<uint8_t>& build_id,
                                                       std::span<const std::string> paths,
                                                       std::span<const uint8_t> image) {
  if (build_id.empty() && paths.empty() && image.empty())
    return Status::Error(StatusCode::kNotFound, "no file to read");
  std::string key = !build_id.empty() ? HexBytes(build_id)
                    : paths.empty()   ? std::string("image")
                                      : "path:" + paths.front();
  auto it = modules_.find(key);
  if (it != modules_.end()) return it->second;
  Status why = Status::Error(StatusCode::kNotFound, "no file to read");
  std::unique_ptr<ModuleCfi> found;
  size_t i = 0;
  auto take = [&](Result<std::unique_ptr<ModuleCfi>> loaded, const std::string& where) {
    if (!loaded.ok()) {
      why = loaded.status();
    } else if (!build_id.empty() && (*loaded)->build_id != build_id) {
      why = Status::Error(where + "build ID mismatch: recorded " + HexBytes(build_id) +
                          ", file has " +
                          ((*loaded)->build_id.empty() ? "none" : HexBytes((*loaded)->build_id)));
    } else if (!(*loaded)->table->has_cfi() && i + 1 < paths.size()) {
      // A separate debug file keeps an empty .eh_frame: the next may have it.
      why = Status::Error(where + "no CFI");
    } else {
      found = std::move(loaded).value();
    }
  };
  if (!image.empty()) take(LoadModuleCfiFromMemory(image), "");
  for (; found == nullptr && image.empty() && i < paths.size(); ++i) {
    take(LoadModuleCfi(paths[i]), paths[i] + ": ");
  }
  if (found == nullptr) return why;
  std::shared_ptr<const ModuleCfi> shared = std::move(found);
  modules_.emplace(key, shared);
  return shared;
}

Result<std::unique_ptr<ModuleCfi>> LoadModuleCfi(const std::string& path) {
  ASSIGN_OR_RETURN(symbols::ElfFile file, symbols::OpenElfFile(path));
  return FromElf(file.elf.get());
}

Result<std::unique_ptr<ModuleCfi>> LoadModuleCfiFromMemory(std::span<const uint8_t> image) {
  ASSIGN_OR_RETURN(symbols::ElfPtr elf, symbols::ElfFromMemory(image));
  return FromElf(elf.get());
}

}  // namespace microscope::record
