#include <doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "src/runtimes/jit/entry_code.h"
#include "src/runtimes/jit/gdb_jit.h"
#include "src/runtimes/jit/jitdump.h"
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

TEST_CASE("Symbol ranges: a code move moves the symbol in place; bytes counted as they change") {
  SymbolRanges r;
  CHECK(r.bytes() == 0);
  JitSymbol big{0x1000, 0x1010, "moved function with a long name"};
  big.unwinding.assign(1 << 20, 0xab);
  r.Add(std::move(big));
  r.Add({0x9000, 0x9010, "landed on"});
  const uint64_t both = r.bytes();
  CHECK(both > (1u << 20));
  // 10,000 moves back and forth: one symbol, its unwinding bytes with it,
  // nothing more kept.
  for (int i = 0; i < 10000; ++i) {
    CHECK(r.Move(i % 2 ? 0x2000 : 0x1008, i % 2 ? 0x1000 : 0x2000, 0x10));
  }
  CHECK(r.size() == 2);
  CHECK(r.bytes() == both);
  CHECK(r.Find(0x1000)->name == "moved function with a long name");
  CHECK(r.Find(0x1000)->unwinding.size() == (1u << 20));
  CHECK(r.Find(0x2000) == nullptr);
  // Onto another symbol: that one goes, and its bytes.
  CHECK(r.Move(0x1000, 0x9000, 0x10));
  CHECK(r.size() == 1);
  CHECK(r.Find(0x9000)->name == "moved function with a long name");
  CHECK(r.bytes() < both);
  CHECK_FALSE(r.Move(0x5000, 0x6000, 0x10));  // no code there
}

TEST_CASE("Perf maps: read as they grow; another user's or an older one refused") {
  char dir[] = "/tmp/microscope-perfmap-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/perf-1.map";
  std::ofstream(path) << "1000 10 first\n2000 10 sec";
  ScopedFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  Result<std::unique_ptr<PerfMap>> map = PerfMap::Open(root.get(), path, getuid(), 0);
  REQUIRE(map.ok());
  CHECK((*map)->ReadMore().value() == 1);
  CHECK((*map)->Find(0x1008)->name == "first");
  CHECK((*map)->Find(0x2000) == nullptr);  // its line is not complete yet
  std::ofstream(path, std::ios::app) << "ond\n";
  CHECK((*map)->ReadMore().value() == 1);
  CHECK((*map)->Find(0x2000)->name == "second");
  CHECK((*map)->ReadMore().value() == 0);
  Result<std::unique_ptr<PerfMap>> foreign = PerfMap::Open(root.get(), path, getuid() + 1, 0);
  CHECK(foreign.status().code() == StatusCode::kPermissionDenied);
  CHECK(foreign.status().message().find("not by the process's user") != std::string::npos);
  Result<std::unique_ptr<PerfMap>> stale =
      PerfMap::Open(root.get(), path, getuid(), time(nullptr) + 60);
  CHECK(stale.status().message().find("before its process started") != std::string::npos);
  CHECK(PerfMap::Open(root.get(), path + ".none", getuid(), 0).status().code() ==
        StatusCode::kNotFound);
  std::remove(path.c_str());
  rmdir(dir);
}

TEST_CASE("Perf maps: resolved beneath the process's root; no link in /tmp, no absolute link") {
  // A process's root (its /proc/PID/root): a container's tree.
  char dir[] = "/tmp/microscope-perfroot-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string top = dir;
  REQUIRE(mkdir((top + "/tmp").c_str(), 01777) == 0);
  REQUIRE(chmod((top + "/tmp").c_str(), 01777) == 0);
  std::ofstream(top + "/tmp/perf-1.map") << "1000 10 mine\n";
  std::ofstream(top + "/secret") << "3000 10 outside\n";
  ScopedFd root(open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root.valid());
  Result<std::unique_ptr<PerfMap>> map = PerfMap::Open(root.get(), "/tmp/perf-1.map", getuid(), 0);
  REQUIRE(map.ok());
  CHECK((*map)->ReadMore().value() == 1);
  // A link the process planted in its world-writable /tmp is never followed.
  REQUIRE(symlink("perf-1.map", (top + "/tmp/perf-2.map").c_str()) == 0);
  Result<std::unique_ptr<PerfMap>> linked =
      PerfMap::Open(root.get(), "/tmp/perf-2.map", getuid(), 0);
  CHECK(linked.status().code() == StatusCode::kPermissionDenied);
  CHECK(linked.status().message().find("others can write") != std::string::npos);
  // An absolute link would resolve against the recorder's root: refused.
  REQUIRE(mkdir((top + "/run").c_str(), 0755) == 0);
  REQUIRE(symlink("/etc/passwd", (top + "/run/perf-3.map").c_str()) == 0);
  Result<std::unique_ptr<PerfMap>> absolute =
      PerfMap::Open(root.get(), "/run/perf-3.map", getuid(), 0);
  CHECK(absolute.status().message().find("absolute path") != std::string::npos);
  // Nor does ".." climb out of the process's root.
  Result<std::unique_ptr<PerfMap>> above =
      PerfMap::Open(root.get(), "/../../../" + top.substr(1) + "/secret", getuid(), 0);
  CHECK(above.status().message().find("leaves the directory") != std::string::npos);
  for (const char* f : {"/tmp/perf-1.map", "/tmp/perf-2.map", "/run/perf-3.map", "/secret"})
    std::remove((top + f).c_str());
  rmdir((top + "/tmp").c_str());
  rmdir((top + "/run").c_str());
  rmdir(dir);
}

namespace {

void Put32(std::vector<uint8_t>* b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b->push_back(uint8_t(v >> (8 * i)));
}
void Put64(std::vector<uint8_t>* b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b->push_back(uint8_t(v >> (8 * i)));
}
// A JIT_CODE_LOAD record of `size` bytes of code at `addr`.
void CodeLoad(std::vector<uint8_t>* b, uint64_t addr, uint64_t size, const std::string& name) {
  Put32(b, 0);
  Put32(b, uint32_t(16 + 40 + name.size() + 1 + size));
  Put64(b, 0);
  Put32(b, 1);
  Put32(b, 1);
  Put64(b, addr);
  Put64(b, addr);
  Put64(b, size);
  Put64(b, 7);
  b->insert(b->end(), name.begin(), name.end());
  b->push_back(0);
  b->insert(b->end(), size, 0xcc);
}

}  // namespace

TEST_CASE("jitdump: header, code loads and moves, a cut record left for later") {
  std::vector<uint8_t> h;
  Put32(&h, 0x4A695444);
  Put32(&h, 1);
  Put32(&h, 40);
  Put32(&h, 62);
  Put32(&h, 0);
  Put32(&h, 1234);
  Put64(&h, 0);
  Put64(&h, 0);
  Result<JitDumpHeader> header = ParseJitDumpHeader(h);
  REQUIRE(header.ok());
  CHECK(header->pid == 1234);
  CHECK_FALSE(header->swapped);
  std::vector<uint8_t> bad = h;
  bad[0] ^= 1;
  CHECK_FALSE(ParseJitDumpHeader(bad).ok());
  CHECK_FALSE(ParseJitDumpHeader(std::span<const uint8_t>(h.data(), 20)).ok());

  std::vector<uint8_t> r;
  CodeLoad(&r, 0x7000, 0x20, "a");
  // A move of a's code to 0x9000.
  Put32(&r, 1);
  Put32(&r, 16 + 48);
  Put64(&r, 0);
  Put32(&r, 1);
  Put32(&r, 1);
  Put64(&r, 0x7000);
  Put64(&r, 0x7000);
  Put64(&r, 0x9000);
  Put64(&r, 0x20);
  Put64(&r, 7);
  // A debug-info record (not read), then a load cut short.
  Put32(&r, 2);
  Put32(&r, 24);
  Put64(&r, 0);
  Put64(&r, 0);
  const size_t whole = r.size();
  CodeLoad(&r, 0x8000, 0x10, "b");
  r.resize(r.size() - 3);
  JitDumpRecords got = ParseJitDumpRecords(r, false);
  CHECK(got.error.empty());
  CHECK(got.consumed == whole);
  REQUIRE(got.ops.size() == 2);
  CHECK_FALSE(got.ops[0].is_move);
  CHECK(got.ops[0].load.name == "a");
  CHECK(got.ops[0].load.end == 0x7020);
  CHECK(got.ops[1].is_move);
  CHECK(got.ops[1].move.to == 0x9000);
  CHECK(got.unknown == 1);
  // A record claiming less than its own header stops the reading.
  std::vector<uint8_t> lie;
  Put32(&lie, 0);
  Put32(&lie, 8);
  Put64(&lie, 0);
  CHECK(ParseJitDumpRecords(lie, false).error.find("claims 8 bytes") != std::string::npos);
  // Random bytes never crash the reader.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> junk = r;
    for (int k = 0; k < 4; ++k) junk[rng() % junk.size()] = uint8_t(rng());
    junk.resize(rng() % (junk.size() + 1));
    (void)ParseJitDumpRecords(junk, i % 2 == 0);
  }
}

namespace {

struct BufferMemory : record::ProcessMemory {
  BufferMemory() : ProcessMemory(0) {}
  uint64_t base = 0x10000;
  std::vector<uint8_t> bytes = std::vector<uint8_t>(4096);
  template <typename T>
  void Put(uint64_t at, const T& v) {
    std::memcpy(bytes.data() + (at - base), &v, sizeof(v));
  }
  bool Read(uint64_t address, void* out, size_t size) override {
    if (address < base || address - base + size > bytes.size()) return false;
    std::memcpy(out, bytes.data() + (address - base), size);
    return true;
  }
};

}  // namespace

TEST_CASE("GDB JIT interface: entries walked, a list that never ends bounded, objects read") {
  BufferMemory m;
  struct Descriptor {
    uint32_t version, action;
    uint64_t relevant, first;
  };
  struct Entry {
    uint64_t next, prev, symfile, size;
  };
  m.Put(0x10000, Descriptor{1, 1, 0x10100, 0x10100});
  m.Put(0x10100, Entry{0x10200, 0, 0xaaaa, 10});
  m.Put(0x10200, Entry{0, 0x10100, 0xbbbb, 20});
  Result<std::vector<GdbJitEntry>> e = ReadGdbJitEntries(m, 0x10000);
  REQUIRE(e.ok());
  REQUIRE(e->size() == 2);
  CHECK((*e)[1].symfile == 0xbbbb);
  m.Put(0x10200, Entry{0x10100, 0x10100, 0xbbbb, 20});  // a loop
  CHECK(ReadGdbJitEntries(m, 0x10000).status().message().find("more than 4096") !=
        std::string::npos);
  m.Put(0x10200, Entry{0x90000, 0x10100, 0xbbbb, 20});  // an entry out of reach
  CHECK(ReadGdbJitEntries(m, 0x10000).status().message().find("unreadable") != std::string::npos);
  m.Put(0x10000, Descriptor{2, 1, 0, 0});
  CHECK(ReadGdbJitEntries(m, 0x10000).status().message().find("version 2") != std::string::npos);
  // Not an ELF object.
  std::vector<uint8_t> junk(64, 0x41);
  CHECK_FALSE(GdbJitObjectSymbols(junk).ok());
}

namespace {

std::vector<uint8_t> Unhex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(uint8_t(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// An unwinding information record (id 4) carrying `data`, whose last
// `hdr` bytes are the .eh_frame_hdr.
void UnwindingInfo(std::vector<uint8_t>* r, const std::vector<uint8_t>& data, uint64_t hdr) {
  const size_t padded = (data.size() + 7) / 8 * 8;
  Put32(r, 4);
  Put32(r, uint32_t(16 + 24 + padded));
  Put64(r, 0);
  Put64(r, data.size());
  Put64(r, hdr);
  Put64(r, data.size());
  r->insert(r->end(), data.begin(), data.end());
  r->resize(r->size() + padded - data.size());
}

// What CPython 3.13's -X perf_jit wrote for a trampoline (endbr64; sub rsp,
// 8; call *rcx; add rsp, 8; ret: 15 bytes): .eh_frame (CIE, FDE) then its
// .eh_frame_hdr, as read from a live jitdump on this machine.
constexpr std::string_view kCpythonUnwinding =
    "1400000000000000017a5200017810011b0c070890010000"
    "140000001c000000d0ffffff0f00000000480e10460e0800"
    "011b033bccffffff01000000c0ffffffe8ffffff";

}  // namespace

TEST_CASE("jitdump: unwinding information goes with the code load after it, as CFI at its code") {
  const std::vector<uint8_t> data = Unhex(kCpythonUnwinding);
  REQUIRE(data.size() == 68);  // 48 of .eh_frame, 20 of header
  std::vector<uint8_t> r;
  UnwindingInfo(&r, data, 20);
  CodeLoad(&r, 0x7f0000001000, 15, "py::f:a.py");
  // V8 writes a header alone: no rules for the next load, and the reading
  // goes on.
  UnwindingInfo(&r, std::vector<uint8_t>(data.end() - 20, data.end()), 20);
  CodeLoad(&r, 0x7f0000002000, 64, "JS:leaf");
  // Sizes that disagree: that record is not read, the rest is.
  UnwindingInfo(&r, data, 90);
  CodeLoad(&r, 0x7f0000003000, 15, "py::g:a.py");
  JitDumpRecords got = ParseJitDumpRecords(r, false);
  CHECK(got.error.empty());
  REQUIRE(got.ops.size() == 3);
  CHECK(got.ops[0].load.unwinding.size() == 68);
  CHECK(got.ops[0].load.eh_frame_hdr_size == 20);
  CHECK(got.ops[1].load.unwinding.empty());
  CHECK(got.ops[2].load.unwinding.empty());
  CHECK(got.unknown == 1);

  Result<std::unique_ptr<unwind::CfiTable>> t = JitDumpUnwindTable(got.ops[0].load);
  REQUIRE(t.ok());
  const unwind::CfiRow* entry = (*t)->Find(0x7f0000001000);
  REQUIRE(entry != nullptr);
  CHECK(entry->cfa_reg == unwind::kRegRsp);
  CHECK(entry->cfa_offset == 8);
  // At the call (after endbr64 and the sub): CFA rsp + 16.
  const unwind::CfiRow* call = (*t)->Find(0x7f0000001008);
  REQUIRE(call != nullptr);
  CHECK(call->cfa_offset == 16);
  CHECK(call->ra_offset == -8);
  CHECK((*t)->Find(0x7f0000001000 + 14)->cfa_offset == 8);  // ret
  // The same information moved with its code describes the new place.
  JitSymbol moved = got.ops[0].load;
  moved.start = 0x7f0000009000;
  moved.end = moved.start + 15;
  Result<std::unique_ptr<unwind::CfiTable>> m = JitDumpUnwindTable(moved);
  REQUIRE(m.ok());
  CHECK((*m)->Find(0x7f0000009008)->cfa_offset == 16);
  // A header that is not one is refused by name.
  JitSymbol bad = got.ops[0].load;
  bad.unwinding[48] = 2;
  Result<std::unique_ptr<unwind::CfiTable>> refused = JitDumpUnwindTable(bad);
  CHECK_FALSE(refused.ok());
  CHECK(refused.status().message().find("py::f:a.py") != std::string::npos);
  // Random bytes never crash the reader.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    JitSymbol junk = got.ops[0].load;
    for (int k = 0; k < 3; ++k) junk.unwinding[rng() % junk.unwinding.size()] = uint8_t(rng());
    (void)JitDumpUnwindTable(junk);
  }
}

TEST_CASE("Entry code: CPython's perf trampolines proven, other code not guessed") {
  // 3.12 and 3.13: endbr64; sub rsp, 8; call *rcx; add rsp, 8; ret.
  const std::vector<uint8_t> no_fp = Unhex("f30f1efa4883ec08ffd14883c408c3");
  std::unique_ptr<unwind::CfiTable> t = ProveEntryCode(no_fp, 0x1000);
  REQUIRE(t != nullptr);
  CHECK(t->Find(0x1000)->cfa_offset == 8);
  const unwind::CfiRow* call = t->Find(0x1008);  // the return address's call
  REQUIRE(call != nullptr);
  CHECK(call->cfa_reg == unwind::kRegRsp);
  CHECK(call->cfa_offset == 16);
  CHECK(call->ra_offset == -8);
  CHECK((call->flags & unwind::CfiRow::kRbpSaved) == 0);  // rbp untouched
  CHECK(t->Find(0x100e)->cfa_offset == 8);                // ret
  CHECK(t->Find(0x100f) == nullptr);
  // 3.14 on: endbr64; push rbp; mov rbp, rsp; call *rcx; pop rbp; ret.
  const std::vector<uint8_t> fp = Unhex("f30f1efa554889e5ffd15dc3");
  t = ProveEntryCode(fp, 0x2000);
  REQUIRE(t != nullptr);
  call = t->Find(0x2008);
  REQUIRE(call != nullptr);
  CHECK(call->cfa_reg == unwind::kRegRbp);
  CHECK(call->cfa_offset == 16);
  CHECK((call->flags & unwind::CfiRow::kRbpSaved) != 0);
  CHECK(call->rbp_offset == -16);
  CHECK(t->Find(0x200a)->cfa_reg == unwind::kRegRbp);  // pop rbp
  CHECK(t->Find(0x200b)->cfa_reg == unwind::kRegRsp);  // ret
  CHECK(t->Find(0x200b)->cfa_offset == 8);
  // A frameless loop after its sub: only the sub is proven.
  t = ProveEntryCode(Unhex("4883ec18b9a0860100ffc975fc4883c418c3"), 0x3000);
  REQUIRE(t != nullptr);
  CHECK(t->Find(0x3000) != nullptr);
  CHECK(t->Find(0x3004) == nullptr);
  // rbp overwritten before it was saved, or an unknown first instruction:
  // nothing.
  CHECK(ProveEntryCode(Unhex("4889e5c3"), 0x4000) == nullptr);
  CHECK(ProveEntryCode(Unhex("b901000000c3"), 0x4000) == nullptr);
  CHECK(ProveEntryCode({}, 0x4000) == nullptr);
  // Random bytes never crash the prover.
  std::mt19937_64 rng(13);
  for (int i = 0; i < 5000; ++i) {
    std::vector<uint8_t> junk(rng() % 40);
    for (uint8_t& b : junk) b = uint8_t(rng() % 4 == 0 ? 0x55 : rng());
    (void)ProveEntryCode(junk, 0x5000);
  }
}

TEST_CASE(
    "GDB JIT objects: CFI that names a register far beyond any is refused (found by fuzz_jit)") {
  // An object whose CFI names register ~89 million: handed to libdw, each
  // rule lookup allocated and cleared 2 GB.
  const std::vector<uint8_t> object = {
      0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x01, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x02,
      0x06, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0xfe, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
      0x00, 0x00, 0x12, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x12,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x6a, 0x69, 0x74, 0x5f, 0x73, 0x70, 0x69,
      0x6e, 0x5f, 0x67, 0x64, 0x62, 0x00, 0x00, 0x2e, 0x74, 0x65, 0x78, 0x74, 0x00, 0x2e, 0x73,
      0x79, 0x6d, 0x74, 0x61, 0x62, 0x00, 0x2e, 0x73, 0x74, 0x72, 0x31, 0x61, 0x62, 0x00, 0x2e,
      0x73, 0x68, 0x73, 0x74, 0x72, 0x74, 0x61, 0x62, 0x00, 0x2e, 0x65, 0x68, 0x5f, 0x66, 0x72,
      0x61, 0x6d, 0x65, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x01, 0x7a, 0x52, 0x00, 0x01, 0x78, 0x10, 0x01, 0x1b, 0x0a, 0x07,
      0xfe, 0x8f, 0xfe, 0xff, 0x00, 0x14, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x30, 0xfb,
      0xff, 0xff, 0x12, 0xff, 0xf7, 0x00, 0x00, 0x44, 0x4e, 0x00, 0x4a, 0x78, 0x66, 0x90, 0x20,
      0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x52, 0xe9, 0x7c, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x90, 0x01, 0x00, 0x00, 0x14, 0x00,
      0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x30, 0xfb, 0xff, 0xff, 0x12, 0xff, 0xf7, 0x00, 0x00,
      0x44, 0x0e, 0x00, 0x4a, 0x66, 0x66, 0x90, 0x20, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
      0x08, 0x00, 0x80, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0e, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x17,
      0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7e, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x2b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x01, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x21, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xff, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0xb0, 0xa4, 0x52, 0xe9, 0x7c, 0x7f, 0x00, 0x00, 0xb0, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  auto cfi = GdbJitObjectCfi(object);
  REQUIRE_FALSE(cfi.ok());
  INFO(cfi.status().message());
  CHECK(cfi.status().message().find("register") != std::string::npos);
}
