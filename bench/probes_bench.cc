// What a probe costs the program (sdk/c/microscope.h), and what its words
// cost the recorder to decode.
//
//   BM_ZonePair/site_off   a zone begin + end at a site no recorder enabled
//                          (run alone: no recorder at all; under `record
//                          --probes bench.on`: a recorder listening, this
//                          site not selected)
//   BM_ZonePair/site_on    a zone begin + end at the site "bench.on": under
//                          `record --probes bench.on`, written into the ring
//                          and drained by the recorder (run alone: off)
//   BM_DecodeRing          the recorder's decoding of ring words, per record
//
// Under a recorder each iteration times 1024 pairs and then, untimed, waits
// for the recorder to take them, so that every pair is a real write (the
// counter `dropped` says whether any was not). bench/probes_costs.py runs
// the three cases and reports nanoseconds per pair.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "microscope.h"
#include "src/probes/ring_records.h"

namespace {

constexpr int kPairs = 1024;

// Waits (at most 100 ms) until the recorder took everything of this thread.
void WaitForDrain() {
  const microscope_ring* r = microscope__ring;
  if (r == nullptr) return;
  for (int i = 0; i < 10000; ++i) {
    if (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == r->head) return;
    std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
}

__attribute__((noinline)) void PairsOff() {
  for (int i = 0; i < kPairs; ++i) {
    MICROSCOPE_ZONE_BEGIN(z, "bench.off");
    benchmark::ClobberMemory();
    MICROSCOPE_ZONE_END(z);
  }
}

__attribute__((noinline)) void PairsOn() {
  for (int i = 0; i < kPairs; ++i) {
    MICROSCOPE_ZONE_BEGIN(z, "bench.on");
    benchmark::ClobberMemory();
    MICROSCOPE_ZONE_END(z);
  }
}

template <void (*Pairs)()>
void BM_ZonePair(benchmark::State& state) {
  // Under a recorder ($PROBES_BENCH_RECORDED), not before it listens.
  for (int i = 0; i < 1000 && std::getenv("PROBES_BENCH_RECORDED") && !microscope_recording(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    Pairs();
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    WaitForDrain();
  }
  state.SetItemsProcessed(state.iterations() * kPairs);
  state.counters["ns_per_pair"] = benchmark::Counter(
      double(state.iterations() * kPairs), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["recording"] = microscope_recording();
  state.counters["dropped"] = microscope__ring != nullptr ? double(microscope__ring->dropped) : 0;
}
BENCHMARK(BM_ZonePair<PairsOff>)->Name("BM_ZonePair/site_off")->UseManualTime();
BENCHMARK(BM_ZonePair<PairsOn>)->Name("BM_ZonePair/site_on")->UseManualTime();

void BM_DecodeRing(benchmark::State& state) {
  std::vector<uint64_t> words = {uint64_t(MICROSCOPE_OP_THREAD) << 48 | 3ull << 56, 1, 4242};
  for (int i = 0; i < 100000; ++i) {
    words.push_back(0x5000 | uint64_t(MICROSCOPE_OP_BEGIN) << 48 | 2ull << 56);
    words.push_back(uint64_t(1000 + i));
    words.push_back(0x5000 | uint64_t(MICROSCOPE_OP_END) << 48 | 2ull << 56);
    words.push_back(uint64_t(1001 + i));
  }
  for (auto _ : state) {
    uint32_t tid = 0;
    microscope::probes::RingChunk chunk = microscope::probes::DecodeRingWords(words, &tid);
    benchmark::DoNotOptimize(chunk.records.data());
  }
  state.SetItemsProcessed(state.iterations() * 200000);
}
BENCHMARK(BM_DecodeRing);

}  // namespace

BENCHMARK_MAIN();
