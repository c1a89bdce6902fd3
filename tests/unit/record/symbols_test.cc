#include <doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/symbols/elf_image.h"
#include "src/symbols/kallsyms.h"
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

TEST_CASE("Kallsyms: parses functions, ignores data, refuses hidden addresses") {
  auto t = ParseKallsyms(
      "ffffffff81000000 T _stext\n"
      "ffffffff81000100 t helper\n"
      "ffffffff82000000 D some_data\n"
      "ffffffffc0000000 t mod_fn\t[ext4]\n");
  REQUIRE(t.ok());
  CHECK(t->Lookup(0xffffffff81000150) == "helper");
  CHECK(t->Lookup(0xffffffffc0000010) == "mod_fn");
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
