#include "src/runtimes/jit/gdb_jit.h"

#include <gelf.h>

#include "base/hex.h"
#include "src/symbols/elf_handle.h"

namespace microscope::runtimes::jit {

Result<std::vector<GdbJitEntry>> ReadGdbJitEntries(ProcessMemory& memory, uint64_t descriptor) {
  struct {
    uint32_t version, action;
    uint64_t relevant, first;
  } d;
  if (!memory.Read(descriptor, &d, sizeof(d))) {
    return Status::Error(StatusCode::kUnavailable,
                         "__jit_debug_descriptor at " + HexAddress(descriptor) + " unreadable");
  }
  if (d.version != 1) {
    return Status::Error(StatusCode::kDataLoss,
                         "__jit_debug_descriptor version " + std::to_string(d.version) + ", not 1");
  }
  std::vector<GdbJitEntry> out;
  for (uint64_t at = d.first; at != 0;) {
    if (out.size() == kMaxGdbJitEntries) {
      return Status::Error(StatusCode::kDataLoss, "more than " + std::to_string(kMaxGdbJitEntries) +
                                                      " GDB JIT entries (the list goes on at " +
                                                      HexAddress(at) + ")");
    }
    struct {
      uint64_t next, prev, symfile, size;
    } e;
    if (!memory.Read(at, &e, sizeof(e))) {
      return Status::Error(StatusCode::kUnavailable,
                           "GDB JIT entry at " + HexAddress(at) + " unreadable");
    }
    out.push_back({e.symfile, e.size});
    at = e.next;
  }
  return out;
}

Result<std::vector<JitSymbol>> GdbJitObjectSymbols(std::span<const uint8_t> bytes) {
  ASSIGN_OR_RETURN(symbols::ElfPtr elf, symbols::ElfFromMemory(bytes));
  GElf_Ehdr eh;
  if (gelf_getehdr(elf.get(), &eh) == nullptr) {
    return Status::Error(StatusCode::kDataLoss, "no ELF header");
  }
  // In a relocatable object (what LLVM's JITs register) a symbol's value is
  // an offset in its section, which the JIT placed at the section's sh_addr.
  const bool relocatable = eh.e_type == ET_REL;
  std::vector<JitSymbol> out;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf.get(), scn)) != nullptr;) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0)
      continue;
    Elf_Data* syms = elf_getdata(scn, nullptr);
    for (size_t i = 0; syms != nullptr && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(syms, int(i), &sym) == nullptr || sym.st_size == 0 ||
          sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
          sym.st_value + sym.st_size < sym.st_value) {
        continue;
      }
      const char* name = elf_strptr(elf.get(), sh.sh_link, sym.st_name);
      if (name == nullptr || *name == '\0') continue;
      uint64_t start = sym.st_value;
      if (relocatable) {
        GElf_Shdr section;
        Elf_Scn* holder =
            sym.st_shndx < SHN_LORESERVE ? elf_getscn(elf.get(), sym.st_shndx) : nullptr;
        if (holder == nullptr || gelf_getshdr(holder, &section) == nullptr) continue;
        start += section.sh_addr;
      }
      if (start + sym.st_size < start) continue;
      out.push_back({start, start + sym.st_size, name});
    }
  }
  if (out.empty()) return Status::Error(StatusCode::kNotFound, "no function symbols");
  return out;
}

}  // namespace microscope::runtimes::jit
