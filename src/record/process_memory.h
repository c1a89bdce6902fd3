// What the runtimes' user-space readers share: another process's memory,
// and text made of the code points read from it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace microscope::record {

// Reads bytes of another process (process_vm_readv); false when they are
// not mapped, or the process is gone. Virtual: tests read from a buffer.
class ProcessMemory {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  virtual ~ProcessMemory() = default;
  virtual bool Read(uint64_t address, void* out, size_t size);

 private:
  pid_t pid_;
};

// The file of a mapping as its process sees it (its root may be a
// container's).
std::string TargetFile(uint32_t pid, std::string_view path);

// Appends code point `c` as UTF-8; a lone surrogate or a value past
// U+10FFFF becomes U+FFFD.
void AppendUtf8(uint32_t c, std::string* out);

}  // namespace microscope::record
