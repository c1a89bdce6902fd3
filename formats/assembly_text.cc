#include "formats/assembly_text.h"

#include <capstone/capstone.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/hex.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::formats {
namespace {

using analysis::ReportAssemblyModule;
using analysis::ReportAssemblyRange;
using analysis::ReportCost;

struct CsDeleter {
  void operator()(csh* h) const {
    cs_close(h);
    delete h;
  }
};
using Disassembler = std::unique_ptr<csh, CsDeleter>;

struct InsnDeleter {
  size_t count;
  void operator()(cs_insn* insn) const { cs_free(insn, count); }
};

// Capstone for the file's machine, or null with `why` set.
Disassembler ForMachine(Elf* elf, std::string* why) {
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) {
    *why = "its ELF header is not readable";
    return nullptr;
  }
  cs_arch arch;
  cs_mode mode;
  switch (ehdr.e_machine) {
    case EM_X86_64:
      arch = CS_ARCH_X86;
      mode = CS_MODE_64;
      break;
    case EM_AARCH64:
      arch = CS_ARCH_ARM64;
      mode = CS_MODE_ARM;
      break;
    default:
      *why = "no disassembler here for its machine (ELF e_machine " +
             std::to_string(ehdr.e_machine) + ")";
      return nullptr;
  }
  auto h = std::make_unique<csh>();
  if (cs_open(arch, mode, h.get()) != CS_ERR_OK) {
    *why = "the disassembler could not start";
    return nullptr;
  }
  Disassembler d(h.release());
  // As objdump -d and perf annotate show x86-64.
  if (arch == CS_ARCH_X86) cs_option(*d, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
  return d;
}

struct Symbol {
  uint64_t start, size;
  std::string name;
  bool global;
};

// The file's function symbols with a size, from .symtab (or .dynsym when it
// has none), sorted by address; aliases at one address kept once (the
// global one, else the first).
std::vector<Symbol> FunctionSymbols(Elf* elf) {
  std::vector<Symbol> out;
  for (uint32_t table : {uint32_t(SHT_SYMTAB), uint32_t(SHT_DYNSYM)}) {
    symbols::ForEachDefinedSymbol(elf, table, [&](const GElf_Sym& sym, std::string_view name) {
      const int type = GELF_ST_TYPE(sym.st_info);
      if ((type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_size > 0 && !name.empty()) {
        out.push_back({sym.st_value, sym.st_size, std::string(name),
                       GELF_ST_BIND(sym.st_info) == STB_GLOBAL});
      }
      return true;
    });
    if (!out.empty()) break;
  }
  std::stable_sort(out.begin(), out.end(), [](const Symbol& a, const Symbol& b) {
    return a.start != b.start ? a.start < b.start : a.global > b.global;
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const Symbol& a, const Symbol& b) { return a.start == b.start; }),
            out.end());
  return out;
}

// The symbol holding `address`, or null.
const Symbol* Holding(const std::vector<Symbol>& symbols, uint64_t address) {
  auto it = std::upper_bound(symbols.begin(), symbols.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  if (it == symbols.begin()) return nullptr;
  --it;
  return address - it->start < it->size ? &*it : nullptr;
}

// The file offset of link-time `vaddr` through PT_LOAD, with the bytes the
// file holds from there in its segment; false when none holds it.
bool VaddrToOffset(std::span<const symbols::LoadSegment> loads, uint64_t vaddr, uint64_t* offset,
                   uint64_t* available) {
  for (const symbols::LoadSegment& s : loads) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) {
      *offset = s.offset + (vaddr - s.vaddr);
      *available = s.filesz - (vaddr - s.vaddr);
      return true;
    }
  }
  return false;
}

// A direct call's or jump's target as "name" or "name+0x10", when the
// operand is one address a symbol holds.
std::string TargetOf(const cs_insn& insn, const std::vector<Symbol>& symbols) {
  const std::string_view op = insn.op_str;
  if (!op.starts_with("0x") || op.size() > 18 || op.size() < 3) return "";
  uint64_t target = 0;
  for (char ch : op.substr(2)) {
    int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (v < 0) return "";
    target = target << 4 | uint64_t(v);
  }
  const Symbol* s = Holding(symbols, target);
  if (s == nullptr) return "";
  const std::string name = symbols::Demangle(s->name);
  return target == s->start ? name : name + "+" + HexAddress(target - s->start);
}

// Reads `size` bytes at `offset` of `fd` (pread: the file may shrink).
bool ReadAt(int fd, uint64_t offset, uint64_t size, std::vector<uint8_t>* out) {
  out->resize(size);
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, out->data() + done, size - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += uint64_t(n);
  }
  return true;
}

void AddCost(ReportCost* to, const ReportCost& c) {
  to->samples += c.samples;
  to->value += c.value;
  to->percent += c.percent;
}

void ReadModule(ReportAssemblyModule* m, const SourceOpener& open) {
  auto fail = [&](const std::string& why) {
    m->unreadable = why.rfind("not shown: ", 0) == 0 ? why : "not shown: " + why;
  };
  if (m->build_id.empty()) {
    return fail("the capture has no build ID for " + m->path +
                " to prove the file here is the one recorded");
  }
  Result<ScopedFd> fd = open(m->path);
  if (!fd.ok()) return fail(fd.status().message());
  struct stat st;
  if (fstat(fd->get(), &st) != 0) return fail(m->path + ": " + strerror(errno));
  if (uint64_t(st.st_size) > kMaxModuleBytes) {
    return fail(m->path + " is larger than " + std::to_string(kMaxModuleBytes >> 20) + " MiB");
  }
  const int raw = fd->get();
  Result<symbols::ElfFile> file = symbols::ElfFromFd(std::move(fd).value());
  if (!file.ok()) return fail(m->path + " is " + file.status().message());
  Elf* elf = file->elf.get();
  const std::string id = HexBytes(symbols::ElfBuildId(elf));
  if (id != m->build_id) {
    return fail(m->path + " here is not the file recorded: its build ID is " +
                (id.empty() ? "none" : id) + ", the capture's " + m->build_id);
  }
  Result<std::vector<symbols::LoadSegment>> loads = symbols::ElfLoadSegments(elf);
  if (!loads.ok()) return fail(m->path + ": " + loads.status().message());
  std::string why;
  Disassembler d = ForMachine(elf, &why);
  if (!d) return fail(m->path + ": " + why);
  const std::vector<Symbol> symbols = FunctionSymbols(elf);
  if (symbols.empty()) return fail(m->path + " has no function symbols with sizes");

  // Each costed address at link time, and the symbols holding them.
  std::vector<uint64_t> vaddr(m->addresses.size(), 0);
  std::vector<bool> mapped(m->addresses.size(), false);
  std::vector<const Symbol*> held;
  for (size_t i = 0; i < m->addresses.size(); ++i) {
    mapped[i] = symbols::OffsetToVaddr(*loads, m->addresses[i].offset, &vaddr[i]);
    const Symbol* s = mapped[i] ? Holding(symbols, vaddr[i]) : nullptr;
    if (s != nullptr && std::find(held.begin(), held.end(), s) == held.end()) held.push_back(s);
  }
  std::sort(held.begin(), held.end(),
            [](const Symbol* a, const Symbol* b) { return a->start < b->start; });
  if (held.size() > kMaxAssemblyRanges) held.resize(kMaxAssemblyRanges);
  std::vector<bool> placed(m->addresses.size(), false);
  for (const Symbol* s : held) {
    ReportAssemblyRange r;
    r.symbol = symbols::Demangle(s->name);
    r.start = s->start;
    r.size = s->size;
    uint64_t offset = 0, available = 0;
    if (!VaddrToOffset(*loads, s->start, &offset, &available)) continue;
    const uint64_t want = std::min({s->size, available, kMaxAssemblyBytes});
    r.bytes_left_out = s->size - want;
    std::vector<uint8_t> bytes;
    if (!ReadAt(raw, offset, want, &bytes)) {
      return fail(m->path + " could not be read at " + HexAddress(offset) + " (" +
                  std::to_string(want) + " bytes)");
    }
    cs_insn* insn = nullptr;
    const size_t count = cs_disasm(*d, bytes.data(), bytes.size(), s->start, 0, &insn);
    std::unique_ptr<cs_insn, InsnDeleter> owned(insn, InsnDeleter{count});
    // Bytes Capstone stops at (data in code) are left out and counted.
    uint64_t decoded = 0;
    for (size_t k = 0; k < count; ++k) {
      analysis::ReportInstruction out;
      out.address = insn[k].address;
      out.size = insn[k].size;
      out.text = insn[k].mnemonic;
      if (insn[k].op_str[0] != '\0') out.text += std::string(" ") + insn[k].op_str;
      out.target = TargetOf(insn[k], symbols);
      decoded += insn[k].size;
      r.instructions.push_back(std::move(out));
    }
    r.bytes_left_out += want - decoded;
    // Each costed address on the instruction holding it (a caller's frame
    // is inside its call instruction).
    for (size_t i = 0; i < m->addresses.size(); ++i) {
      if (!mapped[i] || placed[i]) continue;
      auto it = std::upper_bound(
          r.instructions.begin(), r.instructions.end(), vaddr[i],
          [](uint64_t a, const analysis::ReportInstruction& x) { return a < x.address; });
      if (it == r.instructions.begin()) continue;
      --it;
      if (vaddr[i] - it->address >= it->size) continue;
      AddCost(&it->self, m->addresses[i].self);
      AddCost(&it->total, m->addresses[i].total);
      placed[i] = true;
    }
    m->ranges.push_back(std::move(r));
  }
  for (size_t i = 0; i < m->addresses.size(); ++i) {
    if (!placed[i]) AddCost(&m->outside, m->addresses[i].total);
  }
  if (m->ranges.empty()) {
    fail("no function symbol of " + m->path + " holds the costed addresses");
  }
}

}  // namespace

void ReadAssemblyText(analysis::ReportAssembly* assembly, const SourceOpener& open) {
  for (ReportAssemblyModule& m : assembly->modules) ReadModule(&m, open);
}

}  // namespace microscope::formats
