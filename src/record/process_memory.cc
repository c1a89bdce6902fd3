#include "src/record/process_memory.h"

#include <sys/uio.h>
#include <unistd.h>

namespace microscope::record {

bool ProcessMemory::Read(uint64_t address, void* out, size_t size) {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == ssize_t(size);
}

std::string TargetFile(uint32_t pid, std::string_view path) {
  std::string in_root = "/proc/" + std::to_string(pid) + "/root" + std::string(path);
  return access(in_root.c_str(), R_OK) == 0 ? in_root : std::string(path);
}

void AppendUtf8(uint32_t c, std::string* out) {
  if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff) c = 0xfffd;
  if (c < 0x80) {
    *out += char(c);
  } else if (c < 0x800) {
    *out += char(0xc0 | (c >> 6));
    *out += char(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    *out += char(0xe0 | (c >> 12));
    *out += char(0x80 | ((c >> 6) & 0x3f));
    *out += char(0x80 | (c & 0x3f));
  } else {
    *out += char(0xf0 | (c >> 18));
    *out += char(0x80 | ((c >> 12) & 0x3f));
    *out += char(0x80 | ((c >> 6) & 0x3f));
    *out += char(0x80 | (c & 0x3f));
  }
}

}  // namespace microscope::record
