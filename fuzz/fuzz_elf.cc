// ELF files: the image loader (segments, build ID, symbol tables, PLT), the
// CFI table built from the file's .eh_frame or .debug_frame: decoded up
// front (every FDE), and on demand through the executable sections; and the
// assembly view's reader (formats/assembly_text) over the file as a module
// whose build ID the capture names.
#include <gelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/hex.h"
#include "formats/assembly_text.h"
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
    using Decoding = unwind::CfiTable::Decoding;
    (void)unwind::CfiTable::FromElf(elf->get(), Decoding::kUpFront);
    if (auto lazy = unwind::CfiTable::FromElf(elf->get()); lazy.ok()) {
      (void)(*lazy)->Find(0x1000);
      // Through the first 4 KiB of every executable section.
      for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf->get(), scn)) != nullptr;) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) == nullptr || (shdr.sh_flags & SHF_EXECINSTR) == 0) continue;
        for (uint64_t at = 0; at < std::min<uint64_t>(shdr.sh_size, 4096); at += 4)
          (void)(*lazy)->Find(shdr.sh_addr + at);
      }
    }
    (void)symbols::ElfLoadSegments(elf->get());
    const std::vector<uint8_t> id = symbols::ElfBuildId(elf->get());
    ScopedFd file(memfd_create("module", MFD_CLOEXEC));
    if (!id.empty() && file.valid() && write(file.get(), data, size) == ssize_t(size)) {
      analysis::ReportAssembly assembly;
      analysis::ReportAssemblyModule& m = assembly.modules.emplace_back();
      m.path = "module";
      m.build_id = HexBytes(id);
      for (uint64_t offset : {uint64_t(0x1000), uint64_t(0x1040), uint64_t(size / 2)})
        m.addresses.push_back({offset, {1, 1, 1}, {1, 1, 1}});
      formats::ReadAssemblyText(&assembly, [&](const std::string&) -> Result<ScopedFd> {
        return ScopedFd(dup(file.get()));
      });
    }
  }
  return 0;
}
