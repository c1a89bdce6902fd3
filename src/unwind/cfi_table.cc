#include "src/unwind/cfi_table.h"

#include "src/unwind/cfi_check.h"
#include "src/unwind/cfi_rules.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace microscope::unwind {
namespace {

struct DwarfDeleter {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};
// For the CFI of dwarf_getcfi_elf only: dwarf_getcfi's belongs to its Dwarf.
struct CfiDeleter {
  void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};

Elf_Scn* SectionNamed(Elf* elf, const char* wanted, GElf_Shdr* shdr) {
  size_t shstrndx;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    if (gelf_getshdr(scn, shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr->sh_name);
    if (name != nullptr && std::strcmp(name, wanted) == 0) return scn;
  }
  return nullptr;
}

// FDE start addresses from .eh_frame_hdr's binary-search table, for the
// encodings every x86-64 toolchain emits (eh_frame_ptr pcrel|sdata4,
// fde_count udata4, table datarel|sdata4). Empty when absent or otherwise.
std::vector<uint64_t> FdeStartsFromHdr(Elf* elf) {
  std::vector<uint64_t> starts;
  GElf_Shdr shdr;
  Elf_Scn* scn = SectionNamed(elf, ".eh_frame_hdr", &shdr);
  if (scn == nullptr) return starts;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size < 12) return starts;
  const uint8_t* p = static_cast<const uint8_t*>(data->d_buf);
  if (p[0] != 1 || p[2] != (DW_EH_PE_udata4) || p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4)) {
    return starts;
  }
  uint32_t count;
  std::memcpy(&count, p + 8, 4);
  if (count > (data->d_size - 12) / 8) return starts;
  starts.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    int32_t rel;
    std::memcpy(&rel, p + 12 + size_t(i) * 8, 4);
    starts.push_back(shdr.sh_addr + int64_t(rel));
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

// Function symbol addresses: where to start stepping without an index. In
// a relocatable object (a JIT's, placed by its sections' sh_addr) a
// symbol's value is an offset in its section.
std::vector<uint64_t> FunctionStarts(Elf* elf) {
  std::vector<uint64_t> starts;
  GElf_Ehdr eh;
  const bool relocatable = gelf_getehdr(elf, &eh) != nullptr && eh.e_type == ET_REL;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    if ((shdr.sh_type == SHT_PROGBITS || shdr.sh_type == SHT_NOBITS) &&
        (shdr.sh_flags & SHF_EXECINSTR))
      starts.push_back(shdr.sh_addr);
    if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || shdr.sh_entsize == 0) continue;
    for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, int(i), &sym) == nullptr) break;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
      uint64_t at = sym.st_value;
      GElf_Shdr holder;
      if (relocatable && sym.st_shndx != SHN_UNDEF && sym.st_shndx < SHN_LORESERVE &&
          gelf_getshdr(elf_getscn(elf, sym.st_shndx), &holder) != nullptr)
        at += holder.sh_addr;
      if (at != 0) starts.push_back(at);
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

// An ELF file's CFI and its owner: .eh_frame, else a .debug_frame in the
// file itself.
// The section offsets of the FDEs .eh_frame_hdr's table points at; an
// error when the table is there in an encoding this does not read (libdw
// would use it, unchecked).
Result<std::vector<uint64_t>> FdeOffsetsFromHdr(Elf* elf, uint64_t eh_frame_address) {
  std::vector<uint64_t> offsets;
  GElf_Shdr shdr;
  Elf_Scn* scn = SectionNamed(elf, ".eh_frame_hdr", &shdr);
  if (scn == nullptr) return offsets;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size < 4) return offsets;
  const uint8_t* p = static_cast<const uint8_t*>(data->d_buf);
  if (p[3] == DW_EH_PE_omit) return offsets;  // no table: libdw searches linearly
  if (data->d_size < 12 || p[0] != 1 || p[2] != DW_EH_PE_udata4 ||
      p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4)) {
    return Status::Error(".eh_frame_hdr's table is in an encoding not checked: CFI not read");
  }
  uint32_t count;
  std::memcpy(&count, p + 8, 4);
  if (count > (data->d_size - 12) / 8) count = uint32_t((data->d_size - 12) / 8);
  offsets.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    int32_t rel;
    std::memcpy(&rel, p + 12 + size_t(i) * 8 + 4, 4);
    offsets.push_back(shdr.sh_addr + int64_t(rel) - eh_frame_address);
  }
  return offsets;
}

// Checks the section libdw will interpret (CheckCfiSection): the
// .eh_frame or .debug_frame section, and the FDEs .eh_frame_hdr indexes.
Status CheckCfi(Elf* elf, bool eh_frame) {
  GElf_Ehdr eh;
  if (gelf_getehdr(elf, &eh) == nullptr) return Status::Error("no ELF header: CFI not read");
  GElf_Shdr shdr;
  Elf_Scn* scn = SectionNamed(elf, eh_frame ? ".eh_frame" : ".debug_frame", &shdr);
  if (scn == nullptr) {
    // libdw found it through the program headers alone.
    return Status::Error("CFI reached only through program headers is not checked: not read");
  }
  if ((shdr.sh_flags & SHF_COMPRESSED) != 0 && elf_compress(scn, 0, 0) < 0) {
    return Status::Error("compressed .debug_frame that does not decompress: CFI not read");
  }
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return OkStatus();
  std::vector<uint64_t> offsets;
  if (eh_frame) {
    ASSIGN_OR_RETURN(offsets, FdeOffsetsFromHdr(elf, shdr.sh_addr));
  }
  return CheckCfiSection(eh.e_ident, data, eh_frame, offsets);
}

struct ElfCfi {
  std::unique_ptr<Dwarf_CFI, CfiDeleter> eh_frame;
  std::unique_ptr<Dwarf, DwarfDeleter> dwarf;  // owns the .debug_frame CFI
  Dwarf_CFI* cfi = nullptr;
  const char* source = "none";
};

ElfCfi OpenCfi(Elf* elf) {
  ElfCfi c;
  c.eh_frame.reset(dwarf_getcfi_elf(elf));
  if (c.eh_frame != nullptr) {
    c.cfi = c.eh_frame.get();
    c.source = ".eh_frame";
    return c;
  }
  c.dwarf.reset(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
  if (c.dwarf != nullptr) c.cfi = dwarf_getcfi(c.dwarf.get());
  if (c.cfi != nullptr) c.source = ".debug_frame";
  return c;
}

// An ELF file in memory holding `eh_frame` and `eh_frame_hdr` (may be empty)
// as sections at their addresses (no program headers: libdw finds them by
// name), for libdw to read.
std::vector<uint8_t> EhFrameImage(std::span<const uint8_t> eh_frame, uint64_t eh_frame_address,
                                  std::span<const uint8_t> eh_frame_hdr,
                                  uint64_t eh_frame_hdr_address) {
  static constexpr char kNames[] = "\0.eh_frame\0.eh_frame_hdr\0.shstrtab";
  constexpr uint32_t kEhFrameName = 1, kHdrName = 11, kShstrtabName = 25;
  const size_t data_at = sizeof(Elf64_Ehdr);
  const size_t hdr_at = data_at + eh_frame.size();
  const size_t names_at = hdr_at + eh_frame_hdr.size();
  const size_t sections_at = (names_at + sizeof(kNames) + 7) & ~size_t(7);
  std::vector<uint8_t> image(sections_at + 4 * sizeof(Elf64_Shdr));
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shoff = sections_at;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 4;
  eh.e_shstrndx = 3;
  std::memcpy(image.data(), &eh, sizeof(eh));
  std::memcpy(image.data() + data_at, eh_frame.data(), eh_frame.size());
  if (!eh_frame_hdr.empty())
    std::memcpy(image.data() + hdr_at, eh_frame_hdr.data(), eh_frame_hdr.size());
  std::memcpy(image.data() + names_at, kNames, sizeof(kNames));
  Elf64_Shdr sh[4]{};
  sh[1] = {kEhFrameName,
           SHT_PROGBITS,
           SHF_ALLOC,
           eh_frame_address,
           data_at,
           eh_frame.size(),
           0,
           0,
           8,
           0};
  sh[2] = {
      kHdrName, SHT_PROGBITS, SHF_ALLOC, eh_frame_hdr_address, hdr_at, eh_frame_hdr.size(), 0, 0, 4,
      0};
  sh[3] = {kShstrtabName, SHT_STRTAB, 0, 0, names_at, sizeof(kNames), 0, 0, 1, 0};
  std::memcpy(image.data() + sections_at, sh, sizeof(sh));
  return image;
}

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfPtr = std::unique_ptr<Elf, ElfDeleter>;

// A section's bytes, when it has them in the file (not NOBITS, not
// compressed).
std::span<const uint8_t> SectionBytes(Elf_Scn* scn, const GElf_Shdr& shdr) {
  if (scn == nullptr || shdr.sh_type != SHT_PROGBITS || (shdr.sh_flags & SHF_COMPRESSED) != 0)
    return {};
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return {};
  return {static_cast<const uint8_t*>(data->d_buf), data->d_size};
}

constexpr uint32_t kUndecoded = 0xFFFFFFFFu;

}  // namespace

std::unique_ptr<CfiTable> CfiTable::FromRows(std::vector<CfiRow> rows,
                                             std::vector<GeneralRow> general,
                                             std::vector<ExprOp> exprs, std::string source) {
  std::unique_ptr<CfiTable> t(new CfiTable());
  t->has_cfi_ = true;
  t->source_ = std::move(source);
  t->rows_ = std::move(rows);
  t->general_ = std::move(general);
  t->exprs_ = std::move(exprs);
  t->Finish();
  return t;
}

Result<std::unique_ptr<CfiTable>> CfiTable::FromEhFrame(std::span<const uint8_t> eh_frame,
                                                        uint64_t eh_frame_address,
                                                        std::span<const uint8_t> eh_frame_hdr,
                                                        uint64_t eh_frame_hdr_address) {
  constexpr size_t kMax = 1 << 20;
  if (eh_frame.empty() || eh_frame.size() > kMax || eh_frame_hdr.size() > kMax) {
    return Status::Error(
        StatusCode::kInvalidArgument,
        "unwinding information of " + std::to_string(eh_frame.size()) + " bytes of .eh_frame");
  }
  std::vector<uint8_t> image =
      EhFrameImage(eh_frame, eh_frame_address, eh_frame_hdr, eh_frame_hdr_address);
  ElfPtr elf(elf_memory(reinterpret_cast<char*>(image.data()), image.size()));
  if (elf == nullptr) {
    return Status::Error(StatusCode::kDataLoss,
                         std::string("unwinding information: ") + elf_errmsg(-1));
  }
  // Small (a JIT's code): decoded now, and refused now when nothing is read.
  Result<std::unique_ptr<CfiTable>> table = UpFront(elf.get());
  if (table.ok() && !(*table)->has_cfi()) {
    return Status::Error(StatusCode::kDataLoss, "unwinding information: no CFI read");
  }
  if (table.ok()) (*table)->source_ = "JIT .eh_frame";
  return table;
}

// A copy of the module's .eh_frame (and .eh_frame_hdr) as an ELF image in
// memory, libdw's reader of it, and the FDEs decoded so far. The copy, not
// the file: a file mapped for the whole recording faults (SIGBUS) when it is
// truncated meanwhile, as a rebuild in place does.
struct CfiTable::OnDemand {
  std::vector<uint8_t> image;
  ElfPtr elf;  // over `image`
  std::unique_ptr<Dwarf_CFI, CfiDeleter> cfi;
  std::vector<uint64_t> starts;  // where FDEs (or functions) start, sorted, unique
  struct Span {
    uint32_t begin = 0;
    uint32_t count = kUndecoded;
  };
  std::vector<Span> spans;  // of rows, one per start
  std::deque<CfiRow> rows;  // grows at the back: rows found stay where they are
};

CfiTable::~CfiTable() = default;

size_t CfiTable::size() const {
  return rows_.size() + (on_demand_ != nullptr ? on_demand_->rows.size() : 0);
}

void CfiTable::Finish() {
  std::sort(rows_.begin(), rows_.end(),
            [](const CfiRow& a, const CfiRow& b) { return a.start < b.start; });
  std::fill(std::begin(cache_key_), std::end(cache_key_), ~0ull);
}

const CfiRow* CfiTable::Find(uint64_t vaddr) const {
  size_t slot = (vaddr ^ (vaddr >> 8)) & (kCacheSize - 1);
  if (cache_key_[slot] == vaddr) return cache_row_[slot];
  const CfiRow* row = nullptr;
  if (on_demand_ != nullptr) {
    row = FindOnDemand(vaddr);
  } else {
    auto it = std::upper_bound(rows_.begin(), rows_.end(), vaddr,
                               [](uint64_t a, const CfiRow& r) { return a < r.start; });
    if (it != rows_.begin() && vaddr < (it - 1)->start + (it - 1)->length) row = &*(it - 1);
  }
  if (row == nullptr) return nullptr;
  cache_key_[slot] = vaddr;
  cache_row_[slot] = row;
  return row;
}

// The rows of the FDE (or function) that starts last at or before `vaddr`,
// decoded when first asked for: stepped from its start to the next start,
// as UpFront steps every one.
const CfiRow* CfiTable::FindOnDemand(uint64_t vaddr) const {
  OnDemand& d = *on_demand_;
  auto next = std::upper_bound(d.starts.begin(), d.starts.end(), vaddr);
  if (next == d.starts.begin()) return nullptr;
  const size_t i = size_t(next - d.starts.begin()) - 1;
  OnDemand::Span& span = d.spans[i];
  if (span.count == kUndecoded) {
    const uint64_t limit = next != d.starts.end() ? *next : ~uint64_t(0);
    std::vector<CfiRow> rows;
    StepRows(d.cfi.get(), d.starts[i], limit, &rows, &general_, &exprs_);
    span = {uint32_t(d.rows.size()), uint32_t(rows.size())};
    for (const CfiRow& row : rows) d.rows.push_back(row);
  }
  auto first = d.rows.begin() + span.begin, last = first + span.count;
  auto it =
      std::upper_bound(first, last, vaddr, [](uint64_t a, const CfiRow& r) { return a < r.start; });
  if (it == first || vaddr >= (it - 1)->start + (it - 1)->length) return nullptr;
  return &*(it - 1);
}

Result<std::unique_ptr<CfiTable>> CfiTable::FromElf(Elf* elf, Decoding decoding) {
  if (decoding == Decoding::kOnDemand) {
    Result<std::unique_ptr<CfiTable>> table = FromEhFrameSection(elf);
    if (!table.ok() || *table != nullptr) return table;
  }
  return UpFront(elf);
}

// On demand from a copy of the file's .eh_frame; null when the file has
// none to copy (UpFront reads what else there is, or refuses it).
Result<std::unique_ptr<CfiTable>> CfiTable::FromEhFrameSection(Elf* elf) {
  GElf_Ehdr eh;
  // A relocatable object's CFI (a JIT's) is read where it lies, up front.
  if (gelf_getehdr(elf, &eh) == nullptr || eh.e_type == ET_REL) return std::unique_ptr<CfiTable>();
  GElf_Shdr frame_shdr, hdr_shdr{};
  std::span<const uint8_t> eh_frame =
      SectionBytes(SectionNamed(elf, ".eh_frame", &frame_shdr), frame_shdr);
  if (eh_frame.empty()) return std::unique_ptr<CfiTable>();
  std::span<const uint8_t> hdr =
      SectionBytes(SectionNamed(elf, ".eh_frame_hdr", &hdr_shdr), hdr_shdr);
  auto d = std::make_unique<OnDemand>();
  d->image = EhFrameImage(eh_frame, frame_shdr.sh_addr, hdr, hdr.empty() ? 0 : hdr_shdr.sh_addr);
  d->elf.reset(elf_memory(reinterpret_cast<char*>(d->image.data()), d->image.size()));
  if (d->elf == nullptr) return std::unique_ptr<CfiTable>();
  d->cfi.reset(dwarf_getcfi_elf(d->elf.get()));
  if (d->cfi == nullptr) return std::unique_ptr<CfiTable>();
  RETURN_IF_ERROR(CheckCfi(d->elf.get(), true));
  d->starts = FdeStartsFromHdr(d->elf.get());
  if (d->starts.empty()) d->starts = FunctionStarts(elf);
  d->starts.erase(std::unique(d->starts.begin(), d->starts.end()), d->starts.end());
  d->spans.resize(d->starts.size());
  std::unique_ptr<CfiTable> t(new CfiTable());
  t->source_ = ".eh_frame";
  t->has_cfi_ = true;
  t->on_demand_ = std::move(d);
  t->Finish();
  return t;
}

Result<std::unique_ptr<CfiTable>> CfiTable::UpFront(Elf* elf) {
  std::unique_ptr<CfiTable> t(new CfiTable());
  ElfCfi cfi = OpenCfi(elf);
  t->source_ = cfi.source;
  if (cfi.cfi == nullptr) {
    t->Finish();
    return t;
  }
  RETURN_IF_ERROR(CheckCfi(elf, cfi.eh_frame != nullptr));
  t->has_cfi_ = true;
  std::vector<uint64_t> starts = FdeStartsFromHdr(elf);
  if (starts.empty()) starts = FunctionStarts(elf);
  // From each start, step through the rule sets that follow one another.
  uint64_t covered_to = 0;
  for (uint64_t candidate : starts) {
    const uint64_t pc = std::max(candidate, covered_to);
    covered_to = std::max(covered_to,
                          StepRows(cfi.cfi, pc, ~uint64_t(0), &t->rows_, &t->general_, &t->exprs_));
  }
  t->Finish();
  return t;
}

}  // namespace microscope::unwind
