#include "src/symbols/elf_handle.h"

#include "base/open_file.h"

namespace microscope::symbols {
namespace {

void InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  (void)ok;
}

Status NotElf() {
  return Status::Error(StatusCode::kDataLoss,
                       std::string("not readable as ELF: ") + elf_errmsg(-1));
}

}  // namespace

Result<ElfFile> OpenElfFile(const std::string& path) {
  InitLibelf();
  ElfFile file;
  ASSIGN_OR_RETURN(file.fd, OpenRegularFile(path));
  file.elf.reset(elf_begin(file.fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!file.elf) return NotElf();
  return file;
}

Result<ElfPtr> ElfFromMemory(std::span<const uint8_t> bytes) {
  InitLibelf();
  // libelf takes a mutable pointer but only reads an ELF_C_READ image.
  ElfPtr elf(elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(bytes.data())), bytes.size()));
  if (!elf) return NotElf();
  return elf;
}

}  // namespace microscope::symbols
