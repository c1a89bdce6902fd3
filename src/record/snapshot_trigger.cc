#include "src/record/snapshot_trigger.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/duration.h"

namespace microscope::record {

namespace {

constexpr std::string_view kForms =
    "counter:NAME>VALUE, counter:NAME<VALUE, zone:NAME>TIME (e.g. zone:request>50ms), mark:NAME, "
    "cpu:THREAD>PERCENT (of one CPU over the last second), offcpu:STATE>TIME (sleeping, "
    "uninterruptible, preempted or other, in the last second) or lost>N (records)";

Status Bad(std::string_view text, std::string_view why) {
  return Status::Error("--snapshot-when '" + std::string(text) + "': " + std::string(why) +
                       " (the forms: " + std::string(kForms) + ")");
}

std::string Number(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

Result<SnapshotTrigger> ParseSnapshotTrigger(std::string_view text) {
  using Kind = SnapshotTrigger::Kind;
  SnapshotTrigger t;
  t.text = std::string(text);
  const size_t op = text.find_last_of("<>");
  const size_t colon = text.find(':');
  const std::string_view kind =
      Trim(text.substr(0, std::min(colon, op == std::string_view::npos ? text.size() : op)));
  if (kind == "mark") {
    const std::string_view name =
        colon == std::string_view::npos ? "" : Trim(text.substr(colon + 1));
    if (name.empty()) return Bad(text, "no mark name");
    t.kind = Kind::kMark;
    t.name = std::string(name);
    return t;
  }
  if (kind != "counter" && kind != "zone" && kind != "cpu" && kind != "lost" && kind != "offcpu")
    return Bad(text, "unknown kind '" + std::string(kind) + "'");
  if (op == std::string_view::npos) return Bad(text, "expected a comparison (> or <)");
  if (kind == "lost") {
    if (colon != std::string_view::npos && colon < op) return Bad(text, "lost takes no name");
  } else {
    if (colon == std::string_view::npos || colon > op) return Bad(text, "no name after ':'");
    t.name = std::string(Trim(text.substr(colon + 1, op - colon - 1)));
    if (t.name.empty()) return Bad(text, "no name after ':'");
  }
  t.above = text[op] == '>';
  std::string_view value = Trim(text.substr(op + 1));
  if (value.empty()) return Bad(text, "no value after the comparison");
  if (kind != "counter" && !t.above) return Bad(text, "it fires above a value: use '>'");
  if (kind == "offcpu") {
    bool known = false;
    for (uint8_t s = 0; s <= uint8_t(capture::OffCpuState::kOther); ++s) {
      if (t.name == capture::OffCpuStateName(capture::OffCpuState(s))) {
        t.state = capture::OffCpuState(s);
        known = true;
      }
    }
    if (!known) {
      return Bad(
          text, "no off-CPU state '" + t.name + "': sleeping, uninterruptible, preempted or other");
    }
  }
  if (kind == "zone" || kind == "offcpu") {
    Result<uint64_t> ns = ParseDuration(value);
    if (!ns.ok()) return Bad(text, ns.status().message());
    t.kind = kind == "zone" ? Kind::kZone : Kind::kOffCpu;
    t.threshold = double(*ns);
    return t;
  }
  const bool percent = kind == "cpu";
  if (percent) {
    if (value.back() != '%') return Bad(text, "a share of one CPU in percent, e.g. 80%");
    value.remove_suffix(1);
  }
  double v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(v))
    return Bad(text, "'" + std::string(value) + "' is not a number");
  t.kind = kind == "counter" ? Kind::kCounter : percent ? Kind::kCpu : Kind::kLost;
  t.threshold = percent ? v / 100 : v;
  return t;
}

void TriggerWatch::Record(uint64_t time, uint32_t thread, uint32_t site, std::string_view name,
                          capture::ProbeOp op, double value) {
  uint64_t lasted = 0;
  if (op == capture::ProbeOp::kBegin || op == capture::ProbeOp::kEnd) {
    std::vector<uint64_t>& begins = open_[{thread, site}];
    if (op == capture::ProbeOp::kBegin) {
      if (begins.size() < 256) begins.push_back(time);  // a program's runaway nesting stays bounded
      return;
    }
    if (begins.empty()) return;  // its begin came before the recording
    lasted = time >= begins.back() ? time - begins.back() : 0;
    begins.pop_back();
    if (begins.empty()) open_.erase({thread, site});
  }
  using Kind = SnapshotTrigger::Kind;
  for (const SnapshotTrigger& t : triggers_) {
    if (t.name != name) continue;
    if (t.kind == Kind::kCounter && op == capture::ProbeOp::kCounter &&
        (t.above ? value > t.threshold : value < t.threshold)) {
      Fire(time, t.text + " (the counter was " + Number(value) + ")");
    } else if (t.kind == Kind::kZone && op == capture::ProbeOp::kEnd &&
               double(lasted) > t.threshold) {
      Fire(time, t.text + " (the zone lasted " + Number(double(lasted) / 1e6) + " ms)");
    } else if (t.kind == Kind::kMark && op == capture::ProbeOp::kMark) {
      Fire(time, t.text);
    }
  }
}

bool TriggerWatch::Watches(SnapshotTrigger::Kind kind) const {
  return std::any_of(triggers_.begin(), triggers_.end(),
                     [&](const SnapshotTrigger& t) { return t.kind == kind; });
}

namespace {
constexpr uint64_t kSecond = 1'000'000'000;
}  // namespace

uint64_t TriggerWatch::Slide(size_t trigger, uint64_t time, uint64_t weight) {
  Window& w = windows_[trigger];
  w.samples.emplace_back(time, weight);
  w.sum += weight;
  while (!w.samples.empty() && w.samples.front().first + kSecond <= time) {
    w.sum -= w.samples.front().second;
    w.samples.pop_front();
  }
  return w.sum;
}

void TriggerWatch::Sample(uint64_t time, std::string_view thread_name, uint64_t weight_ns) {
  for (size_t i = 0; i < triggers_.size(); ++i) {
    const SnapshotTrigger& t = triggers_[i];
    if (t.kind != SnapshotTrigger::Kind::kCpu || t.name != thread_name) continue;
    const double share = double(Slide(i, time, weight_ns)) / double(kSecond);
    if (share > t.threshold)
      Fire(time, t.text + " (" + Number(100 * share) + "% of one CPU over the last second)");
  }
}

void TriggerWatch::OffCpu(uint64_t start, uint64_t end, capture::OffCpuState state) {
  if (end < start) return;
  for (size_t i = 0; i < triggers_.size(); ++i) {
    const SnapshotTrigger& t = triggers_[i];
    if (t.kind != SnapshotTrigger::Kind::kOffCpu || t.state != state) continue;
    const uint64_t sum = Slide(i, end, end - start);
    if (double(sum) > t.threshold) {
      Fire(end, t.text + " (" + Number(double(sum) / 1e6) + " ms " + t.name +
                    " in the intervals that ended in the last second)");
    }
  }
}

void TriggerWatch::Lost(uint64_t time, uint64_t lost_records) {
  for (const SnapshotTrigger& t : triggers_) {
    if (t.kind == SnapshotTrigger::Kind::kLost && double(lost_records) > t.threshold)
      Fire(time, t.text + " (" + std::to_string(lost_records) + " records lost)");
  }
}

void TriggerWatch::Fire(uint64_t time, std::string why) {
  if ((last_taken_ && time < *last_taken_ + min_interval_ns_) || fired_.size() >= kMaxPending) {
    ++held_back_;
    return;
  }
  last_taken_ = time;
  ++taken_;
  fired_.push_back(std::move(why));
}

}  // namespace microscope::record
