// Capture write and read throughput (samples/s) and size (bytes per sample)
// on a synthetic capture shaped like a recording: 4 threads, a few thousand
// stacks of depth ~20, one sample per millisecond per thread.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "capture/reader.h"
#include "capture/writer.h"

using namespace microscope::capture;

namespace {

Capture MakeCapture(size_t samples) {
  Capture c;
  c.strings = {"/bin/app", "app"};
  c.modules.push_back({0, {1, 2, 3, 4}, 1 << 20, ModuleKind::kFile});
  c.processes.push_back({100, 1, 1, 0, 0, 0});
  for (int t = 0; t < 4; ++t) c.threads.push_back({100 + t, 0, 1, 0, 0});
  for (uint32_t f = 0; f < 500; ++f) {
    c.strings.push_back("function_" + std::to_string(f));
    c.functions.push_back({uint32_t(c.strings.size() - 1), 0});
    c.frames.push_back({FrameKind::kNative, 0, 0x1000 + f * 64, f});
  }
  std::mt19937 rng(3);
  // Stacks: 200 paths of depth 20 sharing prefixes.
  std::vector<StackId> leaves;
  for (int path = 0; path < 200; ++path) {
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
    c.samples.thread.push_back(uint32_t(i % 4));
    c.samples.stack.push_back(leaves[rng() % leaves.size()]);
    c.samples.weight.push_back(1'001'001 + rng() % 100);
    c.samples.end.push_back(StackEnd::kFramePointerEnd);
  }
  c.settings.start_time = 1'000'000'000;
  c.settings.end_time = t;
  return c;
}

std::string TempPath() {
  return (std::filesystem::temp_directory_path() / ("bench." + std::to_string(getpid()) + ".mscap"))
      .string();
}

void BM_CaptureWrite(benchmark::State& state) {
  Capture c = MakeCapture(size_t(state.range(0)));
  std::string path = TempPath();
  for (auto _ : state) {
    if (!WriteCapture(c, path).ok()) state.SkipWithError("write failed");
  }
  double bytes = double(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  state.counters["samples/s"] =
      benchmark::Counter(double(state.iterations() * state.range(0)), benchmark::Counter::kIsRate);
  state.counters["file_bytes/sample"] = bytes / double(state.range(0));
}
BENCHMARK(BM_CaptureWrite)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_CaptureRead(benchmark::State& state) {
  Capture c = MakeCapture(size_t(state.range(0)));
  std::string path = TempPath();
  if (!WriteCapture(c, path).ok()) state.SkipWithError("write failed");
  for (auto _ : state) {
    auto r = ReadCapture(path);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  std::filesystem::remove(path);
  state.counters["samples/s"] =
      benchmark::Counter(double(state.iterations() * state.range(0)), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CaptureRead)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
