// Symbolize's stack rebuild: inlined calls become frames of their own, so
// the stack tree is rebuilt and every table that holds stacks (samples,
// off-CPU intervals, system calls) must follow it to the new nodes.
#include <doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "capture/reader.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

using namespace microscope;
using namespace microscope::capture;

namespace {

// [start, start + size) of function `name` in `path`, from nm.
bool FunctionRange(const std::string& path, const std::string& name, uint64_t* start,
                   uint64_t* size) {
  FILE* p = popen(("nm -S " + path + " | awk '$4==\"" + name + "\"{print $1, $2}'").c_str(), "r");
  char buf[128] = {};
  bool ok = fgets(buf, sizeof(buf), p) != nullptr &&
            sscanf(buf, "%lx %lx", reinterpret_cast<unsigned long*>(start),
                   reinterpret_cast<unsigned long*>(size)) == 2;
  pclose(p);
  return ok;
}

// An address of `name` whose source stack has `inlined` inlined calls above
// the function itself (0: none), or 0 when there is none.
uint64_t AddressIn(const std::string& path, const symbols::LineTable& lines,
                   const std::string& name, size_t inlined) {
  uint64_t start = 0, size = 0;
  if (!FunctionRange(path, name, &start, &size)) return 0;
  std::vector<symbols::SourceFrame> frames;
  for (uint64_t a = start; a < start + size; ++a) {
    lines.Lookup(a, &frames);
    if (frames.size() == inlined + 1) return a;
  }
  return 0;
}

// The frames of `stack`, outermost first.
std::vector<FrameId> Chain(const Capture& c, StackId stack) {
  std::vector<FrameId> out;
  for (StackId s = stack; s != kNone; s = c.stacks.parent[s])
    out.insert(out.begin(), c.stacks.frame[s]);
  return out;
}

std::vector<FrameId> WithoutInline(const Capture& c, std::vector<FrameId> chain) {
  std::erase_if(chain, [&](FrameId f) { return c.frames[f].kind == FrameKind::kInline; });
  return chain;
}

std::string FunctionOf(const Capture& c, FrameId f) {
  return c.frames[f].function == kNone ? "" : c.str(c.functions[c.frames[f].function].name);
}

struct Fixture {
  Capture capture;
  FrameId main_frame = 0, leaf_hot = 0, run_recurse = 0;
  // Every stack-holding row, as (table, row) -> chain of frames before symbolize.
  std::vector<std::vector<FrameId>> samples, off_cpu, syscalls;
};

// A capture of the unwind fixture, recorded with --symbolize later: native
// frames (file offsets, no names) of main, run_recurse, and leaf_hot at an
// address where burn_units is inlined. The stack tree is laid out so that
// the node each table uses moves when leaf_hot's inlined call is inserted,
// and no table's stale node would name the same chain:
//   0 main   1 main>leaf_hot   2 main>run_recurse   3 main>run_recurse>leaf_hot
// samples use 1 and 3, off-CPU 2, system calls 3 and 2.
Fixture MakeFixture(const std::string& path) {
  Fixture fx;
  Capture& c = fx.capture;
  auto lines = symbols::OpenLineTable(path);
  REQUIRE(lines.ok());
  auto layout = symbols::ReadElfLayout(path);
  REQUIRE(layout.ok());
  uint64_t main_addr = AddressIn(path, **lines, "main", 0);
  uint64_t recurse_addr = AddressIn(path, **lines, "run_recurse", 0);
  uint64_t hot_addr = AddressIn(path, **lines, "leaf_hot", 1);
  REQUIRE(main_addr != 0);
  REQUIRE(recurse_addr != 0);
  REQUIRE(hot_addr != 0);
  auto offset = [&](uint64_t vaddr) {
    for (const symbols::LoadSegment& s : layout->loads) {
      if (vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz) return vaddr - s.vaddr + s.offset;
    }
    FAIL("no segment holds 0x" << std::hex << vaddr);
    return uint64_t(0);
  };
  c.strings = {path, "unwind", "main"};
  Module mod;
  mod.path = 0;
  mod.build_id = layout->build_id;
  REQUIRE(!mod.build_id.empty());
  for (const symbols::LoadSegment& s : layout->loads)
    mod.segments.push_back({s.offset, s.vaddr, s.filesz});
  c.modules.push_back(mod);
  c.processes.push_back({100, 1, 1, 0, 10, 1000});
  c.threads.push_back({100, 0, 2, 10, 1000});
  c.mappings.push_back({0, 0, 0x400000, 0x500000, 0, 10, 1000});
  c.frames = {{FrameKind::kNative, 0, offset(main_addr)},
              {FrameKind::kNative, 0, offset(hot_addr)},
              {FrameKind::kNative, 0, offset(recurse_addr)}};
  fx.main_frame = 0;
  fx.leaf_hot = 1;
  fx.run_recurse = 2;
  c.stacks.parent = {kNone, 0, 0, 2};
  c.stacks.frame = {0, 1, 2, 1};
  for (StackId s : {StackId(1), StackId(3), kNone, StackId(1)}) {
    c.samples.time.push_back(100 + c.samples.size());
    c.samples.thread.push_back(0);
    c.samples.stack.push_back(s);
    c.samples.weight.push_back(1000);
    c.samples.end.push_back(s == kNone ? StackEnd::kEmpty : StackEnd::kFramePointerEnd);
  }
  for (StackId s : {StackId(2), kNone}) {
    OffCpu& o = c.off_cpu;
    o.start.push_back(200 + 10 * o.size());
    o.end.push_back(205 + 10 * o.size());
    o.thread.push_back(0);
    o.stack.push_back(s);
    o.stack_end.push_back(s == kNone ? StackEnd::kEmpty : StackEnd::kFramePointerEnd);
    o.state.push_back(OffCpuState::kSleeping);
    o.waker_tid.push_back(0);
    o.waker_name.push_back(kNone);
    o.flags.push_back(0);
  }
  c.settings.SetSource("off-cpu", "on");
  for (StackId s : {StackId(3), StackId(2), kNone}) {
    Syscalls& y = c.syscalls;
    y.time.push_back(300 + y.size());
    y.duration.push_back(10);
    y.thread.push_back(0);
    y.nr.push_back(0);
    y.ret.push_back(0);
    y.arg0.push_back(0);
    y.arg1.push_back(0);
    y.arg2.push_back(0);
    y.stack.push_back(s);
  }
  c.settings.symbols = "later";
  REQUIRE(ValidateCapture(c).ok());
  for (size_t i = 0; i < c.samples.size(); ++i) fx.samples.push_back(Chain(c, c.samples.stack[i]));
  for (size_t i = 0; i < c.off_cpu.size(); ++i) fx.off_cpu.push_back(Chain(c, c.off_cpu.stack[i]));
  for (size_t i = 0; i < c.syscalls.size(); ++i)
    fx.syscalls.push_back(Chain(c, c.syscalls.stack[i]));
  return fx;
}

// Each row's stack, after symbolize, is its old chain with burn_units
// inserted right below (toward the callee) every leaf_hot frame, and
// nothing else; rows without a stack keep none.
void CheckRows(const Fixture& fx, const char* table,
               const std::vector<std::vector<FrameId>>& before, auto stack_at) {
  const Capture& c = fx.capture;
  for (size_t i = 0; i < before.size(); ++i) {
    CAPTURE(table);
    CAPTURE(i);
    StackId s = stack_at(i);
    if (before[i].empty()) {
      CHECK(s == kNone);
      continue;
    }
    REQUIRE(s < c.stacks.size());
    std::vector<FrameId> now = Chain(c, s);
    CHECK(WithoutInline(c, now) == before[i]);
    for (size_t k = 0; k < now.size(); ++k) {
      if (now[k] != fx.leaf_hot) continue;
      REQUIRE(k + 1 < now.size());
      CHECK(c.frames[now[k + 1]].kind == FrameKind::kInline);
      CHECK(FunctionOf(c, now[k + 1]) == "burn_units");
    }
  }
}

void CheckAllTables(const Fixture& fx) {
  const Capture& c = fx.capture;
  CHECK(ValidateCapture(c).ok());
  CheckRows(fx, "samples", fx.samples, [&](size_t i) { return c.samples.stack[i]; });
  CheckRows(fx, "off_cpu", fx.off_cpu, [&](size_t i) { return c.off_cpu.stack[i]; });
  CheckRows(fx, "syscalls", fx.syscalls, [&](size_t i) { return c.syscalls.StackAt(i); });
}

}  // namespace

TEST_CASE(
    "Symbolize: every table's stacks follow the rebuilt tree when inlined calls are inserted") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  Fixture fx = MakeFixture(path);
  const size_t nodes_before = fx.capture.stacks.size();
  auto summary = symbols::Symbolize(&fx.capture, symbols::SymbolizeOptions{});
  REQUIRE(summary.ok());
  REQUIRE(summary->modules.size() == 1);
  CHECK(summary->modules[0].problems.empty());
  CHECK(summary->modules[0].inline_frames > 0);
  // Inlined calls were inserted: the tree has new nodes, so any table left
  // on the old node ids would now point at other chains.
  CHECK(fx.capture.stacks.size() > nodes_before);
  CHECK(FunctionOf(fx.capture, fx.leaf_hot) == "leaf_hot");
  CHECK(FunctionOf(fx.capture, fx.run_recurse) == "run_recurse");
  CheckAllTables(fx);
}

TEST_CASE("Symbolize: symbolizing again rebuilds nothing new and keeps every table's stacks") {
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  Fixture fx = MakeFixture(path);
  REQUIRE(symbols::Symbolize(&fx.capture, symbols::SymbolizeOptions{}).ok());
  const size_t nodes = fx.capture.stacks.size();
  const size_t frames = fx.capture.frames.size();
  auto again = symbols::Symbolize(&fx.capture, symbols::SymbolizeOptions{});
  REQUIRE(again.ok());
  CHECK(again->changed == 0);
  CHECK(fx.capture.stacks.size() == nodes);
  CHECK(fx.capture.frames.size() == frames);
  CheckAllTables(fx);
}

TEST_CASE("Symbolize: a file without DWARF names frames from its symbols and is no problem") {
  // Decided by kNotFound from the DWARF reader, not by the message's text.
  const char* path = std::getenv("FIXTURE_UNWIND");
  REQUIRE(path != nullptr);
  std::string stripped = "/tmp/microscope-symbolize-nodwarf-" + std::to_string(getpid());
  REQUIRE(std::system(("objcopy --strip-debug " + std::string(path) + " " + stripped).c_str()) ==
          0);
  Fixture fx = MakeFixture(path);
  fx.capture.strings[fx.capture.modules[0].path] = stripped;
  auto summary = symbols::Symbolize(&fx.capture, symbols::SymbolizeOptions{});
  std::remove(stripped.c_str());
  REQUIRE(summary.ok());
  REQUIRE(summary->modules.size() == 1);
  const symbols::ModuleSummary& m = summary->modules[0];
  CHECK(m.problems.empty());
  CHECK(m.named == m.frames);
  CHECK(m.with_lines == 0);
  CHECK(m.inline_frames == 0);
  CHECK(fx.capture.problems.empty());
}
