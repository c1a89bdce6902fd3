#include "src/record/snapshot_trigger.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/duration.h"

namespace microscope::record {

namespace {

constexpr std::string_view kForms =
    "counter:NAME>VALUE, counter:NAME<VALUE, zone:NAME>TIME (e.g. zone:request>50ms) or mark:NAME";

Status Bad(std::string_view text, std::string_view why) {
  return Status::Error("--snapshot-when '" + std::string(text) + "': " + std::string(why) +
                       " (the forms: " + std::string(kForms) + ")");
}

std::string Number(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Result<SnapshotTrigger> ParseSnapshotTrigger(std::string_view text) {
  SnapshotTrigger t;
  t.text = std::string(text);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return Bad(text, "no kind before ':'");
  const std::string_view kind = text.substr(0, colon);
  std::string_view rest = text.substr(colon + 1);
  if (kind == "mark") {
    if (rest.empty()) return Bad(text, "no mark name");
    t.kind = capture::ProbeKind::kMark;
    t.name = std::string(rest);
    return t;
  }
  if (kind != "counter" && kind != "zone")
    return Bad(text, "unknown kind '" + std::string(kind) + "'");
  const size_t op = rest.find_last_of("<>");
  if (op == std::string_view::npos || op == 0 || op + 1 == rest.size())
    return Bad(text, "expected NAME>VALUE");
  t.name = std::string(rest.substr(0, op));
  t.above = rest[op] == '>';
  const std::string_view value = rest.substr(op + 1);
  if (kind == "zone") {
    if (!t.above) return Bad(text, "a zone fires when it lasted longer than a time: use '>'");
    Result<uint64_t> ns = ParseDuration(value);
    if (!ns.ok()) return Bad(text, ns.status().message());
    t.kind = capture::ProbeKind::kZone;
    t.threshold = double(*ns);
    return t;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(v))
    return Bad(text, "'" + std::string(value) + "' is not a number");
  t.kind = capture::ProbeKind::kCounter;
  t.threshold = v;
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
  for (const SnapshotTrigger& t : triggers_) {
    if (t.name != name) continue;
    switch (t.kind) {
      case capture::ProbeKind::kCounter:
        if (op == capture::ProbeOp::kCounter &&
            (t.above ? value > t.threshold : value < t.threshold))
          Fire(time, t.text + " (the counter was " + Number(value) + ")");
        break;
      case capture::ProbeKind::kZone:
        if (op == capture::ProbeOp::kEnd && double(lasted) > t.threshold)
          Fire(time, t.text + " (the zone lasted " + Number(double(lasted) / 1e6) + " ms)");
        break;
      case capture::ProbeKind::kMark:
        if (op == capture::ProbeOp::kMark) Fire(time, t.text);
        break;
      case capture::ProbeKind::kLabel:
        break;
    }
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
