// Reads a code object's names and line table out of a running CPython
// process, by the release's Layout. Target memory is untrusted: every
// object is proved by its type before its fields are believed, sizes are
// bounded, and each refusal says what was wrong where.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/record/process_memory.h"
#include "src/runtimes/python/layout.h"
#include "src/runtimes/python/line_table.h"

namespace microscope::runtimes::python {

using record::ProcessMemory;

// Where the target's runtime state and type objects are: the interpreter
// module's symbols plus its load bias.
struct InterpreterAddresses {
  uint64_t runtime = 0;  // _PyRuntime
  uint64_t code = 0;     // PyCode_Type
  uint64_t str = 0;      // PyUnicode_Type
  uint64_t bytes = 0;    // PyBytes_Type
  // What thread names are proved by (0: not found, no names read).
  uint64_t dict = 0;    // PyDict_Type
  uint64_t long_ = 0;   // PyLong_Type
  uint64_t module = 0;  // PyModule_Type
  // The same in a process that loaded the file `bias` bytes from its
  // link-time addresses (one not found stays 0).
  InterpreterAddresses Biased(uint64_t bias) const {
    InterpreterAddresses b;
    for (auto field :
         {&InterpreterAddresses::runtime, &InterpreterAddresses::code, &InterpreterAddresses::str,
          &InterpreterAddresses::bytes, &InterpreterAddresses::dict, &InterpreterAddresses::long_,
          &InterpreterAddresses::module}) {
      b.*field = this->*field == 0 ? 0 : this->*field + bias;
    }
    return b;
  }
};
Result<InterpreterAddresses> InterpreterAddressesFromElf(const std::string& path, uint64_t bias);

struct CodeInfo {
  uint64_t filename_object = 0;  // the str objects the names were read from
  uint64_t qualname_object = 0;
  std::string filename;
  std::string qualname;
  int first_line = 0;
  LineTable lines;              // co_linetable, decoded once
  size_t line_table_bytes = 0;  // its size
  std::string lines_error;      // non-empty: the line table was not readable (no lines)
};

// The threads of every interpreter of the process: each thread state's
// address and its native thread id (as the target's pid namespace sees it),
// at most `max_threads` of them; refused when a list is unreadable.
struct PythonThread {
  uint64_t state = 0;
  uint64_t native_id = 0;
  uint64_t ident = 0;  // thread_id: threading's ident (pthread_self)
};
Result<std::vector<PythonThread>> ListThreads(ProcessMemory& memory, const Layout& layout,
                                              const InterpreterAddresses& at,
                                              size_t max_threads = 4096);

// The code objects a thread's frames run, leaf first, each with the fields
// a BPF walk proves it by (what python_walk.bpf.h reads, read here from
// user space): at most `max_frames`; refused when the thread state or its
// frame chain is unreadable.
struct FrameCode {
  uint64_t code = 0;
  uint64_t qualname = 0;
  uint64_t filename = 0;
  int32_t first_line = 0;
};
Result<std::vector<FrameCode>> ReadFrameCodes(ProcessMemory& memory, const Layout& layout,
                                              uint64_t tstate, size_t max_frames = 128);

// Reads of target memory shared by the readers here.
template <typename T>
bool ReadValue(ProcessMemory& memory, uint64_t address, T* out) {
  return memory.Read(address, out, sizeof(T));
}
// "WHAT at ADDRESS is not readable".
Status Unreadable(const char* what, uint64_t address);
// Proves the object at `object` has type `want`.
Status CheckType(ProcessMemory& memory, const Layout& layout, uint64_t object, uint64_t want,
                 const char* what);

// The str object at `str` as UTF-8 (compact strings of any kind), proved
// by its type; `what` names it in a refusal.
Result<std::string> ReadStr(ProcessMemory& memory, const Layout& layout,
                            const InterpreterAddresses& types, uint64_t str, const char* what);

// The code object at `code`, its names as UTF-8 (compact strings of any
// kind; a legacy, non-compact string is refused).
Result<CodeInfo> ReadCode(ProcessMemory& memory, const Layout& layout,
                          const InterpreterAddresses& types, uint64_t code);

}  // namespace microscope::runtimes::python
