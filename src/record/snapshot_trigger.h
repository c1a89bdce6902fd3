// record --snapshot-when: a rolling or continuous recording takes a
// snapshot when the program's own probes (sdk/) say something happened:
//   counter:NAME>VALUE   a counter set above VALUE (or <VALUE: below)
//   zone:NAME>TIME       a zone that ended after lasting more than TIME
//   mark:NAME            a mark reached
//   cpu:THREAD>PERCENT   threads of that name used more than PERCENT of one
//                        CPU over the last second of samples
//   offcpu:STATE>TIME    the target's threads were off CPU in STATE
//                        (sleeping, uninterruptible, preempted, other) for
//                        more than TIME in the intervals that ended in the
//                        last second, each counted whole (needs --off-cpu)
//   lost>N               more than N records lost since the start
// (spaces around the operator are allowed)
// At most one snapshot per --snapshot-min-interval (default 10s): what
// fires again sooner is counted, not taken.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::record {

struct SnapshotTrigger {
  enum class Kind { kCounter, kZone, kMark, kCpu, kLost, kOffCpu };
  Kind kind = Kind::kCounter;
  std::string name;
  bool above = true;  // counter: > (true) or <; the others: always >
  // counter: the value; zone, offcpu: ns; cpu: share of one CPU; lost: records
  double threshold = 0;
  capture::OffCpuState state = capture::OffCpuState::kSleeping;  // offcpu
  std::string text;                                              // as given
};

// "counter:NAME>VALUE", "counter:NAME<VALUE", "zone:NAME>TIME" or
// "mark:NAME"; an error says which form was meant.
Result<SnapshotTrigger> ParseSnapshotTrigger(std::string_view text);

class TriggerWatch {
 public:
  TriggerWatch(std::vector<SnapshotTrigger> triggers, uint64_t min_interval_ns)
      : triggers_(std::move(triggers)), min_interval_ns_(min_interval_ns) {}

  // Told of each probe record as it is recorded, with its site's name.
  void Record(uint64_t time, uint32_t thread, uint32_t site, std::string_view name,
              capture::ProbeOp op, double value);
  // Told of each sample, with its thread's name and its weight (ns).
  void Sample(uint64_t time, std::string_view thread_name, uint64_t weight_ns);
  // Told, at each round, of the records lost since the start.
  void Lost(uint64_t time, uint64_t lost_records);
  // Told of each off-CPU interval as it is recorded (at its end).
  void OffCpu(uint64_t start, uint64_t end, capture::OffCpuState state);
  // Whether any trigger watches samples (cpu:), or off-CPU intervals (offcpu:).
  bool WatchesSamples() const { return Watches(SnapshotTrigger::Kind::kCpu); }
  bool WatchesOffCpu() const { return Watches(SnapshotTrigger::Kind::kOffCpu); }
  // What fired since the last call and may be taken now (their reasons),
  // once: more than one when the records of several intervals came in one
  // round (a recorder behind its program).
  std::vector<std::string> TakeFired() { return std::exchange(fired_, {}); }

  uint64_t taken() const { return taken_; }
  uint64_t held_back() const { return held_back_; }

 private:
  void Fire(uint64_t time, std::string why);
  bool Watches(SnapshotTrigger::Kind kind) const;
  // The weights of the last second in a trigger's window, and their sum.
  uint64_t Slide(size_t trigger, uint64_t time, uint64_t weight);
  static constexpr size_t kMaxPending = 16;

  std::vector<SnapshotTrigger> triggers_;
  uint64_t min_interval_ns_;
  std::optional<uint64_t> last_taken_;
  std::vector<std::string> fired_;  // at most kMaxPending
  uint64_t taken_ = 0, held_back_ = 0;
  // Zones begun and not yet ended, by (thread, site): their begin times.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> open_;
  // Per cpu: or offcpu: trigger (by index), the samples or intervals of
  // the last second: (time, weight: ns), and their weights' sum.
  struct Window {
    std::deque<std::pair<uint64_t, uint64_t>> samples;
    uint64_t sum = 0;
  };
  std::map<size_t, Window> windows_;
};

}  // namespace microscope::record
