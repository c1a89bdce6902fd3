// ELF files: the image loader (segments, build ID, symbol tables, PLT), and
// the CFI table built from the file's .eh_frame or .debug_frame.
#include <cstddef>
#include <cstdint>
#include <span>

#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"
#include "src/unwind/cfi_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope;
  const std::span<const uint8_t> bytes(data, size);
  if (auto image = symbols::LoadElfImageFromMemory(bytes); image.ok()) {
    (void)(*image)->symbols.Find(0x1000);
  }
  if (auto elf = symbols::ElfFromMemory(bytes); elf.ok()) {
    if (auto t = unwind::CfiTable::FromElf(elf->get()); t.ok()) (void)(*t)->Find(0x1000);
    (void)symbols::ElfLoadSegments(elf->get());
    (void)symbols::ElfBuildId(elf->get());
  }
  return 0;
}
