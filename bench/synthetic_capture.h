// A synthetic capture shaped like a recording: `threads` threads (4 by
// default) of one process, samples dealt to them in turn,
// 500 functions in one module, `paths` stacks (200 by default) of depth 20
// sharing their outer frames, one sample per 250 us; samples spread evenly
// over the stacks, or `skewed` as a real profile's are (a few hot paths, a
// long tail: the stack at paths * u^3 for u uniform). For benchmarks at
// sizes no test records.
#pragma once

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>

#include "capture/capture.h"

namespace microscope::bench {

inline capture::Capture MakeSyntheticCapture(size_t samples, uint32_t seed = 3, size_t paths = 200,
                                             bool skewed = false, uint32_t threads = 4) {
  using namespace capture;
  Capture c;
  c.strings = {"/usr/bin/app", "app"};
  c.modules.push_back({0, {1, 2, 3, 4}, 1 << 20, ModuleKind::kFile});
  c.processes.push_back({100, 1, 1, 0, 0, 0});
  threads = std::max<uint32_t>(1, threads);
  for (uint32_t t = 0; t < threads; ++t) c.threads.push_back({int32_t(100 + t), 0, 1, 0, 0});
  for (uint32_t f = 0; f < 500; ++f) {
    c.strings.push_back("namespace::Class::function_" + std::to_string(f) + "(int, char const*)");
    c.functions.push_back({uint32_t(c.strings.size() - 1), 0});
    c.frames.push_back({FrameKind::kNative, 0, 0x1000 + f * 64, f});
  }
  std::mt19937 rng(seed);
  std::vector<StackId> leaves;
  for (size_t path = 0; path < paths; ++path) {
    StackId parent = kNone;
    for (int d = 0; d < 20; ++d) {
      uint32_t frame = d < 10 ? uint32_t(d) : uint32_t(10 + rng() % 490);
      c.stacks.parent.push_back(parent);
      c.stacks.frame.push_back(frame);
      parent = StackId(c.stacks.size() - 1);
    }
    leaves.push_back(parent);
  }
  uint64_t t = 1'000'000'000;
  for (size_t i = 0; i < samples; ++i) {
    t += 250'000 + rng() % 1000;
    c.samples.time.push_back(t);
    c.samples.thread.push_back(uint32_t(i % threads));
    size_t pick = rng() % leaves.size();
    if (skewed) {
      double u = double(rng()) / double(std::mt19937::max());
      pick = std::min(leaves.size() - 1, size_t(double(leaves.size()) * u * u * u));
    }
    c.samples.stack.push_back(leaves[pick]);
    c.samples.weight.push_back(1'001'001 + rng() % 100);
    c.samples.end.push_back(StackEnd::kComplete);
  }
  c.settings.mode = "launch";
  c.settings.command = {"/usr/bin/app"};
  c.settings.frequency = 999;
  c.settings.call_graph = "auto";
  c.settings.start_time = 1'000'000'000;
  c.settings.end_time = t;
  return c;
}

}  // namespace microscope::bench
