// Capture write and read throughput (samples/s) and size (bytes per sample)
// on a synthetic capture shaped like a recording (bench/synthetic_capture.h).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "bench/synthetic_capture.h"
#include "capture/reader.h"
#include "capture/writer.h"

using namespace microscope::capture;

namespace {

Capture MakeCapture(size_t samples) {
  return microscope::bench::MakeSyntheticCapture(samples);
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
