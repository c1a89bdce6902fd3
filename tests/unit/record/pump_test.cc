#include <doctest.h>

#include <unistd.h>

#include <utility>
#include <vector>

#include "capture/reader.h"
#include "src/record/offcpu_source.h"
#include "src/record/proc.h"
#include "src/record/pump.h"
#include "src/record/session.h"
#include "src/record/syscall_source.h"
#include "tests/unit/record/record_builder.h"

using namespace microscope;
using namespace microscope::record;
using namespace microscope::testing;
using capture::kNone;

namespace {

// A source whose events are plain times; each delivery notes its time and
// how many samples the processor had then (what went before it).
class TimesSource final : public QueuedSource<uint64_t> {
 public:
  void Add(std::vector<uint64_t> times) {
    Take(&times, [](uint64_t) { return true; });
  }
  int wait_fd() const override { return -1; }
  void Poll(const PollWindow&, RowSink*) override {}
  // Each event delivered, with the samples the processor had by then.
  void Deliver(size_t i, RowSink* sink) override {
    delivered.push_back({at(i), static_cast<Processor*>(sink)->sample_count()});
  }
  void Finish(RowSink*, capture::Settings*) override {}
  std::vector<std::pair<uint64_t, uint64_t>> delivered;

 private:
  uint64_t TimeOf(const uint64_t& t) const override { return t; }
};

std::vector<std::unique_ptr<EventSource>> Sources(TimesSource** a, TimesSource** b) {
  std::vector<std::unique_ptr<EventSource>> s;
  s.push_back(std::make_unique<TimesSource>());
  s.push_back(std::make_unique<TimesSource>());
  *a = static_cast<TimesSource*>(s[0].get());
  *b = static_cast<TimesSource*>(s[1].get());
  return s;
}

void Put(std::vector<uint8_t>* arena, const std::vector<uint8_t>& record) {
  arena->insert(arena->end(), record.begin(), record.end());
}

TEST_CASE("Pump: source events are merged with ring records by time, rings first at a tie") {
  std::vector<std::vector<uint8_t>> arenas(1);
  Put(&arenas[0], SampleRecord(10, 10, 10, {record::kContextUser, 0x1}));
  Put(&arenas[0], SampleRecord(10, 10, 20, {record::kContextUser, 0x2}));
  Put(&arenas[0], SampleRecord(10, 10, 30, {record::kContextUser, 0x3}));
  TimesSource *a, *b;
  auto sources = Sources(&a, &b);
  a->Add({25, 5, 20});  // read out of order: kept in time order
  b->Add({20, 35});
  Processor p(Processor::Options{});
  std::vector<RingArena> rings = Rings(arenas);
  PumpArenas(&rings, CollectorLayout(), 30, &p, sources);
  // a's 5 comes before every sample; at t=20 the sample, then a, then b.
  CHECK(a->delivered == std::vector<std::pair<uint64_t, uint64_t>>{{5, 0}, {20, 2}, {25, 2}});
  CHECK(b->delivered == std::vector<std::pair<uint64_t, uint64_t>>{{20, 2}});
  CHECK(a->pending() == 0);
  REQUIRE(b->pending() == 1);  // t=35 waits for a later watermark
  CHECK(b->time_at(0) == 35);
  CHECK(p.sample_count() == 3);
  b->Add({33});  // read in a later round, before the waiting one
  PumpArenas(&rings, CollectorLayout(), UINT64_MAX, &p, sources);
  CHECK(b->delivered == std::vector<std::pair<uint64_t, uint64_t>>{{20, 2}, {33, 3}, {35, 3}});
  CHECK(b->pending() == 0);
}

TEST_CASE("ForkedTids: the FORK records' threads, decoded, across arenas") {
  std::vector<std::vector<uint8_t>> arenas(2);
  Put(&arenas[0], SampleRecord(10, 10, 1, {record::kContextUser, 0x1}));
  Put(&arenas[0], TaskRecord(kRecordFork, 10, 10, 11, 10, 2));
  Put(&arenas[1], TaskRecord(kRecordExit, 10, 10, 12, 10, 3));
  Put(&arenas[1], TaskRecord(kRecordFork, 20, 10, 20, 10, 4));
  CHECK(ForkedTids(Rings(arenas), CollectorLayout()) == std::set<uint32_t>{11, 20});
  // A record cut short is not read past its chunk.
  arenas[1].resize(arenas[1].size() - 4);
  std::vector<RingArena> cut(2);
  cut[0] = RingArena(arenas[0]);
  cut[1] = RingArena(arenas[1]);
  CHECK(ForkedTids(cut, CollectorLayout()) == std::set<uint32_t>{11});
}

OffCpuInterval Interval(uint32_t tid, uint64_t start, uint64_t end) {
  OffCpuInterval iv;
  iv.pid = 10;
  iv.tid = tid;
  iv.start_ns = start;
  iv.end_ns = end;
  iv.time_ns = end != 0 ? end : start;
  iv.comm = "t" + std::to_string(tid);
  return iv;
}

TEST_CASE("Off-CPU rows: stacks, states, wakers and cut intervals") {
  Processor p(Processor::Options{});
  p.settings().start_time = 5;
  p.AddProcess(10, 1, "app", 5);
  p.AddMapping(10, 0x400000, 0x401000, 0, "//anon", {}, 5);
  OffCpuInterval blocked = Interval(11, 40, 60);
  blocked.state = 1;  // uninterruptible
  blocked.kernel_stack = {0xffffffff81000010ull, 0xffffffff81000020ull, 0x1234 /* not kernel */};
  blocked.has_regs = true;
  blocked.regs[8] = 0x400010;  // IP, in the anonymous mapping; no frame pointer to follow
  blocked.waker_tid = 12;
  blocked.waker_comm = "waker";
  OffCpuInterval early = Interval(12, 0, 30);  // off CPU since before the recording
  early.flags = capture::kOffCpuCutAtStart;
  early.state = 200;                          // out of range: kept as "other"
  OffCpuInterval open = Interval(13, 70, 0);  // still off CPU at the end
  AppendOffCpu(blocked, &p);
  AppendOffCpu(early, &p);
  AppendOffCpu(open, &p);
  capture::Capture c = p.Finish(100);
  REQUIRE(capture::ValidateCapture(c).ok());
  const capture::OffCpu& o = c.off_cpu;
  REQUIRE(o.size() == 3);
  // Sorted by start; the early one starts with the recording.
  CHECK(o.start == std::vector<uint64_t>{5, 40, 70});
  CHECK(o.end == std::vector<uint64_t>{30, 60, 100});
  CHECK(o.flags[0] == capture::kOffCpuCutAtStart);
  CHECK(o.flags[2] == capture::kOffCpuCutAtEnd);
  CHECK(o.state[0] == capture::OffCpuState::kOther);
  CHECK(o.state[1] == capture::OffCpuState::kUninterruptible);
  CHECK(c.str(o.waker_name[1]) == "waker");
  CHECK(o.waker_tid[1] == 12);
  CHECK(o.waker_name[0] == kNone);
  // Leaf first: the two kernel frames (the first where the stack was
  // taken, the next a return address), then the user frame from the regs.
  std::vector<capture::Frame> frames;
  for (uint32_t n = o.stack[1]; n != kNone; n = c.stacks.parent[n])
    frames.push_back(c.frames[c.stacks.frame[n]]);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].kind == capture::FrameKind::kKernel);
  CHECK(frames[0].address == 0xffffffff81000010ull);
  CHECK(frames[1].address == 0xffffffff8100001full);
  CHECK(frames[2].kind == capture::FrameKind::kNative);
  CHECK(frames[2].address == 0x400010);
  CHECK(o.stack[0] == kNone);
  CHECK(o.stack_end[0] == capture::StackEnd::kEmpty);
  // A thread first seen in an event takes its process's name (as after a
  // fork), not the event's, until a COMM record names it.
  CHECK(c.threads[o.thread[1]].tid == 11);
  CHECK(c.str(c.threads[o.thread[1]].name) == "app");
}

TEST_CASE("System-call rows: in start order, a stack only for calls that carry one") {
  Processor p(Processor::Options{});
  p.AddProcess(10, 1, "app", 5);
  p.AddMapping(10, 0x400000, 0x401000, 0, "//anon", {}, 5);
  SyscallEvent slow;
  slow.pid = 10;
  slow.tid = 10;
  slow.start_ns = 50;
  slow.duration_ns = 40;
  slow.nr = 0;
  slow.ret = -11;
  slow.args[0] = 3;
  slow.has_stack = true;
  slow.regs[8] = 0x400020;
  SyscallEvent quick = slow;
  quick.start_ns = 20;
  quick.duration_ns = 1;
  quick.nr = 39;
  quick.ret = 10;
  quick.has_stack = false;
  AppendSyscall(slow, &p);  // delivered at their exits: out of start order
  AppendSyscall(quick, &p);
  capture::Capture c = p.Finish(100);
  REQUIRE(capture::ValidateCapture(c).ok());
  const capture::Syscalls& y = c.syscalls;
  REQUIRE(y.size() == 2);
  CHECK(y.time == std::vector<uint64_t>{20, 50});
  CHECK(y.nr == std::vector<uint32_t>{39, 0});
  CHECK(y.ret == std::vector<int64_t>{10, -11});
  CHECK(y.arg0[1] == 3);
  REQUIRE(y.stack.size() == 2);
  CHECK(y.stack[0] == kNone);
  REQUIRE(y.stack[1] != kNone);
  CHECK(c.frames[c.stacks.frame[y.stack[1]]].address == 0x400020);

  Processor none(Processor::Options{});
  AppendSyscall(quick, &none);
  capture::Capture n = none.Finish(100);
  CHECK(n.syscalls.size() == 1);
  CHECK(n.syscalls.stack.empty());  // no call carried a stack: no column
}

TEST_CASE("Off-CPU short counts go to the thread's latest row") {
  Processor p(Processor::Options{});
  p.AddProcess(10, 1, "app", 5);
  p.AddThread(10, 11, "first", 5);
  std::vector<std::vector<uint8_t>> arenas(1);
  Put(&arenas[0], TaskRecord(kRecordExit, 10, 10, 11, 10, 20));
  Put(&arenas[0], TaskRecord(kRecordFork, 10, 10, 11, 10, 30));  // tid 11 reused
  std::vector<RingArena> rings = Rings(arenas);
  PumpArenas(&rings, CollectorLayout(), UINT64_MAX, &p);
  AppendOffCpuShort({10, 11, 0, 7, 700}, &p);
  capture::Capture c = p.Finish(100);
  REQUIRE(c.off_cpu_short.size() == 1);
  CHECK(c.threads[c.off_cpu_short.thread[0]].start_time == 30);
  CHECK(c.off_cpu_short.count[0] == 7);
  CHECK(c.off_cpu_short.total[0] == 700);
}

}  // namespace

namespace {

TEST_CASE("DefaultRingPages: what record --help says -m defaults to") {
  RecordOptions o;  // the default preset: 999 Hz, 16 KiB
  o.call_graph = Processor::CallGraph::kAuto;
  CHECK(DefaultRingPages(o) == 2048);
  o.frequency = 499;
  o.stack_copy = 8192;
  CHECK(DefaultRingPages(o) == 512);  // quick
  o.frequency = 3999;
  o.stack_copy = 65528;
  CHECK(DefaultRingPages(o) == 16384);  // deep
  o.call_graph = Processor::CallGraph::kFramePointer;
  CHECK(DefaultRingPages(o) == 256);  // no stack copy
}

}  // namespace

namespace {

TEST_CASE("After lost records, a live process's mappings are read again, once each") {
  Processor p(Processor::Options{});
  const uint32_t self = uint32_t(getpid());
  p.AddProcess(self, 1, "unit_record", 1);
  CHECK_FALSE(p.TakeLoss());
  RecordBuilder lost(kRecordLost);
  lost.Put<uint64_t>(7).Put<uint64_t>(3).Trailer(self, self, 5);
  ProcessArenas({lost.Finish()}, CollectorLayout(), &p);
  CHECK(p.TakeLoss());
  CHECK_FALSE(p.TakeLoss());  // taken
  CHECK(p.LiveProcesses() == std::vector<uint32_t>{self});
  REQUIRE(AddExecutableMappings(pid_t(self), 10, &p));
  const size_t mapped = p.capture().mappings.size();
  CHECK(mapped > 0);
  REQUIRE(AddExecutableMappings(pid_t(self), 20, &p));
  CHECK(p.capture().mappings.size() == mapped);  // the same mappings are not added twice
  CHECK_FALSE(AddExecutableMappings(pid_t(0x7ffffff0), 30, &p));  // no such process
}

}  // namespace
