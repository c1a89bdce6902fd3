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
#include "src/runtimes/python/layout.h"

namespace microscope::runtimes::python {

// Reads bytes of another process (process_vm_readv); false when they are
// not mapped, or the process is gone.
class ProcessMemory {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  virtual ~ProcessMemory() = default;
  virtual bool Read(uint64_t address, void* out, size_t size);

 private:
  pid_t pid_;
};

// Where the target's type objects are: the interpreter module's symbols
// plus its load bias.
struct TypeAddresses {
  uint64_t code = 0;   // PyCode_Type
  uint64_t str = 0;    // PyUnicode_Type
  uint64_t bytes = 0;  // PyBytes_Type
};
Result<TypeAddresses> TypeAddressesFromElf(const std::string& path, uint64_t bias);

struct CodeInfo {
  std::string filename;
  std::string qualname;
  int first_line = 0;
  std::vector<uint8_t> line_table;
};

// The code object at `code`. Names that are not compact ASCII strings are
// refused (their other encodings are not read yet).
Result<CodeInfo> ReadCode(ProcessMemory& memory, const Layout& layout, const TypeAddresses& types,
                          uint64_t code);

}  // namespace microscope::runtimes::python
