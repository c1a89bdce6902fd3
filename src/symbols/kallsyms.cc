#include "src/symbols/kallsyms.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace microscope::symbols {

Result<SymbolTable> ParseKallsyms(const std::string& text) {
  SymbolTable table;
  std::istringstream in(text);
  std::string line;
  size_t nonzero = 0;
  while (std::getline(in, line)) {
    // "ffffffff81000000 T _stext" optionally followed by "\t[module]".
    size_t sp1 = line.find(' ');
    if (sp1 == std::string::npos || sp1 + 3 > line.size()) continue;
    char type = line[sp1 + 1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    uint64_t addr = std::strtoull(line.substr(0, sp1).c_str(), nullptr, 16);
    std::string name = line.substr(sp1 + 3);
    size_t tab = name.find('\t');
    if (tab != std::string::npos) name.resize(tab);
    if (addr == 0) continue;
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
  std::ifstream in(path);
  if (!in) return Status::Error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto table = ParseKallsyms(ss.str());
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
