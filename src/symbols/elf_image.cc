#include "src/symbols/elf_image.h"

#include <cxxabi.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/hex.h"
#include "src/symbols/elf_handle.h"

namespace microscope::symbols {
namespace {

Status ElfError(const char* what) {
  return Status::Error(std::string(what) + ": " + elf_errmsg(-1));
}

// Whether section `index` holds code (labels count only there).
bool IsCode(Elf* elf, size_t index) {
  GElf_Shdr shdr;
  Elf_Scn* s = elf_getscn(elf, index);
  return s != nullptr && gelf_getshdr(s, &shdr) != nullptr && (shdr.sh_flags & SHF_EXECINSTR);
}

// Adds STT_FUNC / STT_GNU_IFUNC symbols, and NOTYPE labels in code (the
// loader's _start, assembly entry points, as perf does), from the first
// section of `type`, with their binding: the table picks among aliases.
bool AddSymbols(Elf* elf, uint32_t type, SymbolTable* table) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != type) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || shdr.sh_entsize == 0) return false;
    size_t count = shdr.sh_size / shdr.sh_entsize;
    {
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, int(i), &sym) == nullptr) break;
        int t = GELF_ST_TYPE(sym.st_info);
        bool function = t == STT_FUNC || t == STT_GNU_IFUNC;
        bool label = t == STT_NOTYPE && sym.st_shndx < SHN_LORESERVE && IsCode(elf, sym.st_shndx);
        if ((!function && !label) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
        int bind = GELF_ST_BIND(sym.st_info);
        SymbolTable::Binding binding = bind == STB_GLOBAL ? SymbolTable::Binding::kGlobal
                                       : bind == STB_WEAK ? SymbolTable::Binding::kWeak
                                                          : SymbolTable::Binding::kLocal;
        const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
        if (name == nullptr || *name == '\0') continue;
        // "memcpy@@GLIBC_2.14": the version is not part of the function's name.
        std::string_view n(name);
        uint64_t size = sym.st_size;
        if (size == 0 && sym.st_shndx < SHN_LORESERVE) {
          // A symbol without a size (_init, hand-written assembly) reaches at
          // most to the end of its section, not into the next one (.plt).
          GElf_Shdr owner;
          Elf_Scn* s = elf_getscn(elf, sym.st_shndx);
          if (s != nullptr && gelf_getshdr(s, &owner) != nullptr &&
              sym.st_value < owner.sh_addr + owner.sh_size) {
            size = owner.sh_addr + owner.sh_size - sym.st_value;
          }
        }
        table->Add(sym.st_value, size, n.substr(0, n.find('@')), binding,
                   label ? SymbolTable::Type::kLabel : SymbolTable::Type::kFunction);
      }
    }
    return true;
  }
  return false;
}

// The functions `elf` exports under their default version (.dynsym with
// .gnu.version: a set 0x8000 bit marks a hidden, compatibility version).
std::vector<std::string> DefaultExports(Elf* elf) {
  Elf_Data* syms = nullptr;
  Elf_Data* versions = nullptr;
  GElf_Shdr dynsym{};
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    if (shdr.sh_type == SHT_DYNSYM) {
      syms = elf_getdata(scn, nullptr);
      dynsym = shdr;
    } else if (shdr.sh_type == SHT_GNU_versym) {
      versions = elf_getdata(scn, nullptr);
    }
  }
  std::vector<std::string> names;
  if (syms == nullptr || dynsym.sh_entsize == 0) return names;
  size_t count = dynsym.sh_size / dynsym.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(syms, int(i), &sym) == nullptr) break;
    int t = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
    if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
        (bind != STB_GLOBAL && bind != STB_WEAK)) {
      continue;
    }
    GElf_Versym version = 0;
    if (versions != nullptr && gelf_getversym(versions, int(i), &version) != nullptr &&
        (version & 0x8000) != 0) {
      continue;
    }
    const char* name = elf_strptr(elf, dynsym.sh_link, sym.st_name);
    if (name != nullptr && *name != '\0') names.emplace_back(name);
  }
  return names;
}

// Names x86-64 PLT stubs "function@plt", as perf and objdump do: entry i of
// .rela.plt is the i-th 16-byte stub of .plt.sec, or of .plt after PLT0.
void AddPltSymbols(Elf* elf, SymbolTable* table) {
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr || ehdr.e_machine != EM_X86_64) return;
  GElf_Shdr rela_shdr, plt_shdr, dynsym_shdr;
  Elf_Scn* rela = SectionByName(elf, ".rela.plt", &rela_shdr);
  if (rela == nullptr || rela_shdr.sh_type != SHT_RELA || rela_shdr.sh_entsize == 0) return;
  uint64_t first;
  if (SectionByName(elf, ".plt.sec", &plt_shdr) != nullptr) {
    first = plt_shdr.sh_addr;
  } else if (SectionByName(elf, ".plt", &plt_shdr) != nullptr) {
    first = plt_shdr.sh_addr + 16;
  } else {
    return;
  }
  Elf_Scn* dynsym = elf_getscn(elf, rela_shdr.sh_link);
  if (dynsym == nullptr || gelf_getshdr(dynsym, &dynsym_shdr) == nullptr) return;
  Elf_Data* rela_data = elf_getdata(rela, nullptr);
  Elf_Data* sym_data = elf_getdata(dynsym, nullptr);
  if (rela_data == nullptr || sym_data == nullptr) return;
  size_t count = rela_shdr.sh_size / rela_shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    uint64_t entry = first + 16 * i;
    if (entry + 16 > plt_shdr.sh_addr + plt_shdr.sh_size) break;
    GElf_Rela r;
    GElf_Sym sym;
    if (gelf_getrela(rela_data, int(i), &r) == nullptr ||
        gelf_getsym(sym_data, int(GELF_R_SYM(r.r_info)), &sym) == nullptr) {
      continue;
    }
    const char* name = elf_strptr(elf, dynsym_shdr.sh_link, sym.st_name);
    if (name == nullptr || *name == '\0') continue;
    std::string_view n(name);
    table->Add(entry, 16, std::string(n.substr(0, n.find('@'))) + "@plt");
  }
}

Result<std::unique_ptr<ElfImage>> ReadImage(Elf* elf) {
  if (elf_kind(elf) != ELF_K_ELF) return Status::Error("not an ELF file");
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) return ElfError("bad ELF header");
  auto image = std::make_unique<ElfImage>();
  image->build_id = ElfBuildId(elf);
  ASSIGN_OR_RETURN(image->loads, ElfLoadSegments(elf));
  if (AddSymbols(elf, SHT_SYMTAB, &image->symbols)) {
    image->symbol_source = ".symtab";
  } else if (AddSymbols(elf, SHT_DYNSYM, &image->symbols)) {
    image->symbol_source = ".dynsym";
  }
  AddPltSymbols(elf, &image->symbols);
  image->symbols.AddDefaultExports(DefaultExports(elf));
  return image;
}

}  // namespace

Elf_Scn* SectionByName(Elf* elf, std::string_view wanted, GElf_Shdr* shdr) {
  size_t shstrndx;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    if (gelf_getshdr(scn, shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr->sh_name);
    if (name != nullptr && wanted == name) return scn;
  }
  return nullptr;
}

void ForEachDefinedSymbol(Elf* elf, uint32_t table,
                          const std::function<bool(const GElf_Sym&, std::string_view)>& fn) {
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != table || sh.sh_entsize == 0) continue;
    Elf_Data* syms = elf_getdata(scn, nullptr);
    // As many entries as the data holds (not as a hostile sh_entsize says).
    const size_t size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    const size_t count = syms == nullptr || size == 0 ? 0 : syms->d_size / size;
    for (size_t i = 0; i < count && i <= size_t(INT32_MAX); ++i) {
      GElf_Sym sym;
      if (gelf_getsym(syms, int(i), &sym) == nullptr) break;
      if (sym.st_shndx == SHN_UNDEF) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (name != nullptr && !fn(sym, name)) return;
    }
  }
}

bool FindSymbol(Elf* elf, std::string_view wanted, GElf_Sym* out) {
  bool found = false;
  for (uint32_t table : {uint32_t(SHT_DYNSYM), uint32_t(SHT_SYMTAB)}) {
    ForEachDefinedSymbol(elf, table, [&](const GElf_Sym& sym, std::string_view name) {
      if (name != wanted) return true;
      *out = sym;
      found = true;
      return false;
    });
    if (found) return true;
  }
  return false;
}

std::span<const uint8_t> SymbolFileBytes(Elf* elf, const GElf_Sym& sym) {
  Elf_Scn* holder = elf_getscn(elf, sym.st_shndx);
  GElf_Shdr sh;
  if (holder == nullptr || gelf_getshdr(holder, &sh) == nullptr || sym.st_value < sh.sh_addr) {
    return {};
  }
  Elf_Data* data = elf_getdata(holder, nullptr);
  uint64_t at = sym.st_value - sh.sh_addr;
  if (data == nullptr || data->d_buf == nullptr || at > data->d_size) return {};
  return std::span(static_cast<const uint8_t*>(data->d_buf) + at, data->d_size - at);
}

std::vector<uint8_t> ElfBuildId(Elf* elf) {
  const void* id = nullptr;
  ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
  if (n <= 0 || id == nullptr) return {};
  const uint8_t* p = static_cast<const uint8_t*>(id);
  return std::vector<uint8_t>(p, p + n);
}

Result<std::vector<LoadSegment>> ElfLoadSegments(Elf* elf) {
  std::vector<LoadSegment> loads;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return ElfError("bad program headers");
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, int(i), &phdr) == nullptr) return ElfError("bad program header");
    if (phdr.p_type == PT_LOAD)
      loads.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz, phdr.p_memsz});
  }
  return loads;
}

bool ElfImage::OffsetToVaddr(uint64_t offset, uint64_t* vaddr) const {
  return symbols::OffsetToVaddr(loads, offset, vaddr);
}

bool OffsetToVaddr(std::span<const LoadSegment> loads, uint64_t offset, uint64_t* vaddr) {
  for (const LoadSegment& s : loads) {
    // Offsets inside a segment's page-aligned start also map (the text
    // segment of a PIE often starts mid-page).
    uint64_t begin = s.offset & ~uint64_t(0xfff);
    if (offset >= begin && offset < s.offset + s.filesz) {
      *vaddr = offset - s.offset + s.vaddr;
      return true;
    }
  }
  return false;
}

Result<std::vector<uint8_t>> ReadBuildId(const std::string& path) {
  ASSIGN_OR_RETURN(ElfFile file, OpenElfFile(path));
  return ElfBuildId(file.elf.get());
}

Result<ElfLayout> ReadElfLayout(const std::string& path) {
  ASSIGN_OR_RETURN(ElfFile file, OpenElfFile(path));
  ElfLayout layout;
  layout.build_id = ElfBuildId(file.elf.get());
  ASSIGN_OR_RETURN(layout.loads, ElfLoadSegments(file.elf.get()));
  return layout;
}

Status AddPltSymbolsOf(const std::string& binary, ElfImage* image) {
  ASSIGN_OR_RETURN(ElfFile file, OpenElfFile(binary));
  AddPltSymbols(file.elf.get(), &image->symbols);
  image->symbols.AddDefaultExports(DefaultExports(file.elf.get()));
  image->symbols.Finish();
  return OkStatus();
}

Result<std::unique_ptr<ElfImage>> LoadElfImage(const std::string& path, bool find_debug_file) {
  ASSIGN_OR_RETURN(ElfFile file, OpenElfFile(path));
  ASSIGN_OR_RETURN(std::unique_ptr<ElfImage> image, ReadImage(file.elf.get()));
  struct stat st;
  if (fstat(file.fd.get(), &st) == 0) image->file_size = uint64_t(st.st_size);
  if (find_debug_file && image->symbol_source != ".symtab" && image->build_id.size() > 1) {
    std::string hex = HexBytes(image->build_id);
    std::string debug =
        "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
    auto dfile = OpenElfFile(debug);
    if (dfile.ok() && ElfBuildId(dfile->elf.get()) == image->build_id) {
      SymbolTable table(SymbolTable::Aliases::kPublicName);
      if (AddSymbols(dfile->elf.get(), SHT_SYMTAB, &table)) {
        AddPltSymbols(file.elf.get(), &table);
        table.AddDefaultExports(DefaultExports(file.elf.get()));
        image->symbols = std::move(table);
        image->symbol_source = debug;
      }
    }
  }
  image->symbols.Finish();
  return image;
}

Result<std::unique_ptr<ElfImage>> LoadElfImageFromMemory(std::span<const uint8_t> bytes) {
  ASSIGN_OR_RETURN(ElfPtr elf, ElfFromMemory(bytes));
  ASSIGN_OR_RETURN(std::unique_ptr<ElfImage> image, ReadImage(elf.get()));
  image->file_size = bytes.size();
  image->symbols.Finish();
  return image;
}

std::span<const uint8_t> OwnVdsoImage() {
  auto base = reinterpret_cast<const uint8_t*>(getauxval(AT_SYSINFO_EHDR));
  if (base == nullptr) return {};
  Elf64_Ehdr eh;
  std::memcpy(&eh, base, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return {};
  uint64_t size = eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize;
  return {base, size};
}

const std::vector<uint8_t>& OwnVdsoBuildId() {
  static const std::vector<uint8_t> id = [] {
    auto image = LoadElfImageFromMemory(OwnVdsoImage());
    return image.ok() ? (*image)->build_id : std::vector<uint8_t>();
  }();
  return id;
}

std::string Demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string result(out);
  free(out);
  return result;
}

}  // namespace microscope::symbols
