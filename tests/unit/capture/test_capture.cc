#include "tests/unit/capture/test_capture.h"

namespace microscope::testing {

capture::Capture MakeTestCapture() {
  using namespace capture;
  Capture c;
  c.strings = {"/bin/app", "main", "run", "hot", "cold", "app", "problem", "example"};
  c.modules.push_back({0, {0xab, 0xcd}, 4096, ModuleKind::kFile});
  c.processes.push_back({100, 1, 5, 0, 10, 1000});
  c.threads.push_back({100, 0, 5, 10, 1000});
  c.mappings.push_back({0, 0, 0x1000, 0x2000, 0, 10, 1000});
  c.functions = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};
  c.frames = {{FrameKind::kNative, 0, 0x10, 0},
              {FrameKind::kNative, 0, 0x20, 1},
              {FrameKind::kNative, 0, 0x30, 2},
              {FrameKind::kNative, 0, 0x40, 3},
              {FrameKind::kNative, 0, 0x50, kNone}};
  // 0 main; 1 main>run; 2 main>run>hot; 3 main>run>cold; 4 main>run>unnamed
  c.stacks.parent = {kNone, 0, 1, 1, 1};
  c.stacks.frame = {0, 1, 2, 3, 4};
  uint64_t t = 100;
  auto add = [&](StackId s, int n) {
    for (int i = 0; i < n; ++i) {
      c.samples.time.push_back(t++);
      c.samples.thread.push_back(0);
      c.samples.stack.push_back(s);
      c.samples.weight.push_back(1000);
      c.samples.end.push_back(StackEnd::kFramePointerEnd);
    }
  };
  add(2, 7);
  add(3, 3);
  c.problems.push_back({6, 2, 7});
  c.settings.mode = "launch";
  c.settings.command = {"app", "--flag"};
  c.settings.frequency = 999;
  c.settings.start_time = 10;
  c.settings.end_time = 1000;
  c.settings.notes = {"a note"};
  return c;
}

capture::Capture MakeOffCpuCapture() {
  using namespace capture;
  Capture c = MakeTestCapture();
  c.strings.push_back("schedule");                                            // 8
  c.strings.push_back("worker");                                              // 9
  c.functions.push_back({8, kNone});                                          // 4
  c.frames.push_back({FrameKind::kKernel, kNone, 0xffffffff81000000ull, 4});  // 5
  c.stacks.parent.push_back(3);  // 5: main>run>cold>schedule
  c.stacks.frame.push_back(5);
  c.stacks.parent.push_back(kNone);  // 6: schedule
  c.stacks.frame.push_back(5);
  c.threads.push_back({101, 0, 9, 10, 1000});
  OffCpu& o = c.off_cpu;
  auto add = [&](uint64_t start, uint64_t end, ThreadId thread, StackId stack, OffCpuState state,
                 int32_t waker, StringId waker_name, uint8_t flags) {
    o.start.push_back(start);
    o.end.push_back(end);
    o.thread.push_back(thread);
    o.stack.push_back(stack);
    o.stack_end.push_back(stack == kNone ? StackEnd::kEmpty : StackEnd::kFramePointerEnd);
    o.state.push_back(state);
    o.waker_tid.push_back(waker);
    o.waker_name.push_back(waker_name);
    o.flags.push_back(flags);
  };
  add(10, 400, 1, 6, OffCpuState::kSleeping, 100, 5, kOffCpuCutAtStart | kOffCpuNoUserStack);
  add(20, 90, 0, 5, OffCpuState::kSleeping, 101, 9, 0);
  add(200, 500, 0, 5, OffCpuState::kUninterruptible, 0, kNone, 0);
  add(600, 900, 1, kNone, OffCpuState::kPreempted, 0, kNone, kOffCpuCutAtEnd);
  c.off_cpu_short.thread = {0, 1};
  c.off_cpu_short.state = {OffCpuState::kSleeping, OffCpuState::kPreempted};
  c.off_cpu_short.count = {5, 2};
  c.off_cpu_short.total = {50, 8};
  c.settings.SetSource("off-cpu", "on").values = {{"min_ns", 1000}};
  c.settings.SetSource("syscalls", "off: test");
  return c;
}

capture::Capture MakeProbeCapture() {
  using namespace capture;
  Capture c = MakeOffCpuCapture();
  const StringId first = StringId(c.strings.size());
  for (const char* s : {"request", "parse", "tick", "route", "/a", "depth", "app.c", "gen"})
    c.strings.push_back(s);
  auto str = [&](int i) { return first + StringId(i); };
  ProbeSites& ps = c.probe_sites;
  ps.kind = {ProbeKind::kZone,  ProbeKind::kZone,    ProbeKind::kMark,
             ProbeKind::kLabel, ProbeKind::kCounter, ProbeKind::kZone};
  ps.name = {str(0), str(1), str(2), str(3), str(5), str(7)};
  ps.file = {str(6), str(6), str(6), str(6), str(6), kNone};
  ps.line = {10, 20, 30, 40, 50, 0};
  ps.module = {0, 0, 0, 0, 0, kNone};
  ProbeRecords& r = c.probe_records;
  auto add = [&](uint64_t time, ThreadId thread, ProbeSiteId site, ProbeOp op, double value = 0,
                 StringId text = kNone) {
    r.time.push_back(time);
    r.thread.push_back(thread);
    r.site.push_back(site);
    r.op.push_back(op);
    r.value.push_back(value);
    r.text.push_back(text);
  };
  add(15, 0, 0, ProbeOp::kBegin);
  add(60, 0, 3, ProbeOp::kLabel, 0, str(4));
  add(95, 0, 1, ProbeOp::kBegin);
  add(104, 0, 1, ProbeOp::kEnd);
  add(105, 0, 2, ProbeOp::kMark);
  add(150, 0, 0, ProbeOp::kEnd);
  add(160, 1, 5, ProbeOp::kBegin);
  add(170, 1, 0, ProbeOp::kBegin);
  add(180, 1, 5, ProbeOp::kEnd);
  add(190, 1, 0, ProbeOp::kEnd);
  add(195, 0, 4, ProbeOp::kCounter, 3.5);
  add(210, 0, 1, ProbeOp::kBegin);
  add(220, 0, 0, ProbeOp::kEnd);
  add(230, 0, 3, ProbeOp::kLabelClear);
  c.settings.SetSource("probes", "on");
  return c;
}

}  // namespace microscope::testing
