// Decoder and processor throughput on synthetic kernel records shaped like
// a real recording: 20-frame user chains over a few mappings.
#include <benchmark/benchmark.h>

#include <random>

#include "src/record/decode.h"
#include "src/record/processor.h"
#include "src/record/pump.h"
#include "src/runtimes/node/walk.h"
#include "src/runtimes/python/walk.h"
#include "tests/unit/record/record_builder.h"

using namespace microscope;
using namespace microscope::record;

namespace {

std::vector<uint8_t> MakeArena(size_t samples) {
  std::vector<uint8_t> arena;
  auto append = [&](const std::vector<uint8_t>& r) {
    arena.insert(arena.end(), r.begin(), r.end());
  };
  append(testing::Mmap2Record(10, 0x400000, 0x100000, 0, "/bin/app", 1, {1, 2, 3, 4}));
  append(testing::Mmap2Record(10, 0x7f0000000000, 0x200000, 0, "/lib/libc.so.6", 2, {5, 6, 7, 8}));
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < samples; ++i) {
    // 300 distinct stacks of depth 20 that share their outer frames, as a
    // CPU-bound program's do.
    uint64_t path = rng() % 300;
    std::vector<uint64_t> chain = {uint64_t(-512)};
    chain.push_back(0x400000 + (path % 64) * 16);
    for (int d = 0; d < 18; ++d) {
      chain.push_back(0x400000 + 0x1000 * (d + 1) + ((path >> (d % 8)) & 3) * 8);
    }
    chain.push_back(0x7f0000001000);
    append(testing::SampleRecord(10, 10 + uint32_t(i % 4), 10 + i * 1000, chain));
  }
  return arena;
}

void BM_DecodeRecords(benchmark::State& state) {
  std::vector<uint8_t> arena = MakeArena(size_t(state.range(0)));
  SampleLayout layout = testing::CollectorLayout();
  size_t records = 0;
  for (auto _ : state) {
    size_t off = 0;
    while (off < arena.size()) {
      RecordHeader h;
      std::memcpy(&h, arena.data() + off, sizeof(h));
      auto e = DecodeRecord(std::span(arena).subspan(off, h.size), layout);
      benchmark::DoNotOptimize(e);
      off += h.size;
      ++records;
    }
  }
  state.counters["records/s"] = benchmark::Counter(double(records), benchmark::Counter::kIsRate);
  state.counters["bytes/record"] = double(arena.size()) / double(state.range(0) + 2);
}
BENCHMARK(BM_DecodeRecords)->Arg(100000)->Unit(benchmark::kMillisecond);

// Decode, order by time, bind to mappings, intern frames and stacks.
void BM_ProcessSamples(benchmark::State& state) {
  std::vector<uint8_t> arena = MakeArena(size_t(state.range(0)));
  size_t samples = 0;
  for (auto _ : state) {
    Processor::Options o;
    Processor p(o);
    ProcessArenas({arena}, testing::CollectorLayout(), &p);
    samples += p.sample_count();
    benchmark::DoNotOptimize(p.Finish(0));
  }
  state.counters["samples/s"] = benchmark::Counter(double(samples), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ProcessSamples)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

// Splicing one runtime's walk into a 30-frame native stack, as a source
// does at each sample: with the scratch it reuses (Arg 1) or a fresh one per
// stack (Arg 0: every buffer allocated again, as before it had one).
void BM_PythonSplice(benchmark::State& state) {
  runtimes::python::Walk walk;
  for (uint64_t i = 0; i < 12; ++i) walk.frames.push_back({0x1000 + i, 0, 0, 0, 0, false, false});
  walk.frames[5].entry = walk.frames[11].entry = true;
  std::vector<capture::FrameId> native(30);
  std::vector<uint8_t> tags(30, 0);
  tags[10] = tags[20] = 1;
  std::vector<uint64_t> sps(30, 0);
  runtimes::python::SpliceHooks hooks{
      [](const runtimes::python::WalkFrame& f) { return capture::FrameId(f.code); },
      [](const std::string&) { return capture::FrameId(0); }};
  runtimes::python::SpliceScratch scratch;
  std::vector<capture::FrameId> frames;
  for (auto _ : state) {
    frames.assign(native.begin(), native.end());
    runtimes::python::SpliceWalk(&walk, "", &frames, tags, sps, 1, hooks,
                                 state.range(0) ? &scratch : nullptr);
    benchmark::DoNotOptimize(frames.data());
  }
}
BENCHMARK(BM_PythonSplice)->Arg(0)->Arg(1);

void BM_V8Splice(benchmark::State& state) {
  runtimes::node::V8Walk walk;
  std::vector<uint64_t> sps(30);
  for (size_t i = 0; i < sps.size(); ++i) sps[i] = i < 2 ? 0 : 0x7000 + 0x100 * i;
  for (uint64_t i = 0; i < 12; ++i) walk.frames.push_back({0x7000 + 0x100 * (3 + 2 * i) + 8});
  std::vector<capture::FrameId> native(30);
  std::vector<uint8_t> tags(30, 0);
  runtimes::node::V8SpliceHooks hooks{
      [](const runtimes::node::V8Frame& f, bool, capture::FrameId,
         std::vector<capture::FrameId>* out) { out->push_back(capture::FrameId(f.fp)); },
      [](const std::string&) { return capture::FrameId(0); }};
  runtimes::node::V8SpliceScratch scratch;
  std::vector<capture::FrameId> frames;
  for (auto _ : state) {
    frames.assign(native.begin(), native.end());
    runtimes::node::SpliceV8Walk(walk, &frames, tags, sps, {3}, hooks,
                                 state.range(0) ? &scratch : nullptr);
    benchmark::DoNotOptimize(frames.data());
  }
}
BENCHMARK(BM_V8Splice)->Arg(0)->Arg(1);

BENCHMARK_MAIN();
