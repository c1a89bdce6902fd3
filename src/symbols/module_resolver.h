// Finds the files that name one module's frames: its own binary, debug
// files (by build ID in debug directories, a sysroot or from debuginfod),
// /proc/kallsyms for the kernel and our own image for the vDSO. Every file
// is proven by its build ID before use; what was looked at, used and found
// wanting is told in the module's summary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/capture.h"
#include "src/symbols/debuginfod.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

namespace microscope::symbols {

// Files under a debug directory, by their own build ID: for debug files
// that are not in a .build-id tree. Built on first use; reads only ELF notes.
class DirectoryIndex {
 public:
  explicit DirectoryIndex(std::string dir) : dir_(std::move(dir)) {}
  const std::vector<std::string>& Find(const std::string& build_id);

 private:
  void Build();

  std::string dir_;
  bool built_ = false;
  std::unordered_map<std::string, std::vector<std::string>> by_id_;
};

// What was found for one module.
struct ModuleFiles {
  std::unique_ptr<ElfImage> image;  // symbols (perhaps from a debug file)
  // PT_LOAD segments from a file that has its code (a debug file's have no
  // file offsets): used when the capture recorded none.
  std::vector<LoadSegment> layout;
  std::unique_ptr<LineTable> lines;
  std::optional<SymbolTable> kernel;  // kallsyms
  const char* reason = kNoFile;       // why frames stay unnamed when nothing is usable
};

// Finds each module's files. Not copyable: it owns the debuginfod client
// and refers to the caller's options.
class Resolver {
 public:
  // `recorded_boot_id`: the boot the capture was recorded in.
  Resolver(const SymbolizeOptions& options, std::string recorded_boot_id);
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  ModuleFiles Resolve(const capture::Module& mod, const std::string& path, ModuleSummary* sum);

 private:
  // One module's search so far.
  struct Search {
    ModuleFiles files;
    ModuleSummary* sum;
    bool mismatch = false;  // some file had another build ID
    bool complete = false;  // nothing more to find (the vDSO has no DWARF)
    // The best there is: full symbols and DWARF lines.
    bool Done() const;
  };

  ModuleFiles ResolveKernel(const capture::Module& mod, ModuleSummary* sum);
  void TryOwnVdso(const capture::Module& mod, Search* s);
  ModuleFiles ResolveWithoutBuildId(const std::string& path,
                                    const std::vector<std::string>& targets, Search* s);
  // Where the module's debug files may be, as (where, path) pairs, in order.
  std::vector<std::pair<std::string, std::string>> Candidates(
      const std::string& path, const std::vector<std::string>& targets);
  // Tries the module's own file; true when it is the module's.
  // `where` names the place in the summary ("": the recorded path).
  bool TryOriginal(const std::string& original, const std::string& where, Search* s);
  // Tries one candidate; true when it proved to be the module's file.
  bool Try(const std::string& candidate, const std::string& where, Search* s);
  bool TakeSymbols(const std::string& candidate, Search* s, std::string* found);
  bool TakeLines(const std::string& candidate, Search* s, std::string* found);
  void TryDebuginfod(Search* s);

  const SymbolizeOptions& options_;
  const std::string recorded_boot_id_;
  std::vector<DirectoryIndex> indexes_;
  DebuginfodClient debuginfod_;
  std::vector<uint8_t> build_id_;
  std::string hex_;
};

}  // namespace microscope::symbols
