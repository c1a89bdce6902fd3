#include <doctest.h>
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/record/module_cfi.h"
#include "src/unwind/cfi_table.h"
#include "src/unwind/unwinder.h"

using namespace microscope;
using namespace microscope::unwind;
using capture::StackEnd;

namespace {

CfiRow FastRow(uint64_t start, uint32_t len, uint8_t cfa_reg, int32_t cfa_off, int16_t ra_off = -8,
               uint8_t flags = 0, int16_t rbp_off = 0) {
  CfiRow r{};
  r.start = start;
  r.length = len;
  r.cfa_reg = cfa_reg;
  r.cfa_offset = cfa_off;
  r.ra_offset = ra_off;
  r.rbp_offset = rbp_off;
  r.flags = flags;
  r.general = 0xFFFFFFFFu;
  return r;
}

// A hand-made address space: code ranges with a table (or none) and a bias.
struct FakeCode : CodeMap {
  struct Range {
    uint64_t start, end;
    const CfiTable* table;
    uint64_t bias;
  };
  std::vector<Range> ranges;
  bool Lookup(uint64_t pc, CodeInfo* info) override {
    for (const Range& r : ranges) {
      if (pc >= r.start && pc < r.end) {
        info->table = r.table;
        info->bias = r.bias;
        return true;
      }
    }
    return false;
  }
};

// A stack image: words at base + 8*i.
struct Stack {
  uint64_t base = 0x7000;
  std::vector<uint64_t> words = std::vector<uint64_t>(32, 0);
  void Put(uint64_t addr, uint64_t v) { words[(addr - base) / 8] = v; }
  StackImage Image() const {
    return {base, std::span(reinterpret_cast<const uint8_t*>(words.data()), words.size() * 8)};
  }
};

Registers Regs(uint64_t pc, uint64_t sp, uint64_t bp = 0) {
  Registers r;
  r.Set(kRegRa, pc);
  r.Set(kRegRsp, sp);
  if (bp != 0) r.Set(kRegRbp, bp);
  return r;
}

// Three functions loaded at 0x400000 + offset (bias 0x400000):
//   f1 [0x1000,0x1100): CFA = RSP+16, RA at CFA-8
//   f2 [0x2000,0x2100): CFA = RSP+32, RA at CFA-8, RBP saved at CFA-16
//   f3 [0x3000,0x3100): outermost (RA undefined)
std::unique_ptr<CfiTable> ThreeFunctions() {
  return CfiTable::FromRows({FastRow(0x1000, 0x100, kRegRsp, 16),
                             FastRow(0x2000, 0x100, kRegRsp, 32, -8, CfiRow::kRbpSaved, -16),
                             FastRow(0x3000, 0x100, kRegRsp, 8, -8, CfiRow::kRaUndefined)});
}

}  // namespace

TEST_CASE("Unwinder: fast rows walk to the outermost frame (complete)") {
  auto table = ThreeFunctions();
  FakeCode code;
  code.ranges.push_back({0x401000, 0x404000, table.get(), 0x400000});
  Stack s;
  s.Put(0x7008, 0x402051);  // f1's return address into f2
  s.Put(0x7020, 0xabcdef);  // f2 saved the caller's RBP at CFA-16
  s.Put(0x7028, 0x403011);  // f2's return address into f3
  std::vector<unwind::Frame> out(16);
  auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), code, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kComplete);
  REQUIRE(r.frames == 3);
  CHECK(out[0].pc == 0x401050);
  CHECK(out[0].exact);
  CHECK(out[1].pc == 0x402051);
  CHECK_FALSE(out[1].exact);
  CHECK(out[2].pc == 0x403011);
}

TEST_CASE("Unwinder: a walk says how far up the copy it read, and needs no more") {
  auto table = ThreeFunctions();
  FakeCode code;
  code.ranges.push_back({0x401000, 0x404000, table.get(), 0x400000});
  Stack s;
  s.Put(0x7008, 0x402051);
  s.Put(0x7020, 0xabcdef);
  s.Put(0x7028, 0x403011);
  std::vector<unwind::Frame> out(16);
  const StackImage whole = s.Image();
  auto r = Unwind(Regs(0x401050, 0x7000), whole, code, Policy::kDwarf, out);
  REQUIRE(r.end == StackEnd::kComplete);
  REQUIRE(whole.read_end > whole.base);
  REQUIRE(whole.read_end - whole.base < whole.bytes.size());
  // The copy cut there walks the same; 8 bytes short, it runs out.
  const size_t needed = whole.read_end - whole.base;
  StackImage cut{whole.base, whole.bytes.first(needed)};
  auto rc = Unwind(Regs(0x401050, 0x7000), cut, code, Policy::kDwarf, out);
  CHECK(rc.end == StackEnd::kComplete);
  CHECK(rc.frames == r.frames);
  StackImage short_copy{whole.base, whole.bytes.first(needed - 8)};
  CHECK(Unwind(Regs(0x401050, 0x7000), short_copy, code, Policy::kDwarf, out).end ==
        StackEnd::kStackCopyExhausted);
}

TEST_CASE("Unwinder: a return address at a function's end is looked up at pc - 1") {
  // f1 returns to 0x402100: one past f2's last byte (a call as f2's last
  // instruction). Looking up pc itself would miss f2.
  auto table = ThreeFunctions();
  FakeCode code;
  code.ranges.push_back({0x401000, 0x404000, table.get(), 0x400000});
  Stack s;
  s.Put(0x7008, 0x402100);
  s.Put(0x7028, 0x403011);
  std::vector<unwind::Frame> out(16);
  auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), code, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kComplete);
  CHECK(r.frames == 3);
}

TEST_CASE("Unwinder: each end reason") {
  auto table = ThreeFunctions();
  FakeCode code;
  code.ranges.push_back({0x401000, 0x405000, table.get(), 0x400000});
  std::vector<unwind::Frame> out(16);
  Stack s;

  SUBCASE("no unwind info for pc") {
    auto r = Unwind(Regs(0x404000, 0x7000), s.Image(), code, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kNoUnwindInfo);
    CHECK(r.frames == 1);
  }
  SUBCASE("unmapped pc") {
    auto r = Unwind(Regs(0x900000, 0x7000), s.Image(), code, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kUnmappedPc);
    CHECK(r.frames == 0);
  }
  SUBCASE("bad return address: nothing appended after it") {
    s.Put(0x7008, 0x123);  // f1 returns into no mapping
    auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), code, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kBadReturnAddress);
    CHECK(r.frames == 1);
  }
  SUBCASE("copied bytes ran out") {
    Stack small;
    small.words.resize(1);  // 8 bytes: CFA-8 = 0x7008 lies past them
    auto r = Unwind(Regs(0x401050, 0x7000), small.Image(), code, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kStackCopyExhausted);
    CHECK(r.frames == 1);
  }
  SUBCASE("CFA outside the copy (below it)") {
    auto bp_table = CfiTable::FromRows({FastRow(0x1000, 0x100, kRegRbp, 16)});
    FakeCode c2;
    c2.ranges.push_back({0x401000, 0x402000, bp_table.get(), 0x400000});
    auto r = Unwind(Regs(0x401050, 0x7000, 0x1000), s.Image(), c2, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kCfaOutsideCopy);
  }
  SUBCASE("CFA that does not grow ends the walk") {
    auto bad = CfiTable::FromRows({FastRow(0x1000, 0x100, kRegRsp, 0, 8)});
    FakeCode c2;
    c2.ranges.push_back({0x401000, 0x402000, bad.get(), 0x400000});
    s.Put(0x7008, 0x401060);
    auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), c2, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kCfaOutsideCopy);
  }
  SUBCASE("max depth") {
    // f1 "returns" into f1 again and again, each frame 16 bytes higher.
    for (uint64_t a = 0x7008; a < 0x7100; a += 16) s.Put(a, 0x401051);
    std::vector<unwind::Frame> two(2);
    auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), code, Policy::kDwarf, two);
    CHECK(r.end == StackEnd::kMaxDepth);
    CHECK(r.frames == 2);
  }
  SUBCASE("unsupported CFI operation") {
    GeneralRow g;
    std::vector<ExprOp> exprs = {{DW_OP_xderef, 0, 0}};
    g.cfa_begin = 0;
    g.cfa_len = 1;
    CfiRow row = FastRow(0x1000, 0x100, 0, 0, 0, CfiRow::kGeneral);
    row.general = 0;
    auto t = CfiTable::FromRows({row}, {g}, exprs);
    FakeCode c2;
    c2.ranges.push_back({0x401000, 0x402000, t.get(), 0x400000});
    auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), c2, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kUnsupportedCfi);
  }
  SUBCASE("frame pointers where a module has no CFI (auto), and where the chain ends") {
    FakeCode c2;
    c2.ranges.push_back({0x401000, 0x402000, nullptr, 0x400000});  // no CFI
    c2.ranges.push_back({0x403000, 0x404000, table.get(), 0x400000});
    s.Put(0x7010, 0x7040);    // [rbp] = caller's rbp
    s.Put(0x7018, 0x401080);  // [rbp+8] = return address, in the same no-CFI module
    s.Put(0x7040, 0);         // the outer frame's rbp: 0, the end of the chain
    s.Put(0x7048, 0x401090);
    auto r = Unwind(Regs(0x401050, 0x7000, 0x7010), s.Image(), c2, Policy::kAuto, out);
    CHECK(r.frames == 3);
    CHECK(r.end == StackEnd::kFramePointerEnd);
    auto strict = Unwind(Regs(0x401050, 0x7000, 0x7010), s.Image(), c2, Policy::kDwarf, out);
    CHECK(strict.end == StackEnd::kNoUnwindInfo);
  }
}

TEST_CASE("Unwinder: after an epilogue's pop %rbp, RBP's slot below the copy keeps RBP") {
  // f0 [0x1000,0x1100) right after `pop %rbp`: CFA = RSP+8, RA at CFA-8, and
  // (no .cfi_restore, as GCC emits it) RBP still "at CFA-16", 8 bytes below
  // RSP where the copy starts. Its callers are f2 and f3 of ThreeFunctions.
  Stack s;
  s.Put(0x7000, 0x402051);  // f0's return address into f2
  s.Put(0x7018, 0xabcdef);  // f2 saved its caller's RBP at CFA-16
  s.Put(0x7020, 0x403011);  // f2's return address into f3
  std::vector<unwind::Frame> out(16);
  auto check_callers = [&](const CfiTable& table) {
    FakeCode code;
    code.ranges.push_back({0x401000, 0x404000, &table, 0x400000});
    auto r = Unwind(Regs(0x401050, 0x7000, 0x1234), s.Image(), code, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kComplete);
    REQUIRE(r.frames == 3);
    CHECK(out[1].pc == 0x402051);
    CHECK(out[2].pc == 0x403011);
  };
  CfiRow f2 = FastRow(0x2000, 0x100, kRegRsp, 32, -8, CfiRow::kRbpSaved, -16);
  CfiRow f3 = FastRow(0x3000, 0x100, kRegRsp, 8, -8, CfiRow::kRaUndefined);

  SUBCASE("fast row") {
    check_callers(*CfiTable::FromRows(
        {FastRow(0x1000, 0x100, kRegRsp, 8, -8, CfiRow::kRbpSaved, -16), f2, f3}));
  }
  SUBCASE("general row") {
    // The same rules as expressions: CFA = RSP+8; RA at CFA-8; RBP at
    // CFA-16; RSP = CFA (libdw's x86-64 default rule).
    GeneralRow g;
    std::vector<ExprOp> exprs = {
        {uint8_t(DW_OP_breg7), 8, 0}, {DW_OP_call_frame_cfa, 0, 0}, {DW_OP_lit8, 0, 0},
        {DW_OP_minus, 0, 0},          {DW_OP_call_frame_cfa, 0, 0}, {DW_OP_lit16, 0, 0},
        {DW_OP_minus, 0, 0},          {DW_OP_call_frame_cfa, 0, 0}, {DW_OP_stack_value, 0, 0}};
    g.cfa_begin = 0;
    g.cfa_len = 1;
    g.regs[kRegRa] = {RuleKind::kExpr, 1, 3};
    g.regs[kRegRbp] = {RuleKind::kExpr, 4, 3};
    g.regs[kRegRsp] = {RuleKind::kExpr, 7, 2};
    CfiRow f0 = FastRow(0x1000, 0x100, 0, 0, 0, CfiRow::kGeneral);
    f0.general = 0;
    check_callers(*CfiTable::FromRows({f0, f2, f3}, {g}, exprs));
  }
  SUBCASE("a caller whose CFA needs that RBP goes on from the popped value") {
    // f1 keeps a frame pointer: CFA = RBP+16. The slot below the copy was
    // popped: RBP holds f1's frame pointer again (CPython's eval loop under
    // _Py_Dealloc's `ret`).
    Stack fp;
    fp.Put(0x7000, 0x402051);  // f0's return address into f1
    fp.Put(0x7010, 0);         // f1's saved RBP (its caller's)
    fp.Put(0x7018, 0x403011);  // f1's return address into f3
    auto table =
        CfiTable::FromRows({FastRow(0x1000, 0x100, kRegRsp, 8, -8, CfiRow::kRbpSaved, -16),
                            FastRow(0x2000, 0x100, kRegRbp, 16, -8, CfiRow::kRbpSaved, -16), f3});
    FakeCode code;
    code.ranges.push_back({0x401000, 0x404000, table.get(), 0x400000});
    auto r = Unwind(Regs(0x401050, 0x7000, 0x7010), fp.Image(), code, Policy::kDwarf, out);
    CHECK(r.end == StackEnd::kComplete);
    REQUIRE(r.frames == 3);
    CHECK(out[1].pc == 0x402051);
    CHECK(out[2].pc == 0x403011);
    SUBCASE("but an RBP already unknown stays so") {
      Registers regs = Regs(0x401050, 0x7000, 0x7010);
      regs.Clear(kRegRbp);
      auto cut = Unwind(regs, fp.Image(), code, Policy::kDwarf, out);
      CHECK(cut.frames == 2);
      CHECK(cut.end != StackEnd::kComplete);
    }
  }
}

TEST_CASE("Unwinder: a caller whose CFA is RBX-based gets RBX from its callee's fast row") {
  // As glibc's lazy-binding trampoline _dl_runtime_resolve (f2: CFA = RBX+32
  // after it realigns RSP) and _dl_fixup (f1: a fast row that saves RBX).
  GeneralRow g;
  std::vector<ExprOp> exprs = {
      {uint8_t(DW_OP_breg3), 32, 0}, {DW_OP_call_frame_cfa, 0, 0}, {DW_OP_lit8, 0, 0},
      {DW_OP_minus, 0, 0},           {DW_OP_call_frame_cfa, 0, 0}, {DW_OP_stack_value, 0, 0}};
  g.cfa_begin = 0;
  g.cfa_len = 1;
  g.regs[kRegRa] = {RuleKind::kExpr, 1, 3};
  g.regs[kRegRsp] = {RuleKind::kExpr, 4, 2};
  CfiRow f2 = FastRow(0x2000, 0x100, 0, 0, 0, CfiRow::kGeneral);
  f2.general = 0;
  CfiRow f1 = FastRow(0x1000, 0x100, kRegRsp, 16, -8, CfiRow::kRbxSaved);
  f1.rbx_offset = -16;
  auto t = CfiTable::FromRows(
      {f1, f2, FastRow(0x3000, 0x100, kRegRsp, 8, -8, CfiRow::kRaUndefined)}, {g}, exprs);
  FakeCode code;
  code.ranges.push_back({0x401000, 0x404000, t.get(), 0x400000});
  Stack s;
  s.Put(0x7000, 0x7040);    // f1 saved the caller's RBX at CFA-16
  s.Put(0x7008, 0x402051);  // f1's return address into f2
  s.Put(0x7058, 0x403011);  // f2's return address at CFA-8 (CFA = 0x7040 + 32)
  std::vector<unwind::Frame> out(8);
  auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), code, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kComplete);
  REQUIRE(r.frames == 3);
  CHECK(out[2].pc == 0x403011);
}

TEST_CASE("Unwinder: an interrupted frame's return address in a register (DW_CFA_register)") {
  // glibc's __vfork pops its return address into RDI before the system
  // call: CFA = RSP, RA = RDI (libdw gives DW_OP_regx 5), nothing on the stack.
  GeneralRow g;
  std::vector<ExprOp> exprs = {{uint8_t(DW_OP_breg7), 0, 0}, {DW_OP_regx, 5, 0}};
  g.cfa_begin = 0;
  g.cfa_len = 1;
  g.regs[kRegRa] = {RuleKind::kExpr, 1, 1};
  CfiRow vfork = FastRow(0x1000, 0x100, 0, 0, 0, CfiRow::kGeneral);
  vfork.general = 0;
  auto t = CfiTable::FromRows({vfork, FastRow(0x3000, 0x100, kRegRsp, 8, -8, CfiRow::kRaUndefined)},
                              {g}, exprs);
  FakeCode code;
  code.ranges.push_back({0x401000, 0x404000, t.get(), 0x400000});
  Stack s;
  Registers regs = Regs(0x401008, 0x7000);
  regs.Set(5, 0x403011);
  std::vector<unwind::Frame> out(8);
  auto r = Unwind(regs, s.Image(), code, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kComplete);
  REQUIRE(r.frames == 2);
  CHECK(out[1].pc == 0x403011);
  // A caller (not interrupted) must have pushed its return address: the
  // same rules one frame up (with RBP, which a fast step keeps, as the
  // register) prove nothing.
  exprs[1].number = kRegRbp;
  vfork.start = 0x2000;
  auto t2 = CfiTable::FromRows({FastRow(0x1000, 0x100, kRegRsp, 8), vfork}, {g}, exprs);
  FakeCode code2;
  code2.ranges.push_back({0x401000, 0x404000, t2.get(), 0x400000});
  s.Put(0x7000, 0x402011);  // the leaf's return address into the "vfork" row
  r = Unwind(Regs(0x401008, 0x7000, 0x403011), s.Image(), code2, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kCfaOutsideCopy);
  CHECK(r.frames == 2);
}

TEST_CASE("Unwinder: a frame without CFI at the process's first stack pointer ends it whole") {
  // The dynamic loader's _start has no CFI; it calls _dl_start (f1) with the
  // stack pointer the kernel left: argc, argv, null, envp, null, auxv.
  auto t = CfiTable::FromRows({FastRow(0x1000, 0x100, kRegRsp, 8)});
  FakeCode code;
  code.ranges.push_back({0x401000, 0x406000, t.get(), 0x400000});
  Stack s;
  s.Put(0x7000, 0x405078);  // f1's return address into _start (no row)
  s.Put(0x7008, 2);         // argc, at f1's CFA
  s.Put(0x7010, 0x7f00);    // argv[0], argv[1]: strings above
  s.Put(0x7018, 0x7f10);
  s.Put(0x7020, 0);
  s.Put(0x7028, 0x7f20);  // envp[0]
  s.Put(0x7030, 0);
  s.Put(0x7038, 33);  // AT_SYSINFO_EHDR
  std::vector<unwind::Frame> out(8);
  auto r = Unwind(Regs(0x401050, 0x7000), s.Image(), code, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kComplete);
  CHECK(r.frames == 2);
  // Anything else there is not the entry: the stack ends for want of CFI.
  s.Put(0x7020, 0x7f30);  // no null after argv
  r = Unwind(Regs(0x401050, 0x7000), s.Image(), code, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kNoUnwindInfo);
  CHECK(r.frames == 2);
}

TEST_CASE("Unwinder: a general row (signal frame) restores registers from the copy") {
  // Like glibc's __restore_rt: CFA = *(RSP + 16); RA = *(RSP + 24); RSP = *(RSP + 32).
  GeneralRow g;
  std::vector<ExprOp> exprs = {{uint8_t(DW_OP_breg7), 16, 0},
                               {DW_OP_deref, 0, 0},
                               {uint8_t(DW_OP_breg7), 24, 0},
                               {uint8_t(DW_OP_breg7), 32, 0}};
  g.cfa_begin = 0;
  g.cfa_len = 2;
  for (auto& rule : g.regs) rule.kind = RuleKind::kUndefined;
  g.regs[kRegRa] = {RuleKind::kExpr, 2, 1};
  g.regs[kRegRsp] = {RuleKind::kExpr, 3, 1};
  CfiRow sig = FastRow(0x1000, 0x10, 0, 0, 0, CfiRow::kGeneral | CfiRow::kSignal);
  sig.general = 0;
  auto t = CfiTable::FromRows({sig, FastRow(0x2000, 0x100, kRegRsp, 16),
                               FastRow(0x3000, 0x100, kRegRsp, 8, -8, CfiRow::kRaUndefined)},
                              {g}, exprs);
  FakeCode code;
  code.ranges.push_back({0x401000, 0x404000, t.get(), 0x400000});
  Stack s;
  s.Put(0x7010, 0x7060);    // CFA
  s.Put(0x7018, 0x402040);  // the interrupted pc (exact)
  s.Put(0x7020, 0x7050);    // the interrupted RSP
  s.Put(0x7058, 0x403010);  // its return address (CFA 0x7060 - 8)
  std::vector<unwind::Frame> out(8);
  // The handler returned into the trampoline: pc = its first byte + 1.
  auto r = Unwind(Regs(0x401001, 0x7000), s.Image(), code, Policy::kDwarf, out);
  CHECK(r.end == StackEnd::kComplete);
  REQUIRE(r.frames == 3);
  CHECK(out[0].exact);
  CHECK(out[1].pc == 0x402040);
  CHECK(out[1].exact);  // after a signal frame the pc is the interrupted one, exact
  CHECK(out[2].pc == 0x403010);
  CHECK_FALSE(out[2].exact);
}

TEST_CASE("CfiTable: built from a real module's .eh_frame") {
  const char* split = std::getenv("FIXTURE_SPLIT");
  REQUIRE(split != nullptr);
  auto m = record::LoadModuleCfi(split);
  REQUIRE(m.ok());
  CHECK((*m)->table->has_cfi());
  CHECK((*m)->table->source() == ".eh_frame");
  auto libc = record::LoadModuleCfi("/lib/x86_64-linux-gnu/libc.so.6");
  REQUIRE(libc.ok());
  CHECK((*libc)->table->size() == 0);  // nothing decoded before a lookup
  auto none = record::LoadModuleCfi("/etc/hostname");
  CHECK_FALSE(none.ok());
}

// Two rows give the same rules (general rules compared by content).
bool SameRules(const CfiTable& a, const CfiRow& x, const CfiTable& b, const CfiRow& y) {
  if (x.cfa_reg != y.cfa_reg || x.cfa_offset != y.cfa_offset || x.ra_offset != y.ra_offset ||
      x.rbp_offset != y.rbp_offset || x.rbx_offset != y.rbx_offset || x.flags != y.flags)
    return false;
  if ((x.flags & CfiRow::kGeneral) == 0) return true;
  auto same_expr = [&](uint32_t xb, uint32_t xl, uint32_t yb, uint32_t yl) {
    auto p = a.expr(xb, xl), q = b.expr(yb, yl);
    return std::equal(p.begin(), p.end(), q.begin(), q.end(), [](const ExprOp& m, const ExprOp& n) {
      return m.atom == n.atom && m.number == n.number && m.number2 == n.number2;
    });
  };
  const GeneralRow &g = a.general(x.general), &h = b.general(y.general);
  if (!same_expr(g.cfa_begin, g.cfa_len, h.cfa_begin, h.cfa_len)) return false;
  for (int r = 0; r < kRegCount; ++r) {
    if (g.regs[r].kind != h.regs[r].kind || !same_expr(g.regs[r].expr_begin, g.regs[r].expr_len,
                                                       h.regs[r].expr_begin, h.regs[r].expr_len))
      return false;
  }
  return true;
}

TEST_CASE("CfiTable: FDEs decoded on demand give the rules of all decoded up front") {
  const char* split = std::getenv("FIXTURE_SPLIT");
  REQUIRE(split != nullptr);
  elf_version(EV_CURRENT);
  for (std::string path : {std::string(split), std::string("/lib/x86_64-linux-gnu/libc.so.6"),
                           std::string("/lib/x86_64-linux-gnu/libstdc++.so.6")}) {
    CAPTURE(path);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    REQUIRE(elf != nullptr);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) != nullptr && (shdr.sh_flags & SHF_EXECINSTR) != 0)
        ranges.emplace_back(shdr.sh_addr, shdr.sh_addr + shdr.sh_size);
    }
    auto whole = CfiTable::FromElf(elf, CfiTable::Decoding::kUpFront);
    auto lazy = CfiTable::FromElf(elf);
    elf_end(elf);  // the on-demand table keeps a copy, not the file
    close(fd);
    REQUIRE(whole.ok());
    REQUIRE(lazy.ok());
    const CfiTable &w = **whole, &l = **lazy;
    REQUIRE(w.size() > 5);
    CHECK(l.size() == 0);
    // Every address of every executable section.
    size_t covered = 0, general = 0, differ = 0;
    for (auto [lo, hi] : ranges) {
      for (uint64_t at = lo; at < hi; ++at) {
        const CfiRow *x = w.Find(at), *y = l.Find(at);
        if (x == nullptr || y == nullptr) {
          differ += x != y;
          continue;
        }
        ++covered;
        general += (x->flags & CfiRow::kGeneral) != 0;
        if (!SameRules(w, *x, l, *y) && differ++ < 3) MESSAGE("differs at 0x" << std::hex << at);
      }
    }
    CHECK(covered > 500);
    CHECK(differ == 0);
    if (path.find("libc.so") != std::string::npos) CHECK(general > 0);  // __restore_rt's rules
    MESSAGE(path << ": " << covered << " addresses, rows " << w.size() << " up front, " << l.size()
                 << " on demand");
  }
}

TEST_CASE("Unwinder: PLT stubs unwind through ld's CFA expression (real .eh_frame)") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  auto m = record::LoadModuleCfi(path);
  REQUIRE(m.ok());
  // The .plt section's address, from the section headers.
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t shstrndx;
  REQUIRE(elf_getshdrstrndx(elf, &shstrndx) == 0);
  uint64_t plt = 0, plt_size = 0, text = 0;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    std::string name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == ".plt") {
      plt = sh.sh_addr;
      plt_size = sh.sh_size;
    }
    if (name == ".text") text = sh.sh_addr;
  }
  elf_end(elf);
  close(fd);
  REQUIRE(plt_size >= 32);
  const uint64_t base = 0x555500000000;
  FakeCode code;
  code.ranges.push_back({base, base + 0x100000, (*m)->table.get(), base});
  // Inside the second PLT entry, before its push (pc & 15 < 11): CFA = RSP + 8.
  // After the push (pc & 15 >= 11): CFA = RSP + 16.
  for (uint64_t offset : {uint64_t(6), uint64_t(11)}) {
    Stack s;
    uint64_t ra_at = offset < 11 ? 0x7000 : 0x7008;
    s.Put(ra_at, base + text + 0x10);  // a return address into .text
    std::vector<unwind::Frame> out(4);
    auto r = Unwind(Regs(base + plt + 16 + offset, 0x7000), s.Image(), code, Policy::kDwarf, out);
    REQUIRE(r.frames >= 2);
    CHECK(out[1].pc == base + text + 0x10);
  }
}

TEST_CASE("DWARF expressions: arithmetic, comparisons, shifts, stack ops") {
  Registers regs;
  regs.Set(kRegRsp, 0x1000);
  regs.Set(kRegRa, 0x40103b);
  ReadWord no_read = [](uint64_t, uint64_t*) { return false; };
  ExprResult r;
  // ld's PLT expression: rsp + 8 + ((rip & 15) >= 11) << 3
  std::vector<ExprOp> plt = {{uint8_t(DW_OP_breg7), 8, 0},
                             {uint8_t(DW_OP_breg0 + 16), 0, 0},
                             {DW_OP_lit15, 0, 0},
                             {DW_OP_and, 0, 0},
                             {DW_OP_lit11, 0, 0},
                             {DW_OP_ge, 0, 0},
                             {DW_OP_lit3, 0, 0},
                             {DW_OP_shl, 0, 0},
                             {DW_OP_plus, 0, 0}};
  REQUIRE(EvaluateExpr(plt, regs, false, 0, no_read, &r));
  CHECK(r.value == 0x1010);
  std::vector<ExprOp> cmp = {{DW_OP_lit3, 0, 0}, {DW_OP_consts, uint64_t(-5), 0}, {DW_OP_lt, 0, 0}};
  REQUIRE(EvaluateExpr(cmp, regs, false, 0, no_read, &r));
  CHECK(r.value == 0);  // signed: 3 < -5 is false
  std::vector<ExprOp> stackops = {{DW_OP_lit1, 0, 0},
                                  {DW_OP_lit2, 0, 0},
                                  {DW_OP_swap, 0, 0},
                                  {DW_OP_minus, 0, 0},
                                  {DW_OP_neg, 0, 0}};
  REQUIRE(EvaluateExpr(stackops, regs, false, 0, no_read, &r));
  CHECK(r.value == uint64_t(-1));  // -(2 - 1)
  std::vector<ExprOp> div0 = {{DW_OP_lit1, 0, 0}, {DW_OP_lit0, 0, 0}, {DW_OP_div, 0, 0}};
  CHECK_FALSE(EvaluateExpr(div0, regs, false, 0, no_read, &r));
  std::vector<ExprOp> underflow = {{DW_OP_plus, 0, 0}};
  CHECK_FALSE(EvaluateExpr(underflow, regs, false, 0, no_read, &r));
  std::vector<ExprOp> unknown_reg = {{uint8_t(DW_OP_breg3), 0, 0}};
  CHECK_FALSE(EvaluateExpr(unknown_reg, regs, false, 0, no_read, &r));
}
