#include "analysis/markers.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>

#include "analysis/presentation.h"
#include "analysis/syscalls.h"
#include "analysis/zones.h"

namespace microscope::analysis {

using capture::kNone;

const char* MarkerKindName(MarkerKind kind) {
  static const char* const kNames[kMarkerKindCount] = {"zone",    "mark",    "label", "counter",
                                                       "off-cpu", "syscall", "gap"};
  return kNames[size_t(kind)];
}

namespace {

class Collector {
 public:
  Collector(const capture::Capture& c, const SampleFilter& filter, Markers* out)
      : c_(c), filter_(filter), out_(out), origin_(c.settings.start_time) {}

  // Adds [begin, end] (absolute) of `thread` when the filter keeps a point
  // of it inside its range.
  void Add(MarkerKind kind, capture::ThreadId thread, uint64_t begin, uint64_t end,
           std::string name, std::string detail, uint32_t depth = 0) {
    const uint64_t from = std::max(begin, filter_.from()), to = std::min(end, filter_.to());
    if (from > to) return;
    if (thread != kNone && !filter_.KeepPlace(thread, from)) return;
    Marker m;
    m.kind = kind;
    m.tid = thread == kNone ? 0 : c_.threads[thread].tid;
    m.start = begin > origin_ ? begin - origin_ : 0;
    m.end = std::max(m.start, end > origin_ ? end - origin_ : 0);
    m.depth = depth;
    m.name = std::move(name);
    m.detail = std::move(detail);
    out_->rows.push_back(std::move(m));
  }

 private:
  const capture::Capture& c_;
  const SampleFilter& filter_;
  Markers* out_;
  uint64_t origin_;
};

void AddProbes(const capture::Capture& c, Collector& add) {
  if (c.probe_records.size() == 0) return;
  const Zones zones = PairZones(c);
  for (const ZoneOccurrence& z : zones.occurrences) {
    if (z.begin == kUnknownTime) continue;  // an end without its begin: no known place
    uint32_t depth = 0;
    for (uint32_t p = z.parent; p != kNone; p = zones.occurrences[p].parent) ++depth;
    const bool open = z.end == kUnknownTime;
    add.Add(MarkerKind::kZone, z.thread, z.begin, open ? OpenUntil(c, z.thread, z.begin) : z.end,
            c.str(c.probe_sites.name[z.site]),
            open ? "still open at its thread's end" : "self " + Duration(z.self_ns), depth);
  }
  const capture::ProbeRecords& r = c.probe_records;
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string& site = c.str(c.probe_sites.name[r.site[i]]);
    if (r.op[i] == capture::ProbeOp::kMark) {
      const capture::StringId text = r.TextAt(i);
      add.Add(MarkerKind::kMark, r.thread[i], r.time[i], r.time[i], site,
              text == kNone ? "" : c.str(text));
    } else if (r.op[i] == capture::ProbeOp::kCounter) {
      char value[32];
      snprintf(value, sizeof value, "%g", r.ValueAt(i));
      add.Add(MarkerKind::kCounter, r.thread[i], r.time[i], r.time[i], site, value);
    }
  }
  for (const ProbeLabelSpan& l : ProbeLabelSpans(c)) {
    add.Add(MarkerKind::kLabel, l.thread, l.begin,
            l.end == kUnknownTime ? OpenUntil(c, l.thread, l.begin) : l.end, c.str(l.key),
            l.value == kNone ? std::string() : c.str(l.value));
  }
}

void AddOffCpu(const capture::Capture& c, Collector& add, const Cancel& cancel) {
  const capture::OffCpu& o = c.off_cpu;
  for (size_t i = 0; i < o.size(); ++i) {
    if (cancel.At(i)) return;
    std::string detail = capture::OffCpuStateName(o.state[i]);
    if (o.waker_tid[i] != 0) {
      detail += ", woken by ";
      detail += o.waker_name[i] == kNone ? std::string("a thread") : c.str(o.waker_name[i]);
      detail += " (" + std::to_string(o.waker_tid[i]) + ")";
    }
    add.Add(MarkerKind::kOffCpu, o.thread[i], o.start[i], o.end[i], "off CPU", std::move(detail));
  }
}

void AddSyscalls(const capture::Capture& c, Collector& add, const Cancel& cancel) {
  const capture::Syscalls& s = c.syscalls;
  for (size_t i = 0; i < s.size(); ++i) {
    if (cancel.At(i)) return;
    const int64_t ret = s.ret[i];
    add.Add(MarkerKind::kSyscall, s.thread[i], s.time[i], s.time[i] + s.duration[i],
            SyscallName(s.nr[i]),
            ret < 0 ? "returned " + ErrnoName(ret) : "returned " + std::to_string(ret));
  }
}

void AddGaps(const capture::Capture& c, Collector& add) {
  for (const capture::Gap& g : c.gaps) {
    capture::ThreadId thread = kNone;
    if (g.tid != 0) {
      for (capture::ThreadId t = 0; t < c.threads.size(); ++t) {
        if (uint32_t(c.threads[t].tid) == g.tid) thread = t;
      }
    }
    std::string detail = "not known (not idle)";
    if (g.count != 0) detail += ", " + std::to_string(g.count);
    if (g.pid != 0 && g.tid == 0) detail += ", process " + std::to_string(g.pid);
    if (g.cpu >= 0) detail += ", CPU " + std::to_string(g.cpu);
    add.Add(MarkerKind::kGap, thread, g.begin, g.end, std::string(capture::GapCauseName(g.cause)),
            std::move(detail));
  }
}

}  // namespace

Markers ComputeMarkers(const capture::Capture& c, const SampleFilter& filter, size_t max_rows,
                       Cancel cancel) {
  Markers out;
  Collector add(c, filter, &out);
  AddProbes(c, add);
  AddOffCpu(c, add, cancel);
  AddSyscalls(c, add, cancel);
  AddGaps(c, add);
  out.total = out.rows.size();
  if (out.rows.size() > max_rows) {
    // The longest are kept: a short call or a short sleep matters least.
    std::nth_element(
        out.rows.begin(), out.rows.begin() + ptrdiff_t(max_rows), out.rows.end(),
        [](const Marker& a, const Marker& b) { return a.end - a.start > b.end - b.start; });
    out.left_out = out.rows.size() - max_rows;
    out.rows.resize(max_rows);
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const Marker& a, const Marker& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.depth < b.depth;
  });
  return out;
}

}  // namespace microscope::analysis
