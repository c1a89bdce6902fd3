#include <doctest.h>

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "src/symbols/elf_image.h"
#include "src/symbols/kallsyms.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbol_table.h"

using namespace microscope::symbols;

TEST_CASE("SymbolTable: lookup honours sizes and aliases") {
  SymbolTable t;
  t.Add(0x1000, 0x100, "first");
  t.Add(0x2000, 0, "open_ended");
  t.Add(0x1000, 0x80, "alias_of_first");
  t.Finish();
  CHECK(t.Lookup(0x1000) == "first");
  CHECK(t.Lookup(0x10ff) == "first");
  CHECK(t.Lookup(0x1100).empty());  // past first's size, before the next symbol
  CHECK(t.Lookup(0xfff).empty());
  CHECK(t.Lookup(0x999999) == "open_ended");
}

TEST_CASE("SymbolTable: among aliases, the name a user would type") {
  using B = SymbolTable::Binding;
  SymbolTable t(SymbolTable::Aliases::kPublicName);
  // glibc's free: a local __GI_ alias, two globals, a compatibility version.
  t.Add(0x1000, 0x100, "__GI___libc_free", B::kLocal);
  t.Add(0x1000, 0x100, "cfree", B::kGlobal);
  t.Add(0x1000, 0x100, "__libc_free", B::kGlobal);
  t.Add(0x1000, 0x100, "free", B::kGlobal);
  t.AddDefaultExports({"free", "__libc_free"});
  // A weak and a strong global: the strong one.
  t.Add(0x2000, 0x10, "clock_gettime", B::kWeak);
  t.Add(0x2000, 0x10, "__vdso_clock_gettime", B::kGlobal);
  // A label in code (the loader's _start) names code no function holds,
  // and loses to a function at its address.
  t.Add(0x3000, 0x100, "_start", B::kLocal, SymbolTable::Type::kLabel);
  t.Add(0x3008, 0x8, "_dl_start_user", B::kLocal, SymbolTable::Type::kLabel);
  t.Add(0x4000, 0x20, "entry_label", B::kGlobal, SymbolTable::Type::kLabel);
  t.Add(0x4000, 0x10, "real_function", B::kLocal);
  t.Finish();
  CHECK(t.Lookup(0x1010) == "free");
  CHECK(t.Find(0x1010).exported);
  CHECK(t.Lookup(0x2004) == "__vdso_clock_gettime");
  CHECK(t.Lookup(0x3007) == "_start");
  CHECK_FALSE(t.Find(0x3007).exported);  // a label is never preferred over the DWARF
  CHECK(t.Lookup(0x3009) == "_dl_start_user");
  CHECK(t.Lookup(0x4008) == "real_function");
  CHECK(t.Lookup(0x4018).empty());  // the function's size, not the label's, bounds it
  // Finish again (more exports arrive with a binary's PLT): the choice is redone.
  SymbolTable again(SymbolTable::Aliases::kPublicName);
  again.Add(0x1000, 0x100, "cfree", B::kGlobal);
  again.Add(0x1000, 0x100, "free", B::kGlobal);
  again.Finish();
  CHECK(again.Lookup(0x1000) == "cfree");  // perf's rule alone: the longer name
  again.AddDefaultExports({"free"});
  again.Finish();
  CHECK(again.Lookup(0x1000) == "free");
}

TEST_CASE("ElfImage: libc's allocator and the loader's entry by the names users know") {
  // libc6-dbg (scripts/setup) gives libc and the loader their full symbol tables.
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(handle != nullptr);
  for (const char* name : {"malloc", "free"}) {
    Dl_info info;
    void* at = dlsym(handle, name);
    REQUIRE((at != nullptr && dladdr(at, &info) != 0));
    auto image = LoadElfImage(info.dli_fname, /*find_debug_file=*/true);
    REQUIRE(image.ok());
    uint64_t vaddr = uint64_t(at) - uint64_t(info.dli_fbase);
    CHECK((*image)->symbols.Lookup(vaddr) == name);
    CHECK((*image)->symbols.Find(vaddr).exported);
  }
  dlclose(handle);
  const char* loader = "/lib64/ld-linux-x86-64.so.2";
  std::ifstream in(loader, std::ios::binary);
  Elf64_Ehdr ehdr{};
  REQUIRE(in.read(reinterpret_cast<char*>(&ehdr), sizeof(ehdr)));
  auto ld = LoadElfImage(loader, /*find_debug_file=*/true);
  REQUIRE(ld.ok());
  if ((*ld)->symbol_source == ".dynsym") {
    MESSAGE("no debug file for the loader: _start is not in its .dynsym");
  } else {
    CHECK((*ld)->symbols.Lookup(ehdr.e_entry + 7) == "_start");
  }
}

TEST_CASE("Kallsyms: parses functions, ignores data, refuses hidden addresses") {
  auto t = ParseKallsyms(
      "ffffffff81000000 T _stext\n"
      "ffffffff81000100 t helper\n"
      "ffffffff82000000 D some_data\n"
      "ffffffffc0000000 t mod_fn\t[ext4]\n");
  REQUIRE(t.ok());
  CHECK(t->Lookup(0xffffffff81000150) == "helper");
  CHECK(t->Lookup(0xffffffffc0000010) == "mod_fn");
  // Lines it cannot read are skipped; the last line needs no newline.
  auto odd = ParseKallsyms(
      "ffffffff81000000 T _stext\n"
      "zzzz T not_hex\n"
      "ffffffff81000080\n"
      "ffffffff810000FF W Upper_hex\n"
      "ffffffff81000200 T last");
  REQUIRE(odd.ok());
  CHECK(odd->Lookup(0xffffffff81000100) == "Upper_hex");
  CHECK(odd->Lookup(0xffffffff81000210) == "last");
  CHECK(odd->size() == 3);
  // This host's own, read in large reads: a table of its functions.
  auto host = LoadKallsyms();
  if (host.ok()) {
    CHECK(host->size() > 1000);
  } else {
    MESSAGE("/proc/kallsyms: " << host.status().message());
  }
  auto hidden = ParseKallsyms("0000000000000000 T _stext\n0000000000000000 t helper\n");
  REQUIRE_FALSE(hidden.ok());
  CHECK(hidden.status().message().find("kptr_restrict") != std::string::npos);
}

TEST_CASE("ElfImage: PLT stubs are named function@plt; sizeless symbols stop at their section") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  auto image = LoadElfImage(path);
  REQUIRE(image.ok());
  FILE* p = popen((std::string("objdump -d -j .plt -j .plt.sec ") + path +
                   " | awk '/<clock_gettime@plt>:/{print $1}'")
                      .c_str(),
                  "r");
  char buf[64] = {};
  REQUIRE(fgets(buf, sizeof(buf), p) != nullptr);
  pclose(p);
  uint64_t stub = std::strtoull(buf, nullptr, 16);
  REQUIRE(stub != 0);
  CHECK((*image)->symbols.Lookup(stub + 4) == "clock_gettime@plt");
}

TEST_CASE("LineTable: file:line of every 8th byte of the fixture's code agree with addr2line") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  auto table = microscope::symbols::OpenLineTable(path);
  REQUIRE(table.ok());
  std::vector<microscope::symbols::SourceFrame> frames;
  // Addresses across .text, one addr2line batch for all of them.
  FILE* p = popen(
      (std::string("readelf -SW ") + path + " | awk '$2==\".text\"{print $4, $6}'").c_str(), "r");
  char buf[128] = {};
  REQUIRE(fgets(buf, sizeof(buf), p) != nullptr);
  pclose(p);
  uint64_t start = 0, size = 0;
  REQUIRE(sscanf(buf, "%lx %lx", &start, &size) == 2);
  std::string cmd = std::string("addr2line -e ") + path;
  std::vector<uint64_t> addrs;
  for (uint64_t a = start; a < start + size; a += 8) {
    addrs.push_back(a);
    char hex[24];
    snprintf(hex, sizeof(hex), " %lx", static_cast<unsigned long>(a));
    cmd += hex;
  }
  p = popen(cmd.c_str(), "r");
  size_t agree = 0, compared = 0;
  for (uint64_t a : addrs) {
    char line[4096];
    if (fgets(line, sizeof(line), p) == nullptr) break;
    std::string want(line);
    while (!want.empty() && (want.back() == '\n' || want.back() == ' ')) want.pop_back();
    size_t paren = want.find(" (discriminator");
    if (paren != std::string::npos) want.resize(paren);
    // addr2line knows no line either ("??:0", or "file:?" for code without rows).
    if (want.rfind("??", 0) == 0 || want.ends_with(":?")) continue;
    ++compared;
    (*table)->Lookup(a, &frames);
    if (!frames.empty() && frames[0].line != 0) {
      std::string_view file = (*table)->String(frames[0].file);
      uint32_t n = frames[0].line;
      // addr2line does not normalize "dir/../file"; compare as printed.
      bool same = want == std::string(file) + ":" + std::to_string(n);
      agree += same;
      if (!same)
        MESSAGE("0x" << std::hex << a << std::dec << ": addr2line " << want << ", ours " << file
                     << ":" << n);
    } else {
      MESSAGE("0x" << std::hex << a << std::dec << ": addr2line " << want << ", ours none");
    }
  }
  pclose(p);
  CHECK(compared > 50);
  CHECK(agree >= compared * 99 / 100);
  MESSAGE("line agreement with addr2line: " << agree << " of " << compared);
}

TEST_CASE("LineTable: inline chains agree with addr2line -i -f") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  auto info = microscope::symbols::OpenLineTable(path);
  REQUIRE(info.ok());
  std::vector<microscope::symbols::SourceFrame> frames;
  auto image = microscope::symbols::LoadElfImage(path);
  REQUIRE(image.ok());
  // leaf_hot's code: burn_units is inlined into it.
  FILE* p = popen(
      (std::string("nm -S ") + path + " | awk '$4==\"leaf_hot\"{print $1, $2}'").c_str(), "r");
  char buf[128] = {};
  REQUIRE(fgets(buf, sizeof(buf), p) != nullptr);
  pclose(p);
  uint64_t start = 0, size = 0;
  REQUIRE(sscanf(buf, "%lx %lx", &start, &size) == 2);
  size_t checked = 0, agree = 0, inlined = 0;
  for (uint64_t a = start; a < start + size; a += 2) {
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "addr2line -i -f -e %s %lx", path, static_cast<unsigned long>(a));
    p = popen(cmd, "r");
    std::vector<std::string> want;  // function names, innermost first
    char line[1024];
    bool name_line = true;
    while (fgets(line, sizeof(line), p) != nullptr) {
      std::string s(line);
      while (!s.empty() && s.back() == '\n') s.pop_back();
      if (name_line) want.push_back(s);
      name_line = !name_line;
    }
    pclose(p);
    std::vector<std::string> ours;
    (*info)->Lookup(a, &frames);
    for (const auto& f : frames) ours.push_back(std::string((*info)->String(f.function)));
    ++checked;
    inlined += ours.size() > 1;
    agree += ours == want;
  }
  CHECK(inlined > 0);
  CHECK(agree == checked);
  MESSAGE("inline chains agreeing with addr2line -i -f: " << agree << " of " << checked << " ("
                                                          << inlined << " inlined)");
}

TEST_CASE("LineTable: truncated and corrupt DWARF files are errors or partial, never a crash") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string tmp = "/tmp/microscope-dwarf-" + std::to_string(getpid());
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string bad = bytes;
    if (round % 2 == 0) {
      bad.resize(rng() % bad.size());
    } else {
      for (int i = 0; i < 64; ++i) bad[rng() % bad.size()] = char(rng());
    }
    std::ofstream(tmp, std::ios::binary) << bad;
    auto info = microscope::symbols::OpenLineTable(tmp);
    std::vector<microscope::symbols::SourceFrame> frames;
    if (info.ok()) {
      for (uint64_t a = 0x1000; a < 0x1800; a += 16) {
        (*info)->Lookup(a, &frames);
        for (const auto& f : frames) {
          (void)(*info)->String(f.function);
          (void)(*info)->String(f.file);
        }
      }
    } else {
      CHECK(!info.status().message().empty());
    }
  }
  std::remove(tmp.c_str());
}

TEST_CASE("LineTable cache: round trip, reuse by build ID, and corrupt entries refused") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  std::string dir = "/tmp/microscope-linecache-" + std::to_string(getpid());
  auto first = microscope::symbols::OpenLineTable(path, "abcdef0123", dir);
  REQUIRE(first.ok());
  CHECK(!(*first)->from_cache);
  auto second = microscope::symbols::OpenLineTable(path, "abcdef0123", dir);
  REQUIRE(second.ok());
  CHECK((*second)->from_cache);
  std::vector<microscope::symbols::SourceFrame> a, b;
  size_t compared = 0;
  // 4 KiB of the fixture's code from its first line row (where the code
  // lies depends on the build: a sanitizer build's is larger).
  REQUIRE(!(*first)->data().rows.empty());
  const uint64_t text = (*first)->data().rows.front().address;
  for (uint64_t addr = text; addr < text + 0x1000; addr += 3) {
    (*first)->Lookup(addr, &a);
    (*second)->Lookup(addr, &b);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK((*first)->String(a[i].function) == (*second)->String(b[i].function));
      CHECK((*first)->String(a[i].file) == (*second)->String(b[i].file));
      CHECK(a[i].line == b[i].line);
    }
    compared += !a.empty();
  }
  CHECK(compared > 100);
  // Another version of the file (size or mtime): the entry is not used.
  auto bytes = microscope::symbols::SerializeLineTable((*first)->data(), 10, 20);
  CHECK(microscope::symbols::ParseLineTable(bytes, 10, 20).ok());
  CHECK(!microscope::symbols::ParseLineTable(bytes, 11, 20).ok());
  CHECK(!microscope::symbols::ParseLineTable(bytes, 10, 21).ok());
  // Random damage: an error, or a table whose every reference is in range.
  std::mt19937 rng(5);
  size_t refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bad = bytes;
    if (round % 3 == 0) {
      bad.resize(rng() % bad.size());
    } else {
      for (int i = 0; i < 1 + round % 5; ++i) bad[rng() % bad.size()] = uint8_t(rng());
    }
    auto parsed = microscope::symbols::ParseLineTable(bad, 10, 20);
    if (!parsed.ok()) {
      ++refused;
      continue;
    }
    microscope::symbols::LineTable table(std::move(parsed).value());
    for (uint64_t addr = 0x1000; addr < 0x2000; addr += 64) {
      table.Lookup(addr, &a);
      for (const auto& f : a) {
        (void)table.String(f.function);
        (void)table.String(f.file);
      }
    }
  }
  CHECK(refused > 1000);
  std::filesystem::remove_all(dir);
}

TEST_CASE("LineTable: DWARF that crashes libdwarf is an error for that file, not a crash") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  // A .debug_rnglists unit version of 0x..eb makes libdwarf 20210528 free a
  // block twice (found by fuzzing); the reader runs in a child.
  FILE* p = popen((std::string("readelf -SW ") + path).c_str(), "r");
  char line[512];
  long offset = -1;
  while (fgets(line, sizeof(line), p) != nullptr) {
    std::string s(line);
    size_t at = s.find(".debug_rnglists");
    if (at == std::string::npos) continue;
    char name[64], type[64];
    unsigned long addr = 0, off = 0;
    if (sscanf(s.c_str() + at, "%63s %63s %lx %lx", name, type, &addr, &off) == 4)
      offset = long(off);
  }
  pclose(p);
  REQUIRE(offset > 0);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes[size_t(offset) + 4] = char(0xeb);
  std::string tmp = "/tmp/microscope-dwarf-crash-" + std::to_string(getpid());
  std::ofstream(tmp, std::ios::binary) << bytes;
  auto table = microscope::symbols::OpenLineTable(tmp);
  REQUIRE(!table.ok());
  CHECK(table.status().code() == microscope::StatusCode::kDataLoss);
  CHECK(table.status().message().find("crashed") != std::string::npos);
  MESSAGE(table.status().message());
  std::remove(tmp.c_str());
}

TEST_CASE("LineTable: a file without DWARF is kNotFound, carried from the helper") {
  // The symbolizer tells "nothing to read" (no problem of the file's) from
  // "damaged" by this code alone, so it must survive the child protocol.
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  std::string stripped = "/tmp/microscope-nodwarf-" + std::to_string(getpid());
  REQUIRE(std::system(("objcopy --strip-debug " + std::string(path) + " " + stripped).c_str()) ==
          0);
  auto table = microscope::symbols::OpenLineTable(stripped);
  std::remove(stripped.c_str());
  REQUIRE(!table.ok());
  CHECK(table.status().code() == microscope::StatusCode::kNotFound);
  CHECK(!table.status().message().empty());

  // Not ELF at all: libdwarf finds nothing to read either, or calls it
  // damaged; never kUnknown, which would mean the code was lost on the way.
  std::string text = "/tmp/microscope-notelf-" + std::to_string(getpid());
  std::ofstream(text) << "not an ELF file, only text\n";
  auto other = microscope::symbols::OpenLineTable(text);
  std::remove(text.c_str());
  REQUIRE(!other.ok());
  CHECK((other.status().code() == microscope::StatusCode::kNotFound ||
         other.status().code() == microscope::StatusCode::kDataLoss));
}
