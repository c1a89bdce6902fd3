// The names a CPython program's threading module gave its threads
// (Thread.name), read out of the running process: threading's `_active`
// dict (ident -> Thread), found in the interpreter's sys.modules, and each
// Thread's `_name`, from its values or its managed dict. CPython 3.13 on,
// whose debug offsets give where the interpreter keeps sys.modules and a
// dict its keys, and 3.11 from its table (read live from Debian's 3.11.2
// and pyenv's 3.11.7); not 3.12, whose sys.modules offset no 3.12 here can
// check. The rest (a dict's keys table, a module's dict, a heap type's
// cached keys) has kept one layout from 3.11 to 3.15. Target
// memory is untrusted: every object is proved by its type, every count
// bounded, and a refusal says what was wrong where.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "src/record/process_memory.h"
#include "src/runtimes/python/code_reader.h"
#include "src/runtimes/python/layout.h"

namespace microscope::runtimes::python {

// What one process's reads keep between calls: how far sys.modules was
// searched (its keys table and entries), and threading's module dict once
// found, so a program that never imports threading costs only its new
// modules at each call.
struct ThreadNamesCache {
  uint64_t modules_keys = 0;
  int64_t modules_searched = 0;
  uint64_t threading_dict = 0;
};

// Whether `layout`'s release and `at`'s types let thread names be read.
bool ThreadNamesReadable(const Layout& layout, const InterpreterAddresses& at);

// Each thread's name by its ident (thread_state.thread_id); empty when the
// program has not imported threading. Refused when an object on the way is
// unreadable or not what it should be; a Thread whose name is not a str is
// left out.
Result<std::unordered_map<uint64_t, std::string>> ReadThreadNames(ProcessMemory& memory,
                                                                  const Layout& layout,
                                                                  const InterpreterAddresses& at,
                                                                  ThreadNamesCache* cache);

}  // namespace microscope::runtimes::python
