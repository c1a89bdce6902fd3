#include "analysis/traces.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace microscope::analysis {
namespace {

using capture::Capture;
using capture::kNone;
using capture::Trace;
using capture::TraceEventKind;

std::string TrackName(const capture::TraceTrack& k) {
  return k.group + " / " + k.name;
}

uint64_t Rank(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t r = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::clamp<size_t>(r, 1, sorted.size()) - 1];
}

// The capture's threads a trace track stands for: its pid and tid.
std::vector<capture::ThreadId> ThreadsOf(const Capture& c, const capture::TraceTrack& k) {
  std::vector<capture::ThreadId> out;
  if (k.pid == 0 || k.tid == 0) return out;
  for (size_t i = 0; i < c.threads.size(); ++i) {
    const capture::Thread& t = c.threads[i];
    if (t.tid == k.tid && c.processes[t.process].pid == k.pid) out.push_back(capture::ThreadId(i));
  }
  return out;
}

// For each sample of `threads` the filter keeps, the innermost span of the
// track (its events `spans`, in start order) open at its time, counted.
void CountSamples(const Capture& c, const Trace& t, const std::vector<uint32_t>& spans,
                  const std::vector<bool>& wanted, const SampleFilter& filter,
                  std::vector<uint64_t>* per_event) {
  std::vector<uint32_t> open;
  size_t next = 0;
  const capture::Samples& s = c.samples;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!wanted[s.thread[i]] || !filter.Keep(c, i)) continue;
    const uint64_t at = s.time[i];
    while (next < spans.size() && t.events.start[spans[next]] <= at) {
      const uint32_t e = spans[next++];
      while (!open.empty() && t.events.EndAt(open.back()) <= t.events.start[e]) open.pop_back();
      open.push_back(e);
    }
    while (!open.empty() && t.events.EndAt(open.back()) <= at) open.pop_back();
    if (!open.empty()) (*per_event)[open.back()] += s.CountAt(i);
  }
}

}  // namespace

ReportTraces BuildTracesReport(const Capture& c, size_t top, const SampleFilter& filter) {
  ReportTraces out;
  uint64_t all_samples = 0;
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (filter.Keep(c, i)) all_samples += c.samples.CountAt(i);
  }
  for (size_t ti = 0; ti < c.traces.size(); ++ti) {
    const Trace& t = c.traces[ti];
    ReportTraceSource src;
    src.path = t.path;
    src.format = t.format;
    src.tool = t.tool;
    src.clock = t.clock;
    src.clock_note = t.clock_note;
    src.uncertainty_ns = t.uncertainty;
    src.events = t.events.size();
    src.tracks = t.tracks.size();
    for (const capture::TraceTrack& k : t.tracks) src.mapped_tracks += k.pid != 0;
    src.flows = t.flows.size();
    src.skipped = t.skipped;
    src.notes = t.notes;
    out.sources.push_back(std::move(src));

    // Samples inside each span, on the tracks mapped to a thread.
    std::vector<uint64_t> samples(t.events.size(), 0);
    if (!t.OwnAxis()) {
      std::map<uint32_t, std::vector<uint32_t>> spans_by_track;
      for (size_t e = 0; e < t.events.size(); ++e) {
        if (t.events.kind[e] == TraceEventKind::kSpan)
          spans_by_track[t.events.track[e]].push_back(uint32_t(e));
      }
      for (const auto& [track, spans] : spans_by_track) {
        std::vector<capture::ThreadId> threads = ThreadsOf(c, t.tracks[track]);
        if (threads.empty()) continue;
        std::vector<bool> wanted(c.threads.size(), false);
        for (capture::ThreadId th : threads) wanted[th] = true;
        CountSamples(c, t, spans, wanted, filter, &samples);
      }
    }
    std::map<uint32_t, std::vector<uint32_t>> by_name;  // name -> events
    for (size_t e = 0; e < t.events.size(); ++e) {
      if (t.events.kind[e] == TraceEventKind::kSpan)
        by_name[t.events.name[e]].push_back(uint32_t(e));
    }
    for (const auto& [name, events] : by_name) {
      ReportSpanRow row;
      row.trace = ti;
      row.name = t.str(name);
      row.track = TrackName(t.tracks[t.events.track[events[0]]]);
      std::vector<uint64_t> durations;
      for (uint32_t e : events) {
        durations.push_back(t.events.duration[e]);
        row.total_ns += t.events.duration[e];
        row.samples += samples[e];
        if (t.events.track[e] != t.events.track[events[0]]) row.track = "several";
      }
      std::sort(durations.begin(), durations.end());
      row.count = events.size();
      row.mean_ns = row.total_ns / row.count;
      row.p50_ns = Rank(durations, 0.50);
      row.p90_ns = Rank(durations, 0.90);
      row.p99_ns = Rank(durations, 0.99);
      row.max_ns = durations.back();
      row.sample_percent = all_samples ? 100.0 * double(row.samples) / double(all_samples) : 0;
      out.spans.push_back(std::move(row));
    }
  }
  std::stable_sort(out.spans.begin(), out.spans.end(),
                   [](const ReportSpanRow& a, const ReportSpanRow& b) {
                     if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
                     if (a.trace != b.trace) return a.trace < b.trace;
                     return a.name < b.name;
                   });
  out.shown = std::min(top, out.spans.size());
  return out;
}

std::vector<TraceLane> ComputeTraceLanes(const Capture& c, uint64_t start, uint64_t bucket_ns,
                                         size_t buckets) {
  std::vector<TraceLane> out;
  if (bucket_ns == 0 || buckets == 0) return out;
  const uint64_t end = start + bucket_ns * buckets;
  for (size_t ti = 0; ti < c.traces.size(); ++ti) {
    const Trace& t = c.traces[ti];
    if (t.OwnAxis()) continue;
    std::vector<TraceLane> lanes(t.tracks.size());
    for (size_t k = 0; k < t.tracks.size(); ++k) {
      TraceLane& l = lanes[k];
      l.trace = ti;
      l.track = uint32_t(k);
      l.name = TrackName(t.tracks[k]);
      l.kind = t.tracks[k].kind;
      l.pid = t.tracks[k].pid;
      l.tid = t.tracks[k].tid;
      l.covered.assign(buckets, 0.0f);
      l.instant_counts.assign(buckets, 0);
      l.counter_max.assign(buckets, std::numeric_limits<double>::quiet_NaN());
    }
    const capture::TraceEvents& ev = t.events;
    for (size_t e = 0; e < ev.size(); ++e) {
      TraceLane& l = lanes[ev.track[e]];
      const uint64_t s = ev.start[e];
      const uint64_t f = ev.EndAt(e);
      if (f < start || s >= end) continue;
      switch (ev.kind[e]) {
        case TraceEventKind::kSpan: {
          ++l.spans;
          if (ev.DepthAt(e) != 0) break;  // inside an outer span: covered already
          const uint64_t from = std::max(s, start), to = std::min(f, end);
          for (uint64_t b = (from - start) / bucket_ns; b < buckets; ++b) {
            const uint64_t b0 = start + b * bucket_ns, b1 = b0 + bucket_ns;
            if (b0 >= to) break;
            const uint64_t part = std::min(to, b1) - std::max(from, b0);
            l.covered[b] = std::min(1.0f, l.covered[b] + float(double(part) / double(bucket_ns)));
          }
          break;
        }
        case TraceEventKind::kInstant:
          ++l.instants;
          ++l.instant_counts[(s - start) / bucket_ns];
          break;
        case TraceEventKind::kCounter: {
          ++l.values;
          double& m = l.counter_max[(s - start) / bucket_ns];
          const double v = ev.ValueAt(e);
          if (std::isnan(m) || v > m) m = v;
          break;
        }
      }
    }
    for (TraceLane& l : lanes) {
      if (l.spans + l.instants + l.values > 0) out.push_back(std::move(l));
    }
  }
  return out;
}

}  // namespace microscope::analysis
