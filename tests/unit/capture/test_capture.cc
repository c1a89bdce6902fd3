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

}  // namespace microscope::testing
