// What a file or a process tells about the CPython in it, read once: a
// module's interpreter (its layout, addresses and eval loop), whether a
// program looks like Python, and a process's pid namespace.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/runtimes/python/code_reader.h"
#include "src/runtimes/python/layout.h"
#include "src/symbols/elf_image.h"

namespace microscope::runtimes::python {

// What a module tells about the interpreter in it, found once per module.
struct ModuleInfo {
  bool python = false;  // carries _PyRuntime
  std::string error;    // a CPython the walker cannot read, and why
  Layout layout;
  InterpreterAddresses at;  // link-time addresses (bias 0)
  std::vector<symbols::LoadSegment> loads;
  uint64_t eval_begin = 0, eval_end = 0;  // _PyEval_EvalFrameDefault, as file offsets
  // The file's symbols as the symbolizer reads them (a debug file's where
  // one is installed): whether they name an eval loop activation's code.
  std::unique_ptr<symbols::ElfImage> image;
};

// What the file at `path` tells about the interpreter in it.
std::unique_ptr<ModuleInfo> ReadModuleInfo(const std::string& path);

// Whether the launched program (its file at `path`), or the attached
// process `target`, looks like a Python interpreter (or a script run by
// one): then the walker starts at once, before its first sample.
bool LooksLikePython(bool launch, uint32_t target, const std::string& path);

// Whether the launched program (its file at `path`) is a script or a
// program that runs others (a shell, env, nice, timeout...): one that may
// exec an interpreter, which the walker, on from the start, then holds at
// its exec until it is laid out.
bool LooksLikeLauncher(const std::string& path);

// The (pid namespace dev, inode) of a process ("self", or a pid); nullopt
// when unreadable.
std::optional<std::pair<uint64_t, uint64_t>> PidNamespace(const std::string& pid);

// For a process in another pid namespace: its threads' ids there, mapped to
// the ids the recorder sees (NSpid's first and last fields).
std::unordered_map<uint64_t, uint32_t> NamespaceTids(uint32_t pid);

}  // namespace microscope::runtimes::python
