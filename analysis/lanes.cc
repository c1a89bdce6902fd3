#include "analysis/lanes.h"

#include <algorithm>

namespace microscope::analysis {

Lanes ComputeLanes(const capture::Capture& c, const SampleFilter& filter, size_t buckets) {
  Lanes out;
  buckets = std::max<size_t>(buckets, 1);
  out.bucket_count = buckets;
  out.start = c.settings.start_time;
  uint64_t end = std::max(c.settings.end_time, out.start + 1);
  if (!c.samples.time.empty()) {
    out.start = std::min(out.start, c.samples.time.front());
    end = std::max(end, c.samples.time.back() + 1);
  }
  const capture::OffCpu& o = c.off_cpu;
  if (o.size() > 0) {
    out.start = std::min(out.start, o.start.front());
    for (uint64_t e : o.end) end = std::max(end, e);
  }
  // A time range narrows the timeline to it: its columns span the range.
  if (filter.from() > out.start && filter.from() < end) out.start = filter.from();
  if (filter.to() < end - 1 && filter.to() >= out.start) end = filter.to() + 1;
  out.bucket_ns = std::max<uint64_t>((end - out.start + buckets - 1) / buckets, 1);
  std::vector<Lane> by_thread(c.threads.size());
  for (size_t t = 0; t < by_thread.size(); ++t) {
    by_thread[t].thread = capture::ThreadId(t);
    by_thread[t].buckets.assign(buckets, 0);
  }
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (!filter.Keep(c, i)) continue;
    Lane& lane = by_thread[c.samples.thread[i]];
    size_t b = std::min<size_t>((c.samples.time[i] - out.start) / out.bucket_ns, buckets - 1);
    lane.buckets[b] += c.samples.CountAt(i);
    lane.total += c.samples.CountAt(i);
  }
  for (size_t i = 0; i < o.size(); ++i) {
    if (!filter.Keep(o.thread[i], o.start[i], o.stack[i])) continue;
    Lane& lane = by_thread[o.thread[i]];
    std::vector<uint64_t>& per = lane.off_cpu[uint8_t(o.state[i])];
    if (per.empty()) per.assign(buckets, 0);
    lane.off_cpu_ns += o.end[i] - o.start[i];
    // The interval's share of each bucket it overlaps.
    uint64_t from = o.start[i] - out.start, to = o.end[i] - out.start;
    for (size_t b = from / out.bucket_ns; b < buckets && b * out.bucket_ns < to; ++b) {
      uint64_t lo = std::max<uint64_t>(from, b * out.bucket_ns);
      uint64_t hi = std::min<uint64_t>(to, (b + 1) * out.bucket_ns);
      if (hi > lo) per[b] += hi - lo;
    }
  }
  for (Lane& lane : by_thread) {
    if (lane.total > 0 || lane.off_cpu_ns > 0) out.lanes.push_back(std::move(lane));
  }
  std::sort(out.lanes.begin(), out.lanes.end(), [&](const Lane& a, const Lane& b) {
    if (a.total != b.total) return a.total > b.total;
    if (a.off_cpu_ns != b.off_cpu_ns) return a.off_cpu_ns > b.off_cpu_ns;
    return c.threads[a.thread].tid < c.threads[b.thread].tid;
  });
  return out;
}

LaneCell CellOf(const Lanes& lanes, const Lane& lane, size_t bucket) {
  uint64_t off = 0, most = 0;
  uint8_t state = 0;
  for (uint8_t s = 0; s < capture::kOffCpuStateCount; ++s) {
    if (lane.off_cpu[s].empty()) continue;
    uint64_t ns = lane.off_cpu[s][bucket];
    off += ns;
    if (ns > most) {
      most = ns;
      state = s;
    }
  }
  LaneCell blocked = LaneCell(uint8_t(LaneCell::kSleeping) + state);
  if (off * 2 > lanes.bucket_ns) return blocked;
  if (lane.buckets[bucket] > 0) return LaneCell::kOnCpu;
  return off > 0 ? blocked : LaneCell::kEmpty;
}

}  // namespace microscope::analysis
