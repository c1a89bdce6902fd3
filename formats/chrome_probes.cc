#include "formats/chrome_probes.h"

#include <algorithm>
#include <vector>

#include "analysis/zones.h"
#include "formats/chrome_text.h"

namespace microscope::formats {
namespace {

using capture::kNone;
using capture::ProbeOp;

// Tracks of their own for a thread's zones and labels: thread ids no
// kernel gives (pid_max is at most 2^22), one per thread and track.
constexpr int64_t kTrackBase = 1000000000;
constexpr int64_t kTracksPerThread = 64;

struct Span {
  uint64_t begin;
  uint64_t end;  // UINT64_MAX: not ended
  std::string name;
};

// Spreads spans over as few tracks as keep every track nested: a span goes
// to the first track whose open spans all contain it or are over.
std::vector<std::vector<const Span*>> NestedTracks(std::vector<Span>& spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  std::vector<std::vector<const Span*>> tracks;
  std::vector<std::vector<uint64_t>> open;  // per track, the ends of its open spans
  for (const Span& s : spans) {
    size_t t = 0;
    for (; t < tracks.size(); ++t) {
      std::vector<uint64_t>& ends = open[t];
      while (!ends.empty() && ends.back() <= s.begin) ends.pop_back();
      if (ends.empty() || ends.back() >= s.end) break;
    }
    if (t == tracks.size()) {
      tracks.emplace_back();
      open.emplace_back();
    }
    tracks[t].push_back(&s);
    open[t].push_back(s.end);
  }
  return tracks;
}

}  // namespace

void AppendProbeEvents(const capture::Capture& c, const analysis::SampleFilter& filter,
                       const std::function<void(const std::string&)>& emit) {
  const capture::ProbeRecords& r = c.probe_records;
  if (r.size() == 0) return;
  const uint64_t origin = c.settings.start_time;
  auto since = [&](uint64_t t) { return t > origin ? t - origin : 0; };
  auto site_name = [&](uint32_t site) { return c.str(c.probe_sites.name[site]); };
  auto ids = [&](capture::ThreadId t, int64_t tid) {
    return "\"pid\":" + std::to_string(c.processes[c.threads[t].process].pid) +
           ",\"tid\":" + std::to_string(tid);
  };
  // Per thread: its zones' and labels' spans.
  std::vector<std::vector<Span>> zones(c.threads.size()), labels(c.threads.size());
  const analysis::Zones paired = analysis::PairZones(c);
  for (const analysis::ZoneOccurrence& o : paired.occurrences) {
    const uint64_t at = o.begin != analysis::kUnknownTime ? o.begin : o.end;
    if (!filter.KeepPlace(o.thread, at)) continue;
    if (o.begin == analysis::kUnknownTime) {
      std::string e = "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"zone\",\"name\":" +
                      Quote(site_name(o.site) + " (end; its begin was not recorded)") + "," +
                      ids(o.thread, c.threads[o.thread].tid) + ",\"ts\":";
      AppendMicros(e, since(o.end));
      emit(e + "}");
      continue;
    }
    zones[o.thread].push_back(
        {o.begin, o.end == analysis::kUnknownTime ? UINT64_MAX : o.end, site_name(o.site)});
  }
  for (const analysis::ProbeLabelSpan& l : analysis::ProbeLabelSpans(c)) {
    if (!filter.KeepPlace(l.thread, l.begin)) continue;
    labels[l.thread].push_back({l.begin, l.end == analysis::kUnknownTime ? UINT64_MAX : l.end,
                                c.str(l.key) + " = " + c.str(l.value)});
  }
  for (size_t i = 0; i < r.size(); ++i) {
    const capture::ThreadId t = r.thread[i];
    if (!filter.KeepPlace(t, r.time[i])) continue;
    const std::string& name = site_name(r.site[i]);
    switch (r.op[i]) {
      case ProbeOp::kMark: {
        std::string e = "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"mark\",\"name\":" + Quote(name) + "," +
                        ids(t, c.threads[t].tid) + ",\"ts\":";
        AppendMicros(e, since(r.time[i]));
        emit(e + "}");
        break;
      }
      case ProbeOp::kCounter: {
        std::string e = "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":" + Quote(name) +
                        ",\"pid\":" + std::to_string(c.processes[c.threads[t].process].pid) +
                        ",\"ts\":";
        AppendMicros(e, since(r.time[i]));
        nlohmann::json value = r.ValueAt(i);
        emit(e + ",\"args\":{\"value\":" + value.dump() + "}}");
        break;
      }
      default:
        break;
    }
  }
  // Slices, track by track.
  for (size_t t = 0; t < c.threads.size(); ++t) {
    int64_t track = kTrackBase + int64_t(t) * kTracksPerThread;
    const std::string thread_name =
        c.str(c.threads[t].name) + " " + std::to_string(c.threads[t].tid);
    for (auto [spans, kind] :
         {std::make_pair(&zones[t], "zones"), std::make_pair(&labels[t], "labels")}) {
      if (spans->empty()) continue;
      size_t n = 0;
      for (const std::vector<const Span*>& list : NestedTracks(*spans)) {
        if (track >= kTrackBase + int64_t(t + 1) * kTracksPerThread)
          break;  // past a thread's share
        const std::string where = ids(capture::ThreadId(t), track++);
        emit("{\"ph\":\"M\",\"name\":\"thread_name\"," + where + ",\"args\":{\"name\":" +
             Quote(std::string(kind) + " of " + thread_name +
                   (n++ > 0 ? " (" + std::to_string(n) + ")" : "")) +
             "}}");
        for (const Span* s : list) {
          std::string e = "{\"ph\":\"" + std::string(s->end == UINT64_MAX ? "B" : "X") +
                          "\",\"cat\":\"" + (kind[0] == 'z' ? "zone" : "label") +
                          "\",\"name\":" + Quote(s->name) + "," + where + ",\"ts\":";
          AppendMicros(e, since(s->begin));
          if (s->end != UINT64_MAX) {
            e += ",\"dur\":";
            AppendMicros(e, s->end - s->begin);
          } else {
            e += ",\"args\":{\"incomplete\":\"still open when the recording ended\"}";
          }
          emit(e + "}");
        }
      }
    }
  }
}

}  // namespace microscope::formats
