#include <doctest.h>

#include "src/record/snapshot_trigger.h"

using microscope::capture::ProbeOp;
using microscope::record::ParseSnapshotTrigger;
using Kind = microscope::record::SnapshotTrigger::Kind;
using microscope::record::TriggerWatch;

TEST_CASE("Snapshot triggers: the three forms, and each malformed one named") {
  auto c = ParseSnapshotTrigger("counter:queue depth>1.5e3");
  REQUIRE(c.ok());
  CHECK(c->kind == Kind::kCounter);
  CHECK(c->name == "queue depth");
  CHECK(c->above);
  CHECK(c->threshold == 1500);
  auto below = ParseSnapshotTrigger("counter:free<10");
  REQUIRE(below.ok());
  CHECK_FALSE(below->above);
  auto z = ParseSnapshotTrigger("zone:request>50ms");
  REQUIRE(z.ok());
  CHECK(z->kind == Kind::kZone);
  CHECK(z->threshold == 50e6);
  auto m = ParseSnapshotTrigger("mark:oops");
  REQUIRE(m.ok());
  CHECK(m->kind == Kind::kMark);
  auto spaced = ParseSnapshotTrigger("counter:queue_depth > 1000");
  REQUIRE(spaced.ok());
  CHECK(spaced->name == "queue_depth");
  CHECK(spaced->threshold == 1000);
  auto cpu = ParseSnapshotTrigger("cpu:worker > 80%");
  REQUIRE(cpu.ok());
  CHECK(cpu->kind == Kind::kCpu);
  CHECK(cpu->name == "worker");
  CHECK(cpu->threshold == doctest::Approx(0.8));
  auto lost = ParseSnapshotTrigger("lost>100");
  REQUIRE(lost.ok());
  CHECK(lost->kind == Kind::kLost);
  CHECK(lost->threshold == 100);
  for (const char* bad : {"request>5", "zone:r<5ms", "zone:r>soon", "counter:n>", "counter:>3",
                          "counter:n>1x", "mark:", "cpu:x>1", "counter:n>inf", "net:x>1",
                          "cpu:x<5%", "lost:x>3", "lost>", "zone>3ms"}) {
    CAPTURE(bad);
    auto r = ParseSnapshotTrigger(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(bad) != std::string::npos);
  }
}

TEST_CASE("Snapshot triggers: zones by their own thread's begin, at most one per interval") {
  TriggerWatch w({*ParseSnapshotTrigger("zone:req>10ms"), *ParseSnapshotTrigger("mark:oops")},
                 100'000'000);
  // Thread 1 nests req in req: the inner lasts 5 ms, the outer 30 ms.
  w.Record(0, 1, 7, "req", ProbeOp::kBegin, 0);
  w.Record(1'000'000, 1, 7, "req", ProbeOp::kBegin, 0);
  w.Record(2'000'000, 2, 7, "req", ProbeOp::kBegin, 0);  // another thread's, never ended
  w.Record(6'000'000, 1, 7, "req", ProbeOp::kEnd, 0);
  CHECK(w.TakeFired().empty());
  w.Record(30'000'000, 1, 7, "req", ProbeOp::kEnd, 0);
  auto fired = w.TakeFired();
  REQUIRE(fired.size() == 1);
  CHECK(fired[0] == "zone:req>10ms (the zone lasted 30 ms)");
  // A mark 50 ms later is held back; one 150 ms after the first is taken.
  w.Record(80'000'000, 1, 9, "oops", ProbeOp::kMark, 0);
  CHECK(w.TakeFired().empty());
  w.Record(140'000'000, 1, 9, "oops", ProbeOp::kMark, 0);
  CHECK(w.TakeFired() == std::vector<std::string>{"mark:oops"});
  CHECK(w.taken() == 2);
  CHECK(w.held_back() == 1);
  // An end without its begin (before the recording) fires nothing.
  w.Record(900'000'000, 3, 7, "req", ProbeOp::kEnd, 0);
  CHECK(w.TakeFired().empty());
}

TEST_CASE("Snapshot triggers: a thread's CPU share over the last second, and lost records") {
  TriggerWatch w({*ParseSnapshotTrigger("cpu:worker>50%"), *ParseSnapshotTrigger("lost>10")}, 0);
  // 10 ms samples: 40 in the first second (40%), then every 10 ms: past 50%
  // once 51 of them are in one second.
  uint64_t t = 0;
  for (int i = 0; i < 40; ++i, t += 25'000'000) w.Sample(t, "worker", 10'000'000);
  w.Sample(t, "other", 900'000'000);  // another thread's time is not the worker's
  CHECK(w.TakeFired().empty());
  std::vector<std::string> fired;
  for (int i = 0; i < 100 && fired.empty(); ++i, t += 10'000'000) {
    w.Sample(t, "worker", 10'000'000);
    fired = w.TakeFired();
  }
  REQUIRE(fired.size() == 1);
  CHECK(fired[0].find("% of one CPU over the last second") != std::string::npos);
  w.Lost(t, 10);
  CHECK(w.TakeFired().empty());
  w.Lost(t + 1, 11);
  auto f = w.TakeFired();
  REQUIRE(f.size() == 1);
  CHECK(f[0] == "lost>10 (11 records lost)");
}

TEST_CASE("Snapshot triggers: time off CPU in one state over the last second") {
  auto parsed = ParseSnapshotTrigger("offcpu:uninterruptible > 200ms");
  REQUIRE(parsed.ok());
  CHECK(parsed->kind == SnapshotTrigger::Kind::kOffCpu);
  CHECK(parsed->state == capture::OffCpuState::kUninterruptible);
  CHECK(parsed->threshold == 200'000'000);
  for (const char* bad : {"offcpu:asleep>1ms", "offcpu:sleeping<1ms", "offcpu:sleeping>soon",
                          "offcpu:>5ms", "offcpu:blocked>1ms"}) {
    CAPTURE(bad);
    auto r = ParseSnapshotTrigger(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(bad) != std::string::npos);
  }
  TriggerWatch w({*parsed}, 0);
  // 50 ms waits on the disk every 300 ms: 150 ms in a second at most.
  uint64_t t = 1'000'000'000;
  for (int i = 0; i < 10; ++i, t += 300'000'000) {
    w.OffCpu(t, t + 50'000'000, capture::OffCpuState::kUninterruptible);
    w.OffCpu(t, t + 250'000'000, capture::OffCpuState::kSleeping);  // another state's time
  }
  CHECK(w.TakeFired().empty());
  // Then every 100 ms: past 200 ms once five of them ended within a second.
  std::vector<std::string> fired;
  int waits = 0;
  while (waits < 20 && fired.empty()) {
    w.OffCpu(t, t + 50'000'000, capture::OffCpuState::kUninterruptible);
    ++waits;
    t += 100'000'000;
    fired = w.TakeFired();
  }
  REQUIRE(fired.size() == 1);
  CHECK(waits == 3);  // two of the 300 ms rhythm (3.45 s, 3.75 s) and these three: 250 ms
  CHECK(fired[0].find("250 ms uninterruptible") != std::string::npos);
}
