#include "src/runtimes/jit/gdb_jit.h"

#include <gelf.h>

#include "base/hex.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::runtimes::jit {

Result<std::vector<GdbJitEntry>> ReadGdbJitEntries(record::ProcessMemory& memory, uint64_t descriptor) {
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
  Elf* e = elf.get();
  symbols::ForEachDefinedSymbol(e, SHT_SYMTAB, [&](const GElf_Sym& sym, std::string_view name) {
    if (sym.st_size == 0 || GELF_ST_TYPE(sym.st_info) != STT_FUNC || name.empty()) return true;
    uint64_t start = sym.st_value;
    if (relocatable) {
      GElf_Shdr section;
      Elf_Scn* holder = sym.st_shndx < SHN_LORESERVE ? elf_getscn(e, sym.st_shndx) : nullptr;
      if (holder == nullptr || gelf_getshdr(holder, &section) == nullptr) return true;
      start += section.sh_addr;
    }
    if (start + sym.st_size >= start)
      out.push_back({start, start + sym.st_size, std::string(name)});
    return true;
  });
  if (out.empty()) return Status::Error(StatusCode::kNotFound, "no function symbols");
  return out;
}

Result<std::unique_ptr<unwind::CfiTable>> GdbJitObjectCfi(std::span<const uint8_t> bytes) {
  ASSIGN_OR_RETURN(symbols::ElfPtr elf, symbols::ElfFromMemory(bytes));
  // Small, and refused now when it holds no row: decoded up front.
  ASSIGN_OR_RETURN(std::unique_ptr<unwind::CfiTable> table,
                   unwind::CfiTable::FromElf(elf.get(), unwind::CfiTable::Decoding::kUpFront));
  if (!table->has_cfi() || table->size() == 0)
    return Status::Error(StatusCode::kNotFound, "no CFI");
  return table;
}

}  // namespace microscope::runtimes::jit
