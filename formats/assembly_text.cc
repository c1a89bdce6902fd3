#include "formats/assembly_text.h"

#include <capstone/capstone.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_policy.h"
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
  std::string_view name;  // in the file's bytes (which outlive the table)
  bool global;
};

// The file's function symbols with a size, from .symtab (or .dynsym when it
// has none), sorted by address; aliases at one address kept once (the
// global one, else the first). Names longer than kMaxSymbolName, code that
// wraps the address space, and symbols past kMaxSymbols are left out.
std::vector<Symbol> FunctionSymbols(Elf* elf) {
  std::vector<Symbol> out;
  for (uint32_t table : {uint32_t(SHT_SYMTAB), uint32_t(SHT_DYNSYM)}) {
    symbols::ForEachDefinedSymbol(elf, table, [&](const GElf_Sym& sym, std::string_view name) {
      const int type = GELF_ST_TYPE(sym.st_info);
      if ((type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_size > 0 && !name.empty() &&
          name.size() <= kMaxSymbolName && sym.st_value + sym.st_size > sym.st_value) {
        out.push_back({sym.st_value, sym.st_size, name, GELF_ST_BIND(sym.st_info) == STB_GLOBAL});
      }
      return out.size() < kMaxSymbols;
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

// Symbols' names as users read them, demangled once each.
class Names {
 public:
  const std::string& Of(const Symbol& s) {
    auto [it, inserted] = names_.try_emplace(s.start);
    if (inserted) it->second = symbols::Demangle(std::string(s.name));
    return it->second;
  }

 private:
  std::map<uint64_t, std::string> names_;
};

// A direct call's or jump's target as "name" or "name+0x10", when the
// operand is one address a symbol holds ("0x1139" on x86-64, "#0x1139" on
// AArch64).
std::string TargetOf(const cs_insn& insn, const std::vector<Symbol>& symbols, Names* names) {
  std::string_view op = insn.op_str;
  if (op.starts_with("#")) op.remove_prefix(1);
  uint64_t target = 0;
  if (!op.starts_with("0x") || !ParseHex(op.substr(2), &target)) return "";
  const Symbol* s = Holding(symbols, target);
  if (s == nullptr) return "";
  const std::string& name = names->Of(*s);
  return target == s->start ? name : name + "+" + HexAddress(target - s->start);
}

void AddCost(ReportCost* to, const ReportCost& c) {
  to->samples += c.samples;
  to->value += c.value;
  to->percent += c.percent;
}

// An ELF file read whole (at most kMaxModuleBytes) and opened in memory:
// libelf then reads it in place, so no section is copied however the
// headers overlap, and a file shortened meanwhile is read as it was.
struct ElfBytes {
  std::vector<uint8_t> bytes;
  symbols::ElfPtr elf;
};

// `path` opened through `open` as an ELF file whose build ID is `build_id`,
// or why not (the reason a view shows).
Result<ElfBytes> ReadElf(const std::string& path, const std::string& build_id,
                         const SourceOpener& open) {
  auto refused = [](std::string why) { return Status::Error(StatusCode::kDataLoss, why); };
  ASSIGN_OR_RETURN(ScopedFd fd, open(path));
  Result<std::vector<uint8_t>> read = ReadWhole(fd.get(), kMaxModuleBytes);
  if (!read.ok()) {
    return refused(path + " is not read: " + read.status().message() + " (at most " +
                   std::to_string(kMaxModuleBytes >> 20) + " MiB)");
  }
  ElfBytes out;
  out.bytes = std::move(read).value();
  // The header's counts, before libelf sizes its tables by them: a file
  // claiming millions of sections (or the extended numbering) is refused.
  Elf64_Ehdr h;
  if (out.bytes.size() < sizeof(h) || memcmp(out.bytes.data(), ELFMAG, SELFMAG) != 0 ||
      out.bytes[EI_CLASS] != ELFCLASS64) {
    return refused(path + " is not a 64-bit ELF file");
  }
  memcpy(&h, out.bytes.data(), sizeof(h));
  if ((h.e_shnum == 0 && h.e_shoff != 0) || h.e_phnum == PN_XNUM) {
    return refused(path + " numbers its sections or segments in the extended way");
  }
  Result<symbols::ElfPtr> elf = symbols::ElfFromMemory(out.bytes);
  if (!elf.ok() || elf_kind(elf->get()) != ELF_K_ELF) {
    return refused(path + " is not readable as ELF");
  }
  out.elf = std::move(elf).value();
  const std::string id = HexBytes(symbols::ElfBuildId(out.elf.get()));
  if (id != build_id) {
    return refused(path + " here is not the file recorded: its build ID is " +
                   (id.empty() ? "none" : id) + ", the capture's " + build_id);
  }
  return out;
}

void ReadModule(ReportAssemblyModule* m, const SourceOpener& open, uint64_t* budget) {
  auto fail = [&](const std::string& why) {
    m->ranges.clear();
    m->unreadable = why.rfind("not shown: ", 0) == 0 ? why : "not shown: " + why;
  };
  if (m->build_id.empty()) {
    return fail("the capture has no build ID for " + m->path +
                " to prove the file here is the one recorded");
  }
  Result<ElfBytes> file = ReadElf(m->path, m->build_id, open);
  if (!file.ok()) return fail(file.status().message());
  Elf* elf = file->elf.get();
  Result<std::vector<symbols::LoadSegment>> loads = symbols::ElfLoadSegments(elf);
  if (!loads.ok()) return fail(m->path + ": " + loads.status().message());
  std::string why;
  Disassembler d = ForMachine(elf, &why);
  if (!d) return fail(m->path + ": " + why);
  // A stripped file's full symbol table is in its debug file (Debian's
  // -dbg and -dbgsym packages), found by build ID and proven by it; its
  // .dynsym (exports only) otherwise.
  Result<ElfBytes> debug = Status::Error(StatusCode::kNotFound, "");
  std::vector<Symbol> symbols;
  GElf_Shdr shdr;
  if (symbols::SectionByName(elf, ".symtab", &shdr) == nullptr && m->build_id.size() > 2) {
    const std::string path = "/usr/lib/debug/.build-id/" + m->build_id.substr(0, 2) + "/" +
                             m->build_id.substr(2) + ".debug";
    debug = ReadElf(path, m->build_id, open);
    if (debug.ok()) symbols = FunctionSymbols(debug->elf.get());
  }
  if (symbols.empty()) symbols = FunctionSymbols(elf);
  if (symbols.empty()) {
    return fail(m->path + " has no function symbols with sizes" +
                (debug.ok() || debug.status().message().empty()
                     ? std::string()
                     : " (nor a debug file: " + debug.status().message() + ")"));
  }

  // Each costed address at link time, and the symbols holding them, the
  // most costly first.
  std::vector<uint64_t> vaddr(m->addresses.size(), 0);
  std::vector<bool> mapped(m->addresses.size(), false);
  std::map<const Symbol*, uint64_t> held_cost;
  for (size_t i = 0; i < m->addresses.size(); ++i) {
    mapped[i] = symbols::OffsetToVaddr(*loads, m->addresses[i].offset, &vaddr[i]);
    const Symbol* s = mapped[i] ? Holding(symbols, vaddr[i]) : nullptr;
    if (s != nullptr) held_cost[s] += m->addresses[i].total.value;
  }
  std::vector<const Symbol*> held;
  for (const auto& [s, cost] : held_cost) held.push_back(s);
  std::stable_sort(held.begin(), held.end(),
                   [&](const Symbol* a, const Symbol* b) { return held_cost[a] > held_cost[b]; });
  if (held.size() > kMaxAssemblyRanges) held.resize(kMaxAssemblyRanges);
  std::sort(held.begin(), held.end(),
            [](const Symbol* a, const Symbol* b) { return a->start < b->start; });
  Names names;
  std::vector<bool> placed(m->addresses.size(), false);
  for (const Symbol* s : held) {
    ReportAssemblyRange r;
    r.symbol = names.Of(*s);
    r.start = s->start;
    r.size = s->size;
    uint64_t offset = 0, available = 0;
    if (!VaddrToOffset(*loads, s->start, &offset, &available) || offset >= file->bytes.size()) {
      continue;
    }
    available = std::min(available, file->bytes.size() - offset);
    const uint64_t want = std::min({s->size, available, kMaxAssemblyBytes, *budget});
    *budget -= want;
    r.bytes_left_out = s->size - want;
    cs_insn* insn = nullptr;
    const size_t count =
        want == 0 ? 0 : cs_disasm(*d, file->bytes.data() + offset, want, s->start, 0, &insn);
    std::unique_ptr<cs_insn, InsnDeleter> owned(insn, InsnDeleter{count});
    // Bytes Capstone stops at (data in code) are left out and counted.
    uint64_t decoded = 0;
    for (size_t k = 0; k < count; ++k) {
      analysis::ReportInstruction out;
      out.address = insn[k].address;
      out.size = insn[k].size;
      out.text = insn[k].mnemonic;
      if (insn[k].op_str[0] != '\0') out.text += std::string(" ") + insn[k].op_str;
      out.target = TargetOf(insn[k], symbols, &names);
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
  uint64_t budget = kMaxAssemblyTotalBytes;
  size_t n = 0;
  for (ReportAssemblyModule& m : assembly->modules) {
    if (n++ < kMaxAssemblyModules) {
      ReadModule(&m, open, &budget);
    } else {
      m.unreadable = "not shown: past the " + std::to_string(kMaxAssemblyModules) +
                     " modules with the most samples";
    }
  }
}

void ReadViewFiles(analysis::ReportModel* model, const SourceOpener& open) {
  if (model->source) ReadSourceText(&*model->source, open);
  if (model->assembly) ReadAssemblyText(&*model->assembly, open);
}

}  // namespace microscope::formats
