#include "src/unwind/module_cfi.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/hex.h"
#include "base/open_file.h"
#include "base/scoped_fd.h"

namespace microscope::unwind {
namespace {

Result<std::unique_ptr<ModuleCfi>> FromElf(Elf* elf) {
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    return Status::Error(std::string("not readable as ELF: ") + elf_errmsg(-1));
  }
  auto m = std::make_unique<ModuleCfi>();
  m->build_id = symbols::ElfBuildId(elf);
  ASSIGN_OR_RETURN(m->loads, symbols::ElfLoadSegments(elf));
  ASSIGN_OR_RETURN(m->table, CfiTable::FromElf(elf));
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
                                                       const std::string& path,
                                                       std::span<const uint8_t> image) {
  std::string key = build_id.empty() ? "path:" + path : HexBytes(build_id);
  auto it = modules_.find(key);
  if (it != modules_.end()) return it->second;
  auto loaded = image.empty() ? LoadModuleCfi(path) : LoadModuleCfiFromMemory(image);
  if (!loaded.ok()) return loaded.status();
  if (!build_id.empty() && !(*loaded)->build_id.empty() && (*loaded)->build_id != build_id) {
    return Status::Error("build ID mismatch: recorded " + HexBytes(build_id) + ", file has " +
                         HexBytes((*loaded)->build_id));
  }
  std::shared_ptr<const ModuleCfi> shared = std::move(loaded).value();
  modules_.emplace(key, shared);
  return shared;
}

Result<std::unique_ptr<ModuleCfi>> LoadModuleCfi(const std::string& path) {
  elf_version(EV_CURRENT);
  ASSIGN_OR_RETURN(ScopedFd fd, OpenRegularFile(path));
  Elf* elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  auto result = FromElf(elf);
  if (elf != nullptr) elf_end(elf);
  return result;
}

Result<std::unique_ptr<ModuleCfi>> LoadModuleCfiFromMemory(std::span<const uint8_t> image) {
  elf_version(EV_CURRENT);
  Elf* elf = elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(image.data())), image.size());
  auto result = FromElf(elf);
  if (elf != nullptr) elf_end(elf);
  return result;
}

}  // namespace microscope::unwind
