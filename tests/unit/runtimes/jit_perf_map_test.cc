#include <doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "src/runtimes/jit/perf_map.h"

using namespace microscope;
using namespace microscope::runtimes::jit;

TEST_CASE("Perf maps: complete lines parsed, malformed ones counted, a cut line left for later") {
  PerfMapLines l = ParsePerfMapLines(
      "7f0000001000 40 LazyCompile:*leaf /app/a.js:19:14\n"
      "0x7f0000002000 0x10 with spaces in it\n"
      "zz 10 bad start\n"
      "7f0000003000 0 empty\n"
      "7f0000004000 10\n"
      "7f0000005000 20 cut");
  REQUIRE(l.symbols.size() == 2);
  CHECK(l.symbols[0].start == 0x7f0000001000);
  CHECK(l.symbols[0].end == 0x7f0000001040);
  CHECK(l.symbols[0].name == "LazyCompile:*leaf /app/a.js:19:14");
  CHECK(l.symbols[1].name == "with spaces in it");
  CHECK(l.malformed == 3);
  CHECK(l.consumed == std::string_view("7f0000001000 40 LazyCompile:*leaf /app/a.js:19:14\n"
                                       "0x7f0000002000 0x10 with spaces in it\n"
                                       "zz 10 bad start\n"
                                       "7f0000003000 0 empty\n"
                                       "7f0000004000 10\n")
                          .size());
  // Random bytes never crash the parser.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 120, '\0');
    for (char& c : junk) c = "0123456789abcdefx \n"[rng() % 19];
    (void)ParsePerfMapLines(junk);
  }
}

TEST_CASE("Perf maps: a later range replaces the ones it overlaps") {
  SymbolRanges r;
  r.Add({0x1000, 0x1100, "a"});
  r.Add({0x1100, 0x1200, "b"});
  r.Add({0x2000, 0x2100, "c"});
  CHECK(r.Find(0x10ff)->name == "a");
  CHECK(r.Find(0x1100)->name == "b");
  CHECK(r.Find(0x1200) == nullptr);
  r.Add({0x1080, 0x1180, "d"});  // over the end of a and the start of b
  CHECK(r.Find(0x1000) == nullptr);
  CHECK(r.Find(0x1080)->name == "d");
  CHECK(r.Find(0x1190) == nullptr);
  CHECK(r.Find(0x2050)->name == "c");
  CHECK(r.size() == 2);
}

TEST_CASE("Perf maps: read as they grow; another user's or an older one refused") {
  char dir[] = "/tmp/microscope-perfmap-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/perf-1.map";
  std::ofstream(path) << "1000 10 first\n2000 10 sec";
  Result<std::unique_ptr<PerfMap>> map = PerfMap::Open(path, getuid(), 0);
  REQUIRE(map.ok());
  CHECK((*map)->ReadMore().value() == 1);
  CHECK((*map)->Find(0x1008)->name == "first");
  CHECK((*map)->Find(0x2000) == nullptr);  // its line is not complete yet
  std::ofstream(path, std::ios::app) << "ond\n";
  CHECK((*map)->ReadMore().value() == 1);
  CHECK((*map)->Find(0x2000)->name == "second");
  CHECK((*map)->ReadMore().value() == 0);
  Result<std::unique_ptr<PerfMap>> foreign = PerfMap::Open(path, getuid() + 1, 0);
  CHECK(foreign.status().code() == StatusCode::kPermissionDenied);
  CHECK(foreign.status().message().find("not by the process's user") != std::string::npos);
  Result<std::unique_ptr<PerfMap>> stale = PerfMap::Open(path, getuid(), time(nullptr) + 60);
  CHECK(stale.status().message().find("before its process started") != std::string::npos);
  CHECK(PerfMap::Open(path + ".none", getuid(), 0).status().code() == StatusCode::kNotFound);
  std::remove(path.c_str());
  rmdir(dir);
}
