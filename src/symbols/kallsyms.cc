#include "src/symbols/kallsyms.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "base/hex.h"
#include "base/scoped_fd.h"

namespace microscope::symbols {

Result<SymbolTable> ParseKallsyms(std::string_view text) {
  SymbolTable table;
  size_t nonzero = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    // "ffffffff81000000 T _stext" optionally followed by "\t[module]".
    const size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 + 3 > line.size()) continue;
    const char type = line[sp1 + 1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    uint64_t addr = 0;
    if (!ParseHex(line.substr(0, sp1), &addr) || addr == 0) continue;
    std::string_view name = line.substr(sp1 + 3);
    name = name.substr(0, name.find('\t'));
    ++nonzero;
    table.Add(addr, 0, name);
  }
  if (nonzero == 0) {
    return Status::Error("no kernel function addresses (kernel.kptr_restrict hides them)");
  }
  table.Finish();
  return table;
}

Result<SymbolTable> LoadKallsyms(const std::string& path) {
  // In large reads (the kernel formats a few pages per read whatever the
  // size asked; a stream's 8 KiB reads took some 2,700 system calls).
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::Error("cannot open " + path + ": " + strerror(errno));
  std::string text;
  std::vector<char> chunk(1 << 20);
  for (;;) {
    const ssize_t n = read(fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error("cannot read " + path + ": " + strerror(errno));
    if (n == 0) break;
    text.append(chunk.data(), size_t(n));
  }
  auto table = ParseKallsyms(text);
  if (!table.ok()) return table.status().WithContext(path);
  return table;
}

std::vector<uint8_t> KernelBuildId() {
  std::ifstream in("/sys/kernel/notes", std::ios::binary);
  std::string notes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t off = 0;
  while (off + 12 <= notes.size()) {
    uint32_t namesz, descsz, type;
    std::memcpy(&namesz, notes.data() + off, 4);
    std::memcpy(&descsz, notes.data() + off + 4, 4);
    std::memcpy(&type, notes.data() + off + 8, 4);
    size_t name_off = off + 12;
    size_t desc_off = name_off + ((size_t(namesz) + 3) & ~size_t(3));
    size_t next = desc_off + ((size_t(descsz) + 3) & ~size_t(3));
    if (next > notes.size() || next <= off) break;
    if (type == NT_GNU_BUILD_ID && namesz == 4 &&
        std::memcmp(notes.data() + name_off, "GNU", 4) == 0 && descsz <= 64) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(notes.data() + desc_off);
      return std::vector<uint8_t>(p, p + descsz);
    }
    off = next;
  }
  return {};
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace microscope::symbols
