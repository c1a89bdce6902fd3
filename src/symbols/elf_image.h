// What the recorder needs from one ELF file: its build ID, its PT_LOAD
// segments (to turn file offsets into link-time addresses), and its function
// symbols. Read with elfutils' libelf; every failure is a Status naming the file.
#pragma once

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "src/symbols/symbol_table.h"

namespace microscope::symbols {

struct LoadSegment {
  uint64_t offset;
  uint64_t vaddr;
  uint64_t filesz;
  uint64_t memsz;
};

// Link-time address of a file offset through these PT_LOAD segments, or
// false when none covers it. Shared by symbolization and unwinding.
bool OffsetToVaddr(std::span<const LoadSegment> loads, uint64_t offset, uint64_t* vaddr);

struct ElfImage {
  std::vector<uint8_t> build_id;
  uint64_t file_size = 0;
  std::vector<LoadSegment> loads;
  SymbolTable symbols{SymbolTable::Aliases::kPublicName};
  std::string symbol_source;  // ".symtab", ".dynsym", or a debug file's path

  // Link-time address of a file offset, or false when no PT_LOAD covers it.
  bool OffsetToVaddr(uint64_t offset, uint64_t* vaddr) const;
};

// Reads only the build ID (cheap: no symbol table).
Result<std::vector<uint8_t>> ReadBuildId(const std::string& path);

// Build ID and PT_LOAD segments only (headers and notes).
struct ElfLayout {
  std::vector<uint8_t> build_id;
  std::vector<LoadSegment> loads;
};
Result<ElfLayout> ReadElfLayout(const std::string& path);

// Reads build ID, segments and symbols from a file on disk. When the file has
// no .symtab and `find_debug_file`, a debug file under
// /usr/lib/debug/.build-id with the same build ID is used for symbols.
Result<std::unique_ptr<ElfImage>> LoadElfImage(const std::string& path,
                                               bool find_debug_file = true);

// Adds `binary`'s PLT stubs (name@plt) to `image` (whose symbols may come
// from a debug file, where .plt holds no bytes) and re-sorts its table.
Status AddPltSymbolsOf(const std::string& binary, ElfImage* image);

// The same from an image in memory (the vDSO).
Result<std::unique_ptr<ElfImage>> LoadElfImageFromMemory(std::span<const uint8_t> bytes);

// Our own vDSO image (the one the kernel maps into every 64-bit process),
// or empty when the auxiliary vector has none.
std::span<const uint8_t> OwnVdsoImage();
// Its build ID (empty when none), read once.
const std::vector<uint8_t>& OwnVdsoBuildId();

// C++ names as users read them; other names unchanged.
std::string Demangle(const std::string& name);

// The pieces both symbolization and unwinding read from an open ELF.
std::vector<uint8_t> ElfBuildId(Elf* elf);
// The section named `wanted` (its header in *shdr), or null.
Elf_Scn* SectionByName(Elf* elf, std::string_view wanted, GElf_Shdr* shdr);
// Calls `fn` with each defined symbol (and its name) of the file's symbol
// tables of type `table` (SHT_SYMTAB or SHT_DYNSYM) until it returns false.
void ForEachDefinedSymbol(Elf* elf, uint32_t table,
                          const std::function<bool(const GElf_Sym&, std::string_view)>& fn);
// The defined symbol named `wanted` in .dynsym or .symtab; false if none.
bool FindSymbol(Elf* elf, std::string_view wanted, GElf_Sym* out);
// The file's bytes from a symbol's address to its section's end; empty when
// the section has no bytes in the file (.bss) or does not hold the address.
std::span<const uint8_t> SymbolFileBytes(Elf* elf, const GElf_Sym& sym);
Result<std::vector<LoadSegment>> ElfLoadSegments(Elf* elf);

}  // namespace microscope::symbols
