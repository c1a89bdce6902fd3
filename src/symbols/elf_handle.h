// Owned libelf handles, one definition for every reader of ELF files
// (symbols, build IDs, CFI): an Elf* is ended by its owner on every path,
// never by hand (STYLE.md rule 5).
#pragma once

#include <libelf.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope::symbols {

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfPtr = std::unique_ptr<Elf, ElfDeleter>;

// An ELF file open for reading. libelf reads through the descriptor for as
// long as the handle lives, so the two are owned together: `elf` is declared
// after `fd` and so ends before it closes.
struct ElfFile {
  ScopedFd fd;
  ElfPtr elf;
};

// Opens `path` (a regular file only, base/open_file.h) as ELF; the error
// says what was wrong, without the path.
Result<ElfFile> OpenElfFile(const std::string& path);

// An ELF image in memory (the vDSO); `bytes` must outlive the handle.
Result<ElfPtr> ElfFromMemory(std::span<const uint8_t> bytes);

}  // namespace microscope::symbols
