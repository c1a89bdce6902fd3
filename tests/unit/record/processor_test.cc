#include <doctest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "capture/reader.h"
#include "src/record/processor.h"
#include "src/record/pump.h"
#include "src/record/user_regs.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/symbolizer.h"
#include "tests/unit/record/record_builder.h"

using namespace microscope;
using namespace microscope::record;
using namespace microscope::testing;
using capture::kNone;

namespace {

capture::Capture Run(const std::vector<std::vector<uint8_t>>& records, bool symbolize = false) {
  std::vector<uint8_t> arena;
  for (const auto& r : records) arena.insert(arena.end(), r.begin(), r.end());
  Processor p(Processor::Options{});
  ProcessArenas({arena}, CollectorLayout(), &p);
  capture::Capture c = p.Finish(1000000);
  if (symbolize) {
    microscope::symbols::SymbolizeOptions how;
    how.this_host = true;
    REQUIRE(microscope::symbols::Symbolize(&c, how).ok());
  }
  return c;
}

// The frames of sample i, leaf first.
std::vector<capture::Frame> FramesOf(const capture::Capture& c, size_t i) {
  std::vector<capture::Frame> out;
  for (uint32_t n = c.samples.stack[i]; n != kNone; n = c.stacks.parent[n]) {
    out.push_back(c.frames[c.stacks.frame[n]]);
  }
  return out;
}

std::string ModulePath(const capture::Capture& c, const capture::Frame& f) {
  return f.module == kNone ? "" : c.str(c.modules[f.module].path);
}

}  // namespace

TEST_CASE("Processor: addresses bind to the mapping in force at the sample's time") {
  auto c = Run({
      Mmap2Record(10, 0x400000, 0x10000, 0x1000, "/bin/old", 10),
      SampleRecord(10, 10, 20, {record::kContextUser, 0x400100}),
      // Replaced by a new mapping over the same range.
      Mmap2Record(10, 0x400000, 0x10000, 0, "/lib/new.so", 30),
      SampleRecord(10, 10, 40, {record::kContextUser, 0x400100}),
      // exec drops the whole address space.
      CommRecord(10, 10, "newprog", true, 50),
      SampleRecord(10, 10, 60, {record::kContextUser, 0x400100}),
  });
  REQUIRE(c.samples.size() == 3);
  auto f0 = FramesOf(c, 0);
  CHECK(ModulePath(c, f0[0]) == "/bin/old");
  CHECK(f0[0].address == 0x1100);  // file offset: 0x100 into a mapping at offset 0x1000
  auto f1 = FramesOf(c, 1);
  CHECK(ModulePath(c, f1[0]) == "/lib/new.so");
  CHECK(f1[0].address == 0x100);
  auto f2 = FramesOf(c, 2);
  CHECK(f2[0].kind == capture::FrameKind::kUnmapped);
  CHECK(c.str(c.processes[0].command) == "newprog");
  REQUIRE(c.problems.size() == 1);
  CHECK(c.str(c.problems[0].kind) == "user address outside any known mapping");
}

TEST_CASE("Processor: a partial remap keeps the untouched parts of a mapping") {
  auto c = Run({
      Mmap2Record(10, 0x400000, 0x3000, 0, "/bin/a", 10),
      Mmap2Record(10, 0x401000, 0x1000, 0, "/bin/b", 20),
      SampleRecord(10, 10, 30, {record::kContextUser, 0x400010, 0x401010, 0x402010}),
  });
  auto f = FramesOf(c, 0);
  REQUIRE(f.size() == 3);
  CHECK(ModulePath(c, f[0]) == "/bin/a");
  CHECK(f[0].address == 0x10);
  CHECK(ModulePath(c, f[1]) == "/bin/b");
  CHECK(f[1].address == 0xf);  // caller frame: return address - 1
  CHECK(ModulePath(c, f[2]) == "/bin/a");
  CHECK(f[2].address == 0x200f);  // the right-hand piece keeps its file offset
}

TEST_CASE("Processor: fork copies mappings; threads get names; events arrive out of order") {
  auto c = Run({
      // Records from two CPUs' rings interleave out of time order: the
      // processor must sort them.
      SampleRecord(11, 11, 50, {record::kContextUser, 0x400100}),
      Mmap2Record(10, 0x400000, 0x10000, 0, "/bin/parent", 10),
      CommRecord(10, 10, "parent", false, 11), TaskRecord(kRecordFork, 11, 10, 11, 10, 20),
      TaskRecord(kRecordFork, 10, 10, 12, 10, 25), CommRecord(10, 12, "helper", false, 26),
      SampleRecord(10, 12, 60, {record::kContextUser, 0x400200}),
      TaskRecord(kRecordExit, 10, 10, 12, 10, 70),
      TaskRecord(kRecordExit, 10, 10, 12, 10, 70),  // duplicate delivery
  });
  REQUIRE(c.samples.size() == 2);
  REQUIRE(c.processes.size() == 2);
  CHECK(c.processes[1].pid == 11);
  CHECK(c.processes[1].parent_pid == 10);
  auto f = FramesOf(c, 0);
  CHECK(ModulePath(c, f[0]) == "/bin/parent");  // the child binds through the copied mapping
  const auto& t = c.threads[c.samples.thread[1]];
  CHECK(t.tid == 12);
  CHECK(c.str(t.name) == "helper");
  CHECK(t.end_time == 70);
}

TEST_CASE("Processor: stacks share prefixes; end reasons are typed") {
  auto c = Run({
      Mmap2Record(10, 0x400000, 0x10000, 0, "/bin/a", 1),
      SampleRecord(10, 10, 2, {record::kContextUser, 0x400010, 0x400020, 0x400030}),
      SampleRecord(10, 10, 3, {record::kContextUser, 0x400040, 0x400020, 0x400030}),
      SampleRecord(10, 10, 4, {uint64_t(-128), 0xffffffff81000000}),
      SampleRecord(10, 10, 5, {}),
  });
  CHECK(c.stacks.size() == 4 + 1);  // 030, 030>020, >010, >040, and one kernel frame
  CHECK(c.samples.end[0] == capture::StackEnd::kFramePointerEnd);
  CHECK(c.samples.end[2] == capture::StackEnd::kKernelOnly);
  CHECK(c.samples.end[3] == capture::StackEnd::kEmpty);
  CHECK(c.samples.stack[3] == kNone);
}

TEST_CASE("Processor: frames are named from the module's symbol table, checked by build ID") {
  const char* split = std::getenv("FIXTURE_SPLIT");
  REQUIRE_MESSAGE(split != nullptr, "FIXTURE_SPLIT names the split fixture");
  auto image = symbols::LoadElfImage(split);
  REQUIRE(image.ok());
  // Address of hot() from nm, the peer that reads the same symbol table.
  std::string cmd = std::string("nm ") + split + " | awk '$3==\"hot\"{print $1}'";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[64] = {};
  REQUIRE(fgets(buf, sizeof(buf), p) != nullptr);
  pclose(p);
  uint64_t hot = std::strtoull(buf, nullptr, 16);
  // Map the file at 0x555500000000 with the whole file at offset 0.
  const uint64_t base = 0x555500000000;
  uint64_t offset = 0;
  for (const auto& s : (*image)->loads) {
    if (hot >= s.vaddr && hot < s.vaddr + s.filesz) offset = hot - s.vaddr + s.offset;
  }
  REQUIRE(offset != 0);
  auto good = Run({Mmap2Record(10, base, 0x100000, 0, split, 1, (*image)->build_id),
                   SampleRecord(10, 10, 2, {record::kContextUser, base + offset + 2})},
                  /*symbolize=*/true);
  auto f = FramesOf(good, 0);
  REQUIRE(f[0].function != kNone);
  CHECK(good.str(good.functions[f[0].function].name) == "hot");
  CHECK(good.problems.empty());

  auto decoy = Run({Mmap2Record(10, base, 0x100000, 0, split, 1, {1, 2, 3, 4}),
                    SampleRecord(10, 10, 2, {record::kContextUser, base + offset + 2})},
                   /*symbolize=*/true);
  CHECK(FramesOf(decoy, 0)[0].function == kNone);
  REQUIRE(decoy.problems.size() == 1);
  CHECK(decoy.str(decoy.problems[0].kind) == "build ID mismatch, frames unnamed");
}

TEST_CASE("Pump: only records up to the watermark are processed, the rest wait") {
  std::vector<std::vector<uint8_t>> arenas(2);
  auto put = [](std::vector<uint8_t>& a, const std::vector<uint8_t>& r) {
    a.insert(a.end(), r.begin(), r.end());
  };
  put(arenas[0], Mmap2Record(10, 0x400000, 0x1000, 0, "/bin/a", 5));
  put(arenas[0], SampleRecord(10, 10, 30, {record::kContextUser, 0x400010}));
  put(arenas[1], SampleRecord(10, 10, 20, {record::kContextUser, 0x400020}));
  put(arenas[1], SampleRecord(10, 10, 40, {record::kContextUser, 0x400030}));
  Processor::Options o;
  Processor p(o);
  std::vector<RingArena> rings = Rings(arenas);
  PumpArenas(&rings, CollectorLayout(), 30, &p);
  CHECK(p.sample_count() == 2);  // t=20 and t=30
  CHECK(rings[0].empty());
  CHECK_FALSE(rings[1].empty());  // t=40 waits
  PumpArenas(&rings, CollectorLayout(), UINT64_MAX, &p);
  CHECK(rings[1].empty());
  auto c = p.Finish(100);
  REQUIRE(c.samples.size() == 3);
  CHECK(c.samples.time == std::vector<uint64_t>{20, 30, 40});
  CHECK(FramesOf(c, 0)[0].address == 0x20);  // the mapping at t=5 was processed first
}

TEST_CASE("Processor: lost records, lost samples and throttling are counted") {
  RecordBuilder lost(kRecordLost);
  lost.Put<uint64_t>(7).Put<uint64_t>(42).Trailer(10, 10, 5);
  RecordBuilder lost_samples(kRecordLostSamples);
  lost_samples.Put<uint64_t>(3).Trailer(10, 10, 6);
  RecordBuilder throttle(kRecordThrottle);
  throttle.Put<uint64_t>(7).Put<uint64_t>(7).Put<uint64_t>(0).Trailer(10, 10, 7);
  RecordBuilder unthrottle(kRecordUnthrottle);
  unthrottle.Put<uint64_t>(8).Put<uint64_t>(7).Put<uint64_t>(0).Trailer(10, 10, 8);
  auto c = Run({lost.Finish(), lost_samples.Finish(), throttle.Finish(), unthrottle.Finish(),
                SampleRecord(10, 10, 9, {record::kContextUser, 0x1})});
  CHECK(c.settings.lost_records == 42);
  CHECK(c.settings.lost_samples == 3);
  CHECK(c.settings.throttles == 1);
  CHECK(c.settings.unthrottles == 1);
}

TEST_CASE("Processor: the process ends with its last thread, not its leader; pids are reused") {
  auto c = Run({
      Mmap2Record(10, 0x400000, 0x10000, 0, "/bin/a", 1),
      CommRecord(10, 10, "a", false, 2),
      TaskRecord(kRecordFork, 10, 10, 11, 10, 3),
      TaskRecord(kRecordExit, 10, 10, 10, 10, 4),                 // the leader leaves first
      SampleRecord(10, 11, 5, {record::kContextUser, 0x400010}),  // its thread still runs in /bin/a
      TaskRecord(kRecordExit, 10, 10, 11, 10, 6),
      // pid 10 is reused by a child of pid 1 that maps another program.
      TaskRecord(kRecordFork, 10, 1, 10, 1, 7),
      Mmap2Record(10, 0x400000, 0x10000, 0, "/bin/b", 8),
      SampleRecord(10, 10, 9, {record::kContextUser, 0x400010}),
  });
  REQUIRE(c.samples.size() == 2);
  CHECK(ModulePath(c, FramesOf(c, 0)[0]) == "/bin/a");
  CHECK(ModulePath(c, FramesOf(c, 1)[0]) == "/bin/b");
  REQUIRE(c.processes.size() == 2);
  CHECK(c.processes[0].end_time == 6);
  CHECK(c.processes[1].parent_pid == 1);
  CHECK(c.threads[c.samples.thread[1]].process == 1);
}

TEST_CASE("Processor: a record processed late is put back in time order") {
  std::vector<std::vector<uint8_t>> arenas(1);
  auto put = [&](const std::vector<uint8_t>& r) {
    arenas[0].insert(arenas[0].end(), r.begin(), r.end());
  };
  put(SampleRecord(10, 10, 50, {record::kContextUser, 0x1}));
  Processor::Options o;
  Processor p(o);
  std::vector<RingArena> rings = Rings(arenas);
  PumpArenas(&rings, CollectorLayout(), 60, &p);
  // Stamped before the last watermark, drained a round later.
  rings[0].Append(SampleRecord(10, 10, 40, {record::kContextUser, 0x2}));
  PumpArenas(&rings, CollectorLayout(), UINT64_MAX, &p);
  auto c = p.Finish(100);
  CHECK(c.samples.time == std::vector<uint64_t>{40, 50});
  CHECK(capture::ValidateCapture(c).ok());
  bool counted = false;
  for (const auto& pr : c.problems)
    counted |= c.str(pr.kind) == "records arrived late and were reordered";
  CHECK(counted);
}

// Process 10 execs `comm` at time 200.
static void Exec(Processor* p, const char* comm) {
  Event exec;
  exec.type = EventType::kComm;
  exec.pid = exec.tid = 10;
  exec.time = 200;
  exec.comm = comm;
  exec.exec = true;
  p->Process(exec);
}

TEST_CASE("Processor: a sample inside execve names the replaced program's pc (in-exec)") {
  Processor::Options o;
  o.call_graph = Processor::CallGraph::kDwarf;
  Processor p(o);
  p.AddProcess(10, 1, "old", 0);
  p.AddMapping(10, 0x7f0000000000, 0x7f0000010000, 0, "/nonexistent/old/libc.so.6", {}, 0);
  Exec(&p, "new");
  Event mmap;
  mmap.type = EventType::kMmap2;
  mmap.pid = mmap.tid = 10;
  mmap.time = 210;
  mmap.addr = 0x550000000000;
  mmap.len = 0x10000;
  mmap.prot = 5;  // PROT_READ | PROT_EXEC
  mmap.filename = "/nonexistent/new/prog";
  p.Process(mmap);
  // In the kernel (a kernel frame), with the old program's registers and
  // no stack: as a sample inside execve is.
  const uint64_t chain[] = {kContextKernel, 0xffffffff81000010ull};
  auto sample = [&](uint64_t time, uint64_t pc) {
    static uint64_t regs[kUserRegCount];
    regs[8] = pc;              // IP
    regs[7] = 0x7ffd00000000;  // SP
    Event s;
    s.type = EventType::kSample;
    s.pid = s.tid = 10;
    s.time = time;
    s.period = 1;
    s.callchain = std::span(reinterpret_cast<const uint8_t*>(chain), sizeof(chain));
    s.regs_abi = 2;  // PERF_SAMPLE_REGS_ABI_64
    s.regs = std::span(reinterpret_cast<const uint8_t*>(regs), sizeof(regs));
    p.Process(s);
  };
  sample(300, 0x7f0000001234);  // inside execve
  sample(400, 0x550000000100);  // the new program has run
  sample(500, 0x7f0000001234);  // the old range now names nothing
  capture::Capture c = p.Finish(1000);
  REQUIRE(c.samples.size() == 3);
  CHECK(c.samples.end[0] == capture::StackEnd::kInExec);
  auto f = FramesOf(c, 0);
  REQUIRE(f.size() == 2);
  CHECK(f[0].kind == capture::FrameKind::kKernel);  // leaf first: the kernel's execve
  CHECK(ModulePath(c, f[1]) == "/nonexistent/old/libc.so.6");
  CHECK(f[1].address == 0x1234);
  CHECK(c.samples.end[2] == capture::StackEnd::kUnmappedPc);
}

TEST_CASE("Processor: inside the launched program's exec, the launcher's pc is no frame") {
  // A launched program's events start at its exec: the image it replaces
  // (microscope's own child) was never recorded. A storm of 501 processes
  // here had 1-2 such samples counted unmapped-pc, each with a problem.
  Processor::Options o;
  o.call_graph = Processor::CallGraph::kDwarf;
  Processor p(o);
  p.AddProcess(10, 1, "launched", 0);
  Exec(&p, "prog");
  const uint64_t chain[] = {kContextKernel, 0xffffffff81000010ull};
  static uint64_t regs[kUserRegCount];
  regs[8] = 0x7f3e7a8f2ad7;  // IP: the launcher's execve in its libc
  regs[7] = 0x7ffd00000000;  // SP
  Event s;
  s.type = EventType::kSample;
  s.pid = s.tid = 10;
  s.time = 300;
  s.period = 1;
  s.callchain = std::span(reinterpret_cast<const uint8_t*>(chain), sizeof(chain));
  s.regs_abi = 2;  // PERF_SAMPLE_REGS_ABI_64
  s.regs = std::span(reinterpret_cast<const uint8_t*>(regs), sizeof(regs));
  p.Process(s);
  capture::Capture c = p.Finish(1000);
  REQUIRE(c.samples.size() == 1);
  CHECK(c.samples.end[0] == capture::StackEnd::kInExec);
  auto f = FramesOf(c, 0);
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind == capture::FrameKind::kKernel);
  CHECK(c.problems.empty());
}

TEST_CASE("Processor: an always-on recording's dictionaries follow its window, not its age") {
  // A program that starts a thread every 10 ms and a process every 100 ms,
  // each sampled once at an address of its own, recorded with a 1 s
  // rolling window for 20 windows: the window is evicted every second.
  constexpr uint64_t kMs = 1'000'000;
  Processor p(Processor::Options{});
  p.AddProcess(10, 1, "churn", 1);
  p.AddThread(10, 10, "churn", 1);
  std::vector<uint8_t> arena;
  auto add = [&arena](const std::vector<uint8_t>& r) {
    arena.insert(arena.end(), r.begin(), r.end());
  };
  add(Mmap2Record(10, 0x400000, 0x100000, 0, "/bin/churn", 1));
  ProcessArenas({arena}, CollectorLayout(), &p);
  uint32_t next_tid = 1000;
  size_t most_threads = 0, most_processes = 0, most_mappings = 0, most_frames = 0, most_stacks = 0;
  for (uint64_t window = 0; window < 20; ++window) {
    arena.clear();
    for (uint64_t tick = 0; tick < 100; ++tick) {
      const uint64_t t = (window * 1000 + tick * 10 + 2) * kMs;
      const uint32_t tid = next_tid++;
      const uint64_t pc = 0x400000 + (tid % 65536) * 16;  // new code each time
      add(TaskRecord(kRecordFork, 10, 10, tid, 10, t));
      add(SampleRecord(10, tid, t + 1 * kMs, {record::kContextUser, pc, 0x400008}));
      add(TaskRecord(kRecordExit, 10, 10, tid, 10, t + 2 * kMs));
      if (tick % 10 != 0) continue;
      const uint32_t pid = next_tid++;
      add(TaskRecord(kRecordFork, pid, 10, pid, 10, t + 3 * kMs));
      add(CommRecord(pid, pid, "child", true, t + 4 * kMs));
      add(Mmap2Record(pid, 0x400000, 0x100000, 0, "/bin/churn", t + 4 * kMs));
      add(SampleRecord(pid, pid, t + 5 * kMs, {record::kContextUser, pc + 4, 0x400008}));
      add(TaskRecord(kRecordExit, pid, pid, pid, pid, t + 6 * kMs));
    }
    ProcessArenas({arena}, CollectorLayout(), &p);
    const uint64_t now = (window + 1) * 1000 * kMs;
    p.Evict(now - 1000 * kMs);
    const capture::Capture& live = p.capture();
    most_threads = std::max(most_threads, live.threads.size());
    most_processes = std::max(most_processes, live.processes.size());
    most_mappings = std::max(most_mappings, live.mappings.size());
    most_frames = std::max(most_frames, live.frames.size());
    most_stacks = std::max(most_stacks, live.stacks.size());
    // The window still reads whole: its samples, their threads and processes.
    capture::Capture part = p.Part(now - 1000 * kMs, now, std::nullopt);
    REQUIRE(capture::ValidateCapture(part).ok());
    CHECK(part.samples.size() == 110);
  }
  // 2,000 threads, 200 processes and 2,200 distinct frames were made: the
  // live dictionaries hold at most two windows' worth (the window and what
  // came since its last eviction), with the first thread and process.
  CHECK(most_threads <= 2 * 110 + 1);
  CHECK(most_processes <= 2 * 10 + 1);
  CHECK(most_mappings <= 2 * 10 + 1);
  CHECK(most_frames <= 2 * 220 + 1);
  CHECK(most_stacks <= 2 * 2 * 220 + 1);
}

TEST_CASE("Processor: a runtime's thread name stays; threads it starts take the system's") {
  Processor p(Processor::Options{});
  auto arena = [](const std::vector<std::vector<uint8_t>>& records) {
    std::vector<uint8_t> out;
    for (const auto& r : records) out.insert(out.end(), r.begin(), r.end());
    return out;
  };
  ProcessArenas({arena({CommRecord(10, 10, "python3.13", false, 5)})}, CollectorLayout(), &p);
  p.NameThread(10, 10, 6, "MainThread");
  ProcessArenas(
      {arena({TaskRecord(kRecordFork, 10, 10, 13, 10, 20), CommRecord(10, 10, "py-main", false, 30),
              TaskRecord(kRecordFork, 10, 10, 14, 10, 40)})},
      CollectorLayout(), &p);
  capture::Capture c = p.Finish(1000000);
  std::map<int32_t, std::string> names;
  for (const auto& t : c.threads) names[t.tid] = c.str(t.name);
  CHECK(names[10] == "MainThread");  // a later COMM record does not rename it
  CHECK(names[13] == "python3.13");  // the system's name when it started
  CHECK(names[14] == "py-main");
}

TEST_CASE("Processor: an exec processed after the runtime named the new program's thread") {
  auto arena = [](const std::vector<std::vector<uint8_t>>& records) {
    std::vector<uint8_t> out;
    for (const auto& r : records) out.insert(out.end(), r.begin(), r.end());
    return out;
  };
  // The runtime read the name at 50 from the program exec'd at 40, whose
  // COMM record was still in the ring: the name stays.
  Processor p(Processor::Options{});
  p.NameThread(10, 10, 50, "MainThread");
  ProcessArenas({arena({CommRecord(10, 10, "python3.11", true, 40)})}, CollectorLayout(), &p);
  capture::Capture c = p.Finish(1000000);
  REQUIRE(c.threads.size() == 1);
  CHECK(c.str(c.threads[0].name) == "MainThread");
  // An exec after the naming is another program: the system's name.
  Processor q(Processor::Options{});
  q.NameThread(10, 10, 50, "MainThread");
  ProcessArenas({arena({CommRecord(10, 10, "sh", true, 60)})}, CollectorLayout(), &q);
  capture::Capture d = q.Finish(1000000);
  REQUIRE(d.threads.size() == 1);
  CHECK(d.str(d.threads[0].name) == "sh");
}

TEST_CASE(
    "Processor: lost records, throttling and the budget's steps are gaps, each with its cause") {
  auto lost = [](uint64_t n, uint64_t time, uint32_t cpu) {
    RecordBuilder b(record::kRecordLost);
    b.Put<uint64_t>(7).Put<uint64_t>(n).Trailer(10, 10, time, cpu);
    return b.Finish();
  };
  auto throttle = [](uint32_t type, uint64_t time) {
    RecordBuilder b(type);
    b.Put<uint64_t>(time).Put<uint64_t>(7).Put<uint64_t>(7).Trailer(10, 11, time, 0);
    return b.Finish();
  };
  std::vector<uint8_t> arena;
  for (const auto& r :
       {SampleRecord(10, 10, 100, {record::kContextUser, 0x400100}), lost(5, 300, 0),
        lost(2, 350, 1),  // CPU 1's first record: its window starts with the recording
        throttle(record::kRecordThrottle, 400), throttle(record::kRecordUnthrottle, 450),
        throttle(record::kRecordThrottle, 500)}) {  // never unthrottled: to the end
    arena.insert(arena.end(), r.begin(), r.end());
  }
  Processor p(Processor::Options{});
  p.SetSampleScale(200, 4);
  p.SetSampleScale(250, 4);  // the same level again: the same gap
  p.SetSampleScale(600, 1);
  p.SetSampleScale(700, 2);  // still on at the end
  ProcessArenas({arena}, CollectorLayout(), &p);
  capture::Capture c = p.Finish(1000000);
  using G = capture::GapCause;
  const std::vector<capture::Gap> want = {
      {.begin = 0, .end = 350, .cpu = 1, .cause = G::kLostRecords, .count = 2},
      {.begin = 100, .end = 300, .cpu = 0, .cause = G::kLostRecords, .count = 5},
      {.begin = 200, .end = 600, .cause = G::kBudget, .count = 4},
      {.begin = 400,
       .end = 450,
       .pid = 10,
       .tid = 11,
       .cpu = 0,
       .cause = G::kThrottled,
       .count = 1},
      {.begin = 500,
       .end = 1000000,
       .pid = 10,
       .tid = 11,
       .cpu = 0,
       .cause = G::kThrottled,
       .count = 1},
      {.begin = 700, .end = 1000000, .cause = G::kBudget, .count = 2},
  };
  REQUIRE(c.gaps.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(c.gaps[i] == want[i]);
  }
  CHECK(c.settings.lost_records == 7);
  CHECK(c.settings.throttles == 2);
}

TEST_CASE("Processor: a snapshot holds the gaps so far, those still open as far as its time") {
  Processor p(Processor::Options{});
  p.SetSampleScale(200, 4);
  capture::Capture part = p.Part(0, 500, std::nullopt);
  REQUIRE(part.gaps.size() == 1);
  CHECK(part.gaps[0] ==
        capture::Gap{.begin = 200, .end = 500, .cause = capture::GapCause::kBudget, .count = 4});
  // Still open in the processor: closed at the end, not at the snapshot.
  capture::Capture whole = p.Finish(900);
  REQUIRE(whole.gaps.size() == 1);
  CHECK(whole.gaps[0].end == 900);
}

TEST_CASE("Processor: following one process keeps its records and its children's only") {
  std::vector<uint8_t> arena;
  for (const auto& r : std::vector<std::vector<uint8_t>>{
           CommRecord(10, 10, "target", true, 1),
           CommRecord(20, 20, "bystander", true, 2),
           SampleRecord(20, 20, 3, {}),                 // another program's sample
           TaskRecord(kRecordFork, 10, 10, 11, 10, 4),  // the target's new thread
           TaskRecord(kRecordFork, 30, 10, 30, 11, 5),  // a child the target forked
           TaskRecord(kRecordFork, 40, 20, 40, 20, 6),  // a child of the other one
           SampleRecord(10, 11, 7, {}),
           SampleRecord(30, 30, 8, {}),
           SampleRecord(40, 40, 9, {}),
           TaskRecord(kRecordExit, 30, 10, 30, 11, 10),  // the child ends; its pid goes
           TaskRecord(kRecordFork, 30, 20, 30, 20, 11),  // to the other program's next child
           SampleRecord(30, 30, 12, {}),
       }) {
    arena.insert(arena.end(), r.begin(), r.end());
  }
  Processor p(Processor::Options{});
  p.Follow(10);
  ProcessArenas({arena}, CollectorLayout(), &p);
  capture::Capture c = p.Finish(1000);
  std::vector<int32_t> pids;
  for (const capture::Process& proc : c.processes) pids.push_back(proc.pid);
  CHECK(pids == std::vector<int32_t>{10, 30});
  REQUIRE(c.samples.size() == 2);
  CHECK(c.samples.time == std::vector<uint64_t>{7, 8});
}

TEST_CASE("Processor: an event about a thread that has ended names that thread, not a new one") {
  std::vector<uint8_t> arena;
  for (const auto& r : std::vector<std::vector<uint8_t>>{
           CommRecord(10, 10, "target", true, 1),
           TaskRecord(kRecordFork, 10, 10, 11, 10, 2),
           TaskRecord(kRecordExit, 10, 10, 11, 10, 3),
           TaskRecord(kRecordExit, 10, 10, 10, 10, 4),
       }) {
    arena.insert(arena.end(), r.begin(), r.end());
  }
  Processor p(Processor::Options{});
  ProcessArenas({arena}, CollectorLayout(), &p);
  // A reading of the zombie leader, and a late event of its other thread.
  const capture::ThreadId leader = p.EventThread(10, 10, 5, "target");
  const capture::ThreadId other = p.EventThread(10, 11, 6, "target");
  // Another process's thread 11, after tid 11 is reused: a thread of its own.
  const capture::ThreadId reused = p.EventThread(20, 11, 7, "other");
  capture::Capture c = p.Finish(1000);
  REQUIRE(c.processes.size() == 2);
  REQUIRE(c.threads.size() == 3);
  CHECK(c.threads[leader].tid == 10);
  CHECK(c.threads[leader].end_time == 4);
  CHECK(c.threads[other].tid == 11);
  CHECK(c.threads[other].end_time == 3);
  CHECK(reused == 2);
  CHECK(c.processes[c.threads[reused].process].pid == 20);
}
