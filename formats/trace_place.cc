#include "formats/trace_place.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <utility>

#include "analysis/presentation.h"

namespace microscope::formats {
namespace {

using capture::Capture;
using capture::kNone;
using capture::Trace;
using capture::TraceEventKind;
using capture::TraceTrackKind;

std::optional<int32_t> Int(std::string_view s) {
  int32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string SignedDuration(int64_t ns) {
  return (ns < 0 ? "-" : "") + analysis::Duration(uint64_t(ns < 0 ? -ns : ns));
}

// The capture's process with `pid` and, when `tid` is not 0, its thread.
bool HasProcess(const Capture& c, int32_t pid) {
  return std::any_of(c.processes.begin(), c.processes.end(),
                     [&](const capture::Process& p) { return p.pid == pid; });
}
bool HasThread(const Capture& c, int32_t pid, int32_t tid) {
  for (const capture::Thread& t : c.threads) {
    if (t.tid == tid && c.processes[t.process].pid == pid) return true;
  }
  return false;
}

// A probes mark (or a zone's begin) named `name` in the capture: its time,
// pid and tid.
struct CaptureAnchor {
  uint64_t time;
  int32_t pid;
  int32_t tid;
};
std::vector<CaptureAnchor> CaptureAnchors(const Capture& c, const std::string& name) {
  std::vector<CaptureAnchor> out;
  const capture::ProbeRecords& r = c.probe_records;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.op[i] != capture::ProbeOp::kMark && r.op[i] != capture::ProbeOp::kBegin) continue;
    if (c.str(c.probe_sites.name[r.site[i]]) != name) continue;
    const capture::Thread& t = c.threads[r.thread[i]];
    out.push_back({r.time[i], c.processes[t.process].pid, t.tid});
  }
  return out;
}

struct Placement {
  std::string clock;
  std::string note;
  int64_t offset = 0;
  std::optional<uint64_t> uncertainty;
  // The anchor's two sides: the trace's track and the capture's thread.
  std::optional<uint32_t> anchor_track;
  int32_t anchor_pid = 0;
  int32_t anchor_tid = 0;
};

Result<Placement> ByAnchor(const Capture& c, const ParsedTrace& p, const std::string& name) {
  const capture::Trace& t = p.trace;
  std::vector<size_t> events;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] != TraceEventKind::kCounter && t.str(t.events.name[i]) == name)
      events.push_back(i);
  }
  std::vector<CaptureAnchor> marks = CaptureAnchors(c, name);
  if (events.empty() || marks.empty()) {
    return Status::Error(StatusCode::kNotFound,
                         "--anchor " + name + ": " + std::to_string(events.size()) +
                             " events of that name in the trace and " +
                             std::to_string(marks.size()) +
                             " probes marks or zones in the capture (both sides need one)");
  }
  // Paired in time order; each pair's offset puts the trace's event (a
  // span: its middle) at the mark. The mark was taken inside the span, so
  // half the span is how far off a pair may be.
  const size_t pairs = std::min(events.size(), marks.size());
  std::vector<int64_t> offsets;
  uint64_t half = 0;
  for (size_t k = 0; k < pairs; ++k) {
    const size_t e = events[k];
    const uint64_t d = t.events.duration[e];
    offsets.push_back(int64_t(marks[k].time) - (p.own_start[e] + int64_t(d / 2)));
    half = std::max(half, (d + 1) / 2);
  }
  std::vector<int64_t> sorted = offsets;
  std::sort(sorted.begin(), sorted.end());
  Placement out;
  out.clock = "anchor";
  out.offset = sorted[sorted.size() / 2];
  uint64_t spread = 0;
  for (int64_t o : offsets)
    spread = std::max<uint64_t>(spread, uint64_t(std::llabs(o - out.offset)));
  const bool spans = t.events.kind[events[0]] == TraceEventKind::kSpan;
  if (spans || pairs > 1) out.uncertainty = half + spread + p.resolution_ns;
  out.note = "by the anchor \"" + name + "\": " + std::to_string(pairs) + " of the trace's " +
             std::to_string(events.size()) + (spans ? " spans" : " instants") + " paired with " +
             std::to_string(marks.size()) + " probes marks in the capture";
  if (events.size() != marks.size()) out.note += " (paired in time order, the rest unpaired)";
  if (!out.uncertainty) {
    out.note += "; one instant each side: the time between the program's two calls is not known";
  } else if (spans) {
    out.note += "; each mark lies inside its span, placed at the span's middle";
  }
  out.anchor_track = t.events.track[events[0]];
  out.anchor_pid = marks[0].pid;
  out.anchor_tid = marks[0].tid;
  return out;
}

Result<Placement> Place(const Capture& c, const ParsedTrace& p, const PlaceOptions& o) {
  const int chosen = int(!o.clock.empty()) + int(o.offset.has_value()) + int(!o.anchor.empty());
  if (chosen > 1) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "give one of --clock, --offset and --anchor: each places the trace alone");
  }
  const capture::Settings& s = c.settings;
  if (!o.anchor.empty()) return ByAnchor(c, p, o.anchor);
  Placement out;
  if (o.offset) {
    out.clock = "offset";
    out.offset = int64_t(s.start_time) + *o.offset;
    out.note = "the trace's zero at the recording's start " +
               std::string(*o.offset < 0 ? "minus " : "plus ") +
               analysis::Duration(uint64_t(std::llabs(*o.offset))) + ", as given (--offset)";
    return out;
  }
  if (o.clock == "monotonic") {
    out.clock = "monotonic";
    out.offset = 0;
    out.uncertainty = p.resolution_ns;
    out.note =
        "the trace's times read as CLOCK_MONOTONIC of the recording's boot (--clock "
        "monotonic), as Chrome and Node write them on Linux";
    return out;
  }
  const bool realtime = o.clock == "realtime";
  const bool base = o.clock.empty() && p.base_time.has_value();
  if (realtime || base) {
    if (!s.realtime_start) {
      if (realtime) {
        return Status::Error(StatusCode::kInvalidArgument,
                             "--clock realtime: the capture does not know its wall-clock start "
                             "(recorded before microscope 2.9, or imported)");
      }
      out.clock = std::string(capture::kTraceClockOwnAxis);
      out.note =
          "the trace states its wall-clock base (baseTimeNanoseconds) but the capture "
          "does not know its own wall-clock start: kept on its own axis";
    } else {
      const int64_t zero = base ? *p.base_time : 0;
      out.clock = base ? "base-time" : "realtime";
      out.offset = zero + int64_t(s.start_time) - int64_t(*s.realtime_start);
      // The capture's wall-clock and monotonic clocks were read back to
      // back (well under a microsecond apart); the trace's times are as
      // fine as it wrote them.
      out.uncertainty = p.resolution_ns + 1000;
      out.note = std::string(base ? "by the trace's baseTimeNanoseconds"
                                  : "the trace's times "
                                    "read as wall-clock "
                                    "time (--clock realtime)") +
                 " against the recording's wall-clock start; a step or slew of the wall clock "
                 "between the two tools' readings (NTP) is not measured";
      return out;
    }
  } else if (o.clock == "own-axis" || o.clock.empty()) {
    out.clock = std::string(capture::kTraceClockOwnAxis);
    out.note = o.clock.empty()
                   ? "the trace states no clock (no baseTimeNanoseconds): kept on its own axis; "
                     "place it with --anchor NAME, --offset TIME or --clock monotonic|realtime"
                   : "kept on its own axis, as asked (--clock own-axis)";
  } else {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--clock " + o.clock + ": expected monotonic, realtime or own-axis");
  }
  // Its own axis: from its first event at 0.
  int64_t first = 0;
  if (!p.own_start.empty()) first = *std::min_element(p.own_start.begin(), p.own_start.end());
  out.offset = -first;
  return out;
}

}  // namespace

Result<TraceMap> ParseTraceMap(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--map " + std::string(text) + ": " + why +
                             " (expected NAME=PID or NAME=PID:TID, NAME the trace's pid, or "
                             "pid/tid)");
  };
  const size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0) return bad("no NAME=");
  TraceMap m;
  std::string_view name = text.substr(0, eq);
  std::string_view ids = text.substr(eq + 1);
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos) {
    m.trace_tid = std::string(name.substr(slash + 1));
    name = name.substr(0, slash);
  }
  m.trace_pid = std::string(name);
  std::string_view pid = ids, tid;
  if (size_t colon = ids.find(':'); colon != std::string_view::npos) {
    pid = ids.substr(0, colon);
    tid = ids.substr(colon + 1);
  }
  std::optional<int32_t> p = Int(pid);
  if (!p || *p <= 0) return bad("PID is not a process id");
  m.pid = *p;
  if (!tid.empty()) {
    std::optional<int32_t> t = Int(tid);
    if (!t || *t <= 0) return bad("TID is not a thread id");
    m.tid = *t;
  }
  return m;
}

Result<capture::Trace> PlaceTrace(const Capture& capture, ParsedTrace parsed,
                                  const PlaceOptions& options) {
  for (size_t i = 0; i < capture.traces.size(); ++i) {
    if (!options.digest.empty() && capture.traces[i].digest == options.digest) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "the capture holds this trace already (traces[" + std::to_string(i) +
                               "], imported from " + capture.traces[i].path +
                               ", the same SHA-256): imported twice, its tracks would be twice");
    }
  }
  ASSIGN_OR_RETURN(Placement place, Place(capture, parsed, options));
  Trace t = std::move(parsed.trace);
  t.path = options.path;
  t.digest = options.digest;
  t.imported_at = options.imported_at;
  t.clock = place.clock;
  t.clock_note = place.note;
  t.offset = place.offset;
  t.uncertainty = place.uncertainty;
  size_t outside = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    int64_t at = 0;
    if (__builtin_add_overflow(parsed.own_start[i], place.offset, &at) || at < 0) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "event " + std::to_string(i) + " would be placed " + SignedDuration(at) +
                               " from the clock's zero (" + place.note +
                               "): the placement cannot be right");
    }
    t.events.start[i] = uint64_t(at);
    if (!t.OwnAxis() && (t.events.start[i] < capture.settings.start_time ||
                         t.events.EndAt(i) > capture.settings.end_time)) {
      ++outside;
    }
  }
  if (outside > 0) {
    t.notes.push_back(std::to_string(outside) + " of " + std::to_string(t.events.size()) +
                      " events lie (in part) outside the recording's window");
  }
  // The capture's processes and threads: the user's maps first, then the
  // anchor's, then the trace's own numbers.
  for (const TraceMap& m : options.maps) {
    if (!HasProcess(capture, m.pid)) {
      return Status::Error(StatusCode::kNotFound,
                           "--map: the capture has no process " + std::to_string(m.pid));
    }
    if (m.tid != 0 && !HasThread(capture, m.pid, m.tid)) {
      return Status::Error(StatusCode::kNotFound, "--map: the capture's process " +
                                                      std::to_string(m.pid) + " has no thread " +
                                                      std::to_string(m.tid));
    }
    bool any = false;
    for (capture::TraceTrack& k : t.tracks) {
      if (k.trace_pid != m.trace_pid || (!m.trace_tid.empty() && k.trace_tid != m.trace_tid))
        continue;
      any = true;
      k.pid = m.pid;
      const bool threadish = k.kind == TraceTrackKind::kThread || k.kind == TraceTrackKind::kDevice;
      k.tid = threadish && m.tid != 0 ? m.tid : 0;
      k.mapped_by = "user";
    }
    if (!any) {
      return Status::Error(StatusCode::kNotFound,
                           "--map: the trace has no process \"" + m.trace_pid + "\"" +
                               (m.trace_tid.empty() ? "" : " with thread \"" + m.trace_tid + "\""));
    }
  }
  if (place.anchor_track) {
    const capture::TraceTrack anchor = t.tracks[*place.anchor_track];
    for (capture::TraceTrack& k : t.tracks) {
      if (!k.mapped_by.empty() || k.trace_pid != anchor.trace_pid) continue;
      k.pid = place.anchor_pid;
      k.mapped_by = "anchor";
      if (k.kind == TraceTrackKind::kThread && k.trace_tid == anchor.trace_tid)
        k.tid = place.anchor_tid;
    }
  }
  if (!t.OwnAxis()) {
    for (capture::TraceTrack& k : t.tracks) {
      if (!k.mapped_by.empty() || k.kind == TraceTrackKind::kDevice) continue;
      std::optional<int32_t> pid = Int(k.trace_pid);
      if (!pid || *pid <= 1 || !HasProcess(capture, *pid)) continue;
      k.pid = *pid;
      k.mapped_by = "pid";
      std::optional<int32_t> tid = Int(k.trace_tid);
      if (k.kind == TraceTrackKind::kThread && tid && HasThread(capture, *pid, *tid)) k.tid = *tid;
    }
  }
  return t;
}

}  // namespace microscope::formats
