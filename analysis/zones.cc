#include "analysis/zones.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace microscope::analysis {

using capture::kNone;
using capture::ProbeOp;
using capture::ThreadId;

Zones PairZones(const capture::Capture& c) {
  Zones z;
  const capture::ProbeRecords& r = c.probe_records;
  // Per thread: its open occurrences, oldest first.
  std::map<ThreadId, std::vector<uint32_t>> open;
  // The occurrence on top of the thread's open list when each began (the
  // chain of such tops holds every occurrence open then).
  std::vector<uint32_t> top_at_begin;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.op[i] != ProbeOp::kBegin && r.op[i] != ProbeOp::kEnd) continue;
    std::vector<uint32_t>& list = open[r.thread[i]];
    if (r.op[i] == ProbeOp::kBegin) {
      ZoneOccurrence o;
      o.site = r.site[i];
      o.thread = r.thread[i];
      o.begin = r.time[i];
      list.push_back(uint32_t(z.occurrences.size()));
      top_at_begin.push_back(list.size() > 1 ? list[list.size() - 2] : kNone);
      z.occurrences.push_back(o);
      continue;
    }
    auto it = std::find_if(list.rbegin(), list.rend(),
                           [&](uint32_t o) { return z.occurrences[o].site == r.site[i]; });
    if (it == list.rend()) {
      ZoneOccurrence o;
      o.site = r.site[i];
      o.thread = r.thread[i];
      o.end = r.time[i];
      top_at_begin.push_back(kNone);
      z.occurrences.push_back(o);
      continue;
    }
    z.occurrences[*it].end = r.time[i];
    list.erase(std::next(it).base());
  }
  // Parents: along the chain of tops, the first that began no later and
  // ended no earlier (or never ended).
  std::vector<ZoneOccurrence>& occ = z.occurrences;
  for (size_t i = 0; i < occ.size(); ++i) {
    if (occ[i].begin == kUnknownTime) continue;
    for (uint32_t p = top_at_begin[i]; p != kNone; p = top_at_begin[p]) {
      if (occ[p].begin <= occ[i].begin &&
          (occ[p].end == kUnknownTime ||
           (occ[i].end != kUnknownTime && occ[p].end >= occ[i].end))) {
        occ[i].parent = p;
        break;
      }
    }
  }
  // Self time: a complete occurrence's time outside the union of its
  // complete children.
  std::vector<std::vector<uint32_t>> children(occ.size());
  for (size_t i = 0; i < occ.size(); ++i) {
    if (occ[i].parent != kNone && occ[i].complete()) children[occ[i].parent].push_back(uint32_t(i));
  }
  for (size_t i = 0; i < occ.size(); ++i) {
    if (!occ[i].complete()) continue;
    uint64_t covered = 0, reach = occ[i].begin;
    for (uint32_t k : children[i]) {  // in begin order
      const uint64_t from = std::max(reach, occ[k].begin);
      if (occ[k].end > from) covered += occ[k].end - from;
      reach = std::max(reach, occ[k].end);
    }
    occ[i].self_ns = occ[i].duration() - std::min(covered, occ[i].duration());
  }
  return z;
}

uint64_t OpenUntil(const capture::Capture& c, capture::ThreadId thread, uint64_t begin) {
  const uint64_t thread_end = c.threads[thread].end_time;
  const uint64_t last = std::max(c.settings.end_time, c.settings.start_time);
  return std::max(thread_end != 0 ? thread_end : last, begin);
}

std::vector<std::vector<ZoneSegment>> InnermostSegments(const capture::Capture& c,
                                                        const Zones& zones) {
  const std::vector<ZoneOccurrence>& occ = zones.occurrences;
  struct Edge {
    uint64_t time;
    bool end;
    uint32_t occurrence;
  };
  std::vector<std::vector<Edge>> edges(c.threads.size());
  for (size_t i = 0; i < occ.size(); ++i) {
    if (occ[i].begin == kUnknownTime) continue;
    edges[occ[i].thread].push_back({occ[i].begin, false, uint32_t(i)});
    // Open at the end: to its thread's end, or the recording's.
    const uint64_t end =
        occ[i].end != kUnknownTime ? occ[i].end : OpenUntil(c, occ[i].thread, occ[i].begin);
    edges[occ[i].thread].push_back({end, true, uint32_t(i)});
  }
  std::vector<std::vector<ZoneSegment>> out(c.threads.size());
  for (size_t t = 0; t < edges.size(); ++t) {
    std::vector<Edge>& list = edges[t];
    std::stable_sort(list.begin(), list.end(),
                     [](const Edge& a, const Edge& b) { return a.time < b.time; });
    std::set<std::pair<uint64_t, uint32_t>> active;
    uint32_t shown = kNone;
    uint64_t since = 0;
    for (size_t e = 0; e < list.size();) {
      const uint64_t time = list[e].time;
      for (; e < list.size() && list[e].time == time; ++e) {
        const ZoneOccurrence& o = occ[list[e].occurrence];
        if (list[e].end) {
          active.erase({o.begin, list[e].occurrence});
        } else {
          active.insert({o.begin, list[e].occurrence});
        }
      }
      const uint32_t now = active.empty() ? kNone : active.rbegin()->second;
      if (now == shown) continue;
      if (shown != kNone && time > since) out[t].push_back({since, time, shown});
      shown = now;
      since = time;
    }
  }
  return out;
}

namespace {

// InnermostAt over segments already made.
std::vector<uint32_t> InnermostIn(const std::vector<std::vector<ZoneSegment>>& segments,
                                  std::span<const ThreadId> threads,
                                  std::span<const uint64_t> times) {
  std::vector<uint32_t> out(times.size(), kNone);
  for (size_t i = 0; i < times.size(); ++i) {
    if (threads[i] >= segments.size()) continue;
    const std::vector<ZoneSegment>& list = segments[threads[i]];
    auto it = std::upper_bound(list.begin(), list.end(), times[i],
                               [](uint64_t t, const ZoneSegment& s) { return t < s.begin; });
    if (it != list.begin() && times[i] < std::prev(it)->end) out[i] = std::prev(it)->occurrence;
  }
  return out;
}

}  // namespace

std::vector<uint32_t> InnermostAt(const capture::Capture& c, const Zones& zones,
                                  std::span<const ThreadId> threads,
                                  std::span<const uint64_t> times) {
  return InnermostIn(InnermostSegments(c, zones), threads, times);
}

std::vector<ProbeBuckets> ProbeLaneBuckets(const capture::Capture& c, uint64_t start,
                                           uint64_t bucket_ns, size_t count) {
  std::vector<ProbeBuckets> out(c.threads.size());
  if (c.probe_records.size() == 0 || bucket_ns == 0) return out;
  const Zones zones = PairZones(c);
  const std::vector<std::vector<ZoneSegment>> segments = InnermostSegments(c, zones);
  const uint64_t end = start + bucket_ns * count;
  std::map<capture::ProbeSiteId, uint64_t> held;  // in one bucket: time per site
  for (size_t t = 0; t < segments.size(); ++t) {
    ProbeBuckets& b = out[t];
    b.zone.assign(count, kNone);
    b.events.assign(count, 0);
    size_t s = 0;
    for (size_t k = 0; k < count && !segments[t].empty(); ++k) {
      const uint64_t from = start + k * bucket_ns, to = from + bucket_ns;
      while (s < segments[t].size() && segments[t][s].end <= from) ++s;
      held.clear();
      for (size_t i = s; i < segments[t].size() && segments[t][i].begin < to; ++i) {
        const ZoneSegment& g = segments[t][i];
        held[zones.occurrences[g.occurrence].site] += std::min(g.end, to) - std::max(g.begin, from);
      }
      uint64_t most = 0;
      for (const auto& [site, ns] : held) {
        if (ns > most) most = ns, b.zone[k] = site;
      }
    }
  }
  const capture::ProbeRecords& r = c.probe_records;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.time[i] < start || r.time[i] >= end) continue;
    ProbeBuckets& b = out[r.thread[i]];
    if (b.events.empty()) b.events.assign(count, 0), b.zone.assign(count, kNone);
    const size_t k = size_t((r.time[i] - start) / bucket_ns);
    if (r.op[i] == ProbeOp::kMark) b.events[k] |= kBucketMark;
    if (r.op[i] == ProbeOp::kLabel || r.op[i] == ProbeOp::kLabelClear) b.events[k] |= kBucketLabel;
  }
  return out;
}

std::vector<ProbeLabelSpan> ProbeLabelSpans(const capture::Capture& c) {
  std::vector<ProbeLabelSpan> out;
  const capture::ProbeRecords& r = c.probe_records;
  std::map<std::pair<ThreadId, capture::StringId>, ProbeLabelSpan> open;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.op[i] != ProbeOp::kLabel && r.op[i] != ProbeOp::kLabelClear) continue;
    const auto key = std::make_pair(r.thread[i], c.probe_sites.name[r.site[i]]);
    auto it = open.find(key);
    if (it != open.end()) {
      it->second.end = r.time[i];
      out.push_back(it->second);
      open.erase(it);
    }
    if (r.op[i] == ProbeOp::kLabel) open[key] = {key.first, key.second, r.TextAt(i), r.time[i]};
  }
  for (const auto& [key, span] : open) out.push_back(span);
  return out;
}

void AddProbeLabelSpans(capture::Capture* c) {
  if (c->probe_records.size() == 0) return;
  capture::LabelSpans& l = c->labels;
  auto add = [&](ThreadId thread, capture::StringId key, capture::StringId value, uint64_t begin,
                 uint64_t end) {
    if (end <= begin) return;
    l.thread.push_back(thread);
    l.key.push_back(key);
    l.value.push_back(value);
    l.start.push_back(begin);
    l.end.push_back(end - 1);  // spans hold their end
  };
  const Zones zones = PairZones(*c);
  const std::vector<std::vector<ZoneSegment>> segments = InnermostSegments(*c, zones);
  if (std::any_of(segments.begin(), segments.end(), [](const auto& s) { return !s.empty(); })) {
    c->strings.emplace_back(kZoneLabel);
    const capture::StringId key = capture::StringId(c->strings.size() - 1);
    for (size_t t = 0; t < segments.size(); ++t) {
      for (const ZoneSegment& s : segments[t]) {
        add(ThreadId(t), key, c->probe_sites.name[zones.occurrences[s.occurrence].site], s.begin,
            s.end);
      }
    }
  }
  // A label never changed holds to its thread's end, or the recording's.
  for (const ProbeLabelSpan& s : ProbeLabelSpans(*c)) {
    uint64_t end = s.end;
    if (end == kUnknownTime) end = OpenUntil(*c, s.thread, s.begin) + 1;
    add(s.thread, s.key, s.value, s.begin, end);
  }
}

std::vector<std::vector<std::pair<uint64_t, uint64_t>>> SpansOf(
    const capture::Capture& c, const Zones& zones, std::span<const capture::ProbeSiteId> sites) {
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> spans(c.threads.size());
  for (const ZoneOccurrence& o : zones.occurrences) {
    if (o.begin == kUnknownTime || std::find(sites.begin(), sites.end(), o.site) == sites.end())
      continue;
    spans[o.thread].push_back({o.begin, o.end});  // an unknown end is past every time
  }
  for (auto& list : spans) MergeSpans(&list);
  return spans;
}

void MergeSpans(std::vector<std::pair<uint64_t, uint64_t>>* spans) {
  std::sort(spans->begin(), spans->end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& s : *spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  *spans = std::move(merged);
}

std::vector<capture::ProbeSiteId> ZoneSitesNamed(const capture::Capture& c, std::string_view name) {
  std::vector<capture::ProbeSiteId> out;
  for (size_t s = 0; s < c.probe_sites.size(); ++s) {
    if (c.probe_sites.kind[s] == capture::ProbeKind::kZone && c.str(c.probe_sites.name[s]) == name)
      out.push_back(capture::ProbeSiteId(s));
  }
  return out;
}

std::vector<ZoneStats> ZoneStatistics(const capture::Capture& c, const Zones& zones,
                                      const SampleFilter& filter) {
  const std::vector<ZoneOccurrence>& occ = zones.occurrences;
  std::vector<ZoneStats> stats(c.probe_sites.size());
  std::vector<std::vector<uint32_t>> complete(c.probe_sites.size());
  std::vector<uint8_t> seen(c.probe_sites.size(), 0);
  for (size_t i = 0; i < occ.size(); ++i) {
    const uint64_t at = occ[i].begin != kUnknownTime ? occ[i].begin : occ[i].end;
    if (!filter.KeepPlace(occ[i].thread, at)) continue;
    ZoneStats& s = stats[occ[i].site];
    seen[occ[i].site] = 1;
    if (occ[i].begin == kUnknownTime) {
      ++s.unmatched_ends;
    } else if (occ[i].end == kUnknownTime) {
      ++s.open_at_end;
    } else {
      ++s.count;
      s.total_ns += occ[i].duration();
      s.self_ns += occ[i].self_ns;
      complete[occ[i].site].push_back(uint32_t(i));
    }
  }
  // Samples and off-CPU time by their innermost zone.
  const capture::Samples& smp = c.samples;
  std::vector<uint64_t> times(smp.time.begin(), smp.time.end());
  std::vector<ThreadId> threads(smp.thread.begin(), smp.thread.end());
  const std::vector<std::vector<ZoneSegment>> segments = InnermostSegments(c, zones);
  std::vector<uint32_t> inner = InnermostIn(segments, threads, times);
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == kNone || !filter.Keep(c, i)) continue;
    ZoneStats& s = stats[occ[inner[i]].site];
    s.samples += smp.CountAt(i);
    s.sample_weight += smp.weight.empty() ? 0 : smp.weight[i];
  }
  const capture::OffCpu& off = c.off_cpu;
  std::vector<uint32_t> off_inner = InnermostIn(segments, off.thread, off.start);
  for (size_t i = 0; i < off_inner.size(); ++i) {
    if (off_inner[i] == kNone || !filter.Keep(off.thread[i], off.start[i], off.stack[i])) continue;
    const ZoneOccurrence& o = occ[off_inner[i]];
    ZoneStats& s = stats[o.site];
    ++s.off_cpu_intervals;
    s.off_cpu_ns += std::min(off.end[i], o.end) - off.start[i];
  }
  for (size_t site = 0; site < stats.size(); ++site) {
    stats[site].site = capture::ProbeSiteId(site);
    std::vector<uint32_t>& list = complete[site];
    if (list.empty()) continue;
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return occ[a].duration() < occ[b].duration(); });
    auto rank = [&](double p) {
      size_t k = size_t(std::ceil(p * double(list.size())));
      k = std::clamp<size_t>(k, 1, list.size()) - 1;
      return Exemplar{occ[list[k]].duration(), list[k]};
    };
    stats[site].p50 = rank(0.50);
    stats[site].p90 = rank(0.90);
    stats[site].p99 = rank(0.99);
    stats[site].max = Exemplar{occ[list.back()].duration(), list.back()};
  }
  std::vector<ZoneStats> out;
  for (size_t site = 0; site < stats.size(); ++site) {
    if (seen[site] || stats[site].samples > 0) out.push_back(stats[site]);
  }
  std::stable_sort(out.begin(), out.end(), [&](const ZoneStats& a, const ZoneStats& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return c.str(c.probe_sites.name[a.site]) < c.str(c.probe_sites.name[b.site]);
  });
  return out;
}

namespace {

ReportZoneExemplar ExemplarOf(const capture::Capture& c, const Zones& z, const Exemplar& e) {
  ReportZoneExemplar out;
  if (e.occurrence == kNone) return out;
  const ZoneOccurrence& o = z.occurrences[e.occurrence];
  out.duration_ns = e.duration;
  out.tid = c.threads[o.thread].tid;
  out.thread = c.str(c.threads[o.thread].name);
  out.at_ns = o.begin > c.settings.start_time ? o.begin - c.settings.start_time : 0;
  return out;
}

}  // namespace

ReportZones BuildZonesReport(const capture::Capture& c, size_t top, const SampleFilter& filter) {
  ReportZones out;
  const Zones z = PairZones(c);
  for (const ZoneStats& s : ZoneStatistics(c, z, filter)) {
    ReportZoneRow row;
    row.name = c.str(c.probe_sites.name[s.site]);
    row.file = c.str(c.probe_sites.file[s.site]);
    row.line = c.probe_sites.line[s.site];
    row.count = s.count;
    row.total_ns = s.total_ns;
    row.self_ns = s.self_ns;
    row.mean_ns = s.count > 0 ? s.total_ns / s.count : 0;
    row.p50 = ExemplarOf(c, z, s.p50);
    row.p90 = ExemplarOf(c, z, s.p90);
    row.p99 = ExemplarOf(c, z, s.p99);
    row.max = ExemplarOf(c, z, s.max);
    row.open_at_end = s.open_at_end;
    row.unmatched_ends = s.unmatched_ends;
    row.samples = s.samples;
    row.off_cpu_ns = s.off_cpu_ns;
    row.off_cpu_intervals = s.off_cpu_intervals;
    out.samples_inside += s.samples;
    out.rows.push_back(std::move(row));
  }
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (filter.Keep(c, i)) out.samples += c.samples.CountAt(i);
  }
  for (ReportZoneRow& row : out.rows)
    row.sample_percent = out.samples > 0 ? 100.0 * double(row.samples) / double(out.samples) : 0;
  out.shown = std::min(top, out.rows.size());
  for (ProbeOp op : c.probe_records.op) {
    out.marks += op == ProbeOp::kMark;
    out.label_records += op == ProbeOp::kLabel || op == ProbeOp::kLabelClear;
    out.counter_records += op == ProbeOp::kCounter;
  }
  return out;
}

}  // namespace microscope::analysis
