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
  for (Lane& lane : by_thread) {
    if (lane.total > 0) out.lanes.push_back(std::move(lane));
  }
  std::sort(out.lanes.begin(), out.lanes.end(), [&](const Lane& a, const Lane& b) {
    if (a.total != b.total) return a.total > b.total;
    return c.threads[a.thread].tid < c.threads[b.thread].tid;
  });
  return out;
}

}  // namespace microscope::analysis
