#include <doctest.h>

#include <map>

#include "analysis/lanes.h"
#include "analysis/profile.h"
#include "analysis/summary.h"
#include "analysis/syscalls.h"
#include "capture/reader.h"
#include "tests/unit/analysis/test_views.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::analysis;

namespace {

using testing::SelfValues;

std::map<int32_t, uint64_t> PerThread(const capture::Capture& c) {
  std::map<int32_t, uint64_t> out;
  for (const auto& t : ThreadTotals(c, {})) out[t.tid] = t.value;
  return out;
}

}  // namespace

TEST_CASE("Metric: offcpu weighs intervals as stored and counts short ones under a pseudo frame") {
  auto c = testing::MakeOffCpuCapture();
  capture::Capture m = ForMetric(c, Metric::kOffCpu);
  REQUIRE(capture::ValidateCapture(m).ok());  // rows in time order, ids in range
  CHECK(m.settings.metric == "offcpu");
  CHECK(m.settings.unit == "nanoseconds");
  FunctionKeys keys(m);
  Flat flat = ComputeFlat(m, keys);
  // 390 + 70 + 300 + 300 stored (the cut ones not stretched) + 58 short.
  CHECK(flat.all.value == 1118);
  CHECK(flat.all.samples == 4 + 7);
  auto self = SelfValues(m);
  CHECK(self["[off-CPU intervals under 1 µs, no stack]"] == 58);
  CHECK(self["schedule"] == 70 + 300 + 390);
  CHECK(self.count("hot") == 0);  // no CPU samples
  auto per = PerThread(m);
  CHECK(per[100] == 70 + 300 + 50);
  CHECK(per[101] == 390 + 300 + 8);
  // The original's ids are unchanged: only frames and stacks were appended.
  CHECK(m.frames.size() > c.frames.size());
  for (size_t f = 0; f < c.frames.size(); ++f) CHECK(m.frames[f].address == c.frames[f].address);
  CHECK(std::equal(c.stacks.parent.begin(), c.stacks.parent.end(), m.stacks.parent.begin()));
}

TEST_CASE("Metric: wall is CPU time plus off-CPU time per thread; cpu is the capture") {
  auto c = testing::MakeOffCpuCapture();
  capture::Capture w = ForMetric(c, Metric::kWall);
  REQUIRE(capture::ValidateCapture(w).ok());
  auto cpu = PerThread(c), off = PerThread(ForMetric(c, Metric::kOffCpu)), wall = PerThread(w);
  CHECK(cpu[100] == 10000);
  CHECK(wall[100] == cpu[100] + off[100]);
  CHECK(wall[101] == off[101]);
  CHECK(SelfValues(ForMetric(c, Metric::kCpu)) == SelfValues(c));
  CHECK(SelfValues(w)["hot"] == 7000);
}

TEST_CASE("Metric: by state, off-CPU stacks end in a [state] frame") {
  auto c = testing::MakeOffCpuCapture();
  capture::Capture m = ForMetric(c, Metric::kOffCpu, {true});
  REQUIRE(capture::ValidateCapture(m).ok());
  auto self = SelfValues(m);
  CHECK(self["[sleeping]"] == 390 + 70 + 50);
  CHECK(self["[uninterruptible]"] == 300);
  CHECK(self["[preempted]"] == 300 + 8);
  CHECK(self["schedule"] == 0);  // no longer a leaf
  // Caller first: main > run > cold > schedule > [uninterruptible].
  FunctionKeys keys(m);
  CallTree tree = ComputeTree(m, keys);
  bool found = false;
  for (uint32_t n = 0; n < tree.nodes.size(); ++n) {
    std::string path;
    for (KeyId k : PathOf(tree, n)) path += (path.empty() ? "" : ";") + keys.Name(k);
    if (path == "main;run;cold;schedule;[uninterruptible]") {
      found = true;
      CHECK(tree.nodes[n].self.value == 300);
    }
  }
  CHECK(found);
}

TEST_CASE("Metric: default and refusal without off-CPU data") {
  auto c = testing::MakeOffCpuCapture();
  CHECK(DefaultMetric(c) == Metric::kCpu);
  c.samples = {};
  CHECK(DefaultMetric(c) == Metric::kOffCpu);
  auto plain = testing::MakeTestCapture();
  CHECK(CheckMetric(plain, Metric::kCpu).ok());
  Status none = CheckMetric(plain, Metric::kOffCpu);
  REQUIRE_FALSE(none.ok());
  CHECK(none.message().find("recorded without off-CPU tracing") != std::string::npos);
  plain.settings.SetSource("off-cpu", "off: the kernel refused");
  CHECK(CheckMetric(plain, Metric::kWall).message().find("off: the kernel refused") !=
        std::string::npos);
  Metric m = Metric::kCpu;
  CHECK(ParseMetric("wall", &m));
  CHECK(m == Metric::kWall);
  CHECK_FALSE(ParseMetric("offcpu ", &m));
}

TEST_CASE("Off-CPU summary: totals, incomplete intervals apart, states, threads, wakers") {
  auto c = testing::MakeOffCpuCapture();
  OffCpuSummary s = SummarizeOffCpu(c);
  CHECK(s.status == "on");
  CHECK(s.intervals == 4);
  CHECK(s.interval_ns == 1060);
  CHECK(s.cut_at_start == 1);
  CHECK(s.cut_at_start_ns == 390);
  CHECK(s.cut_at_end == 1);
  CHECK(s.cut_at_end_ns == 300);
  CHECK(s.no_user_stack == 1);
  CHECK(s.shorts == 7);
  CHECK(s.short_ns == 58);
  CHECK(s.total_ns() == 1118);
  const auto& sleeping = s.by_state[uint8_t(capture::OffCpuState::kSleeping)];
  CHECK(sleeping.intervals == 2);
  CHECK(sleeping.shorts == 5);
  CHECK(sleeping.total_ns == 510);
  REQUIRE(s.by_thread_state.size() == 4);
  CHECK(c.threads[s.by_thread_state[0].thread].tid == 101);  // worker sleeping, 390
  CHECK(s.by_thread_state[0].state == capture::OffCpuState::kSleeping);
  // Wakers: preempted intervals have none; the unknown waker is a row.
  REQUIRE(s.wakers.size() == 2);
  const ThreadWakers& app = s.wakers[1];
  CHECK(c.threads[app.thread].tid == 100);
  CHECK(app.count == 2);
  REQUIRE(app.wakers.size() == 2);
  CHECK(app.wakers[0].tid == 0);  // 300 ns, unknown
  CHECK(app.wakers[1].tid == 101);
  CHECK(app.wakers[1].name == "worker");
  CHECK(app.wakers[1].total_ns == 70);
  const ThreadWakers& worker = s.wakers[0];
  REQUIRE(worker.wakers.size() == 1);
  CHECK(worker.wakers[0].name == "app");
  CHECK(worker.wakers[0].total_ns == 390);
  // A thread filter keeps that thread's rows only.
  FunctionKeys keys(c);
  FilterSpec spec;
  spec.thread = "worker";
  OffCpuSummary w = SummarizeOffCpu(c, *SampleFilter::Make(c, keys, spec));
  CHECK(w.intervals == 2);
  CHECK(w.total_ns() == 390 + 300 + 8);
}

TEST_CASE("Lanes: off-CPU time per state per bucket, drawn where it dominates") {
  auto c = testing::MakeOffCpuCapture();
  Lanes lanes = ComputeLanes(c, {}, 10);  // 10 to 1000: buckets of 99 ns
  CHECK(lanes.bucket_ns == 99);
  REQUIRE(lanes.lanes.size() == 2);
  const Lane& app = lanes.lanes[0];  // has samples: first
  const Lane& worker = lanes.lanes[1];
  CHECK(c.threads[worker.thread].tid == 101);
  CHECK(worker.total == 0);
  CHECK(worker.off_cpu_ns == 690);
  uint64_t sleeping = 0;
  for (uint64_t ns : worker.off_cpu[uint8_t(capture::OffCpuState::kSleeping)]) sleeping += ns;
  CHECK(sleeping == 390);
  std::string cells;
  for (const Lane* lane : {&app, &worker}) {
    for (size_t b = 0; b < lanes.bucket_count; ++b) {
      cells += " OSDR?"[size_t(CellOf(lanes, *lane, b))];
    }
    cells += '|';
  }
  // app: [20,90) sleeping outweighs its samples in bucket 0; samples at
  // 109 in bucket 1; [200,500) uninterruptible in buckets 2-4.
  // worker: sleeping [10,400), then nothing, then preempted from 600.
  CHECK(cells == "SODDD     |SSSS RRRR |");
}

TEST_CASE("Syscalls: the slowest calls carry their stacks") {
  auto c = testing::MakeOffCpuCapture();
  for (uint64_t i = 0; i < 3; ++i) {
    c.syscalls.time.push_back(100 + i);
    c.syscalls.duration.push_back(10 * (i + 1));
    c.syscalls.thread.push_back(0);
    c.syscalls.nr.push_back(0);
    c.syscalls.ret.push_back(0);
    c.syscalls.arg0.push_back(0);
    c.syscalls.arg1.push_back(0);
    c.syscalls.arg2.push_back(0);
  }
  SyscallTable none = ComputeSyscalls(c, 2);
  REQUIRE(none.slowest.size() == 2);
  CHECK(none.slowest[0].stack == capture::kNone);
  c.syscalls.stack = {capture::kNone, 3, 2};
  REQUIRE(capture::ValidateCapture(c).ok());
  SyscallTable t = ComputeSyscalls(c, 2);
  REQUIRE(t.slowest.size() == 2);
  CHECK(t.slowest[0].duration_ns == 30);
  CHECK(t.slowest[0].stack == 2);
  CHECK(t.slowest[1].stack == 3);
}
