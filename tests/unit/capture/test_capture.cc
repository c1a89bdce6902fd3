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

}  // namespace microscope::testing
