#include "src/probes/tsc_clock.h"

#include <algorithm>

#include "base/clock.h"

namespace microscope::probes {
namespace {

uint64_t ReadTsc() {
#if defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#else
  return 0;
#endif
}

// The point on the line through a and b (a.tsc < b.tsc) at `tsc`.
uint64_t Through(const TscClock::Point& a, const TscClock::Point& b, uint64_t tsc) {
  const long double slope = (long double)(b.ns - a.ns) / (long double)(b.tsc - a.tsc);
  const long double ns = (long double)a.ns + ((long double)tsc - (long double)a.tsc) * slope;
  return ns <= 0 ? 0 : uint64_t(ns);
}

}  // namespace

TscClock::Point TscClock::Measure() {
  const uint64_t before = ReadTsc();
  const uint64_t ns = MonotonicNowNs();
  const uint64_t after = ReadTsc();
  return {before + (after - before) / 2, ns};
}

void TscClock::Add(Point p) {
  // Points a millisecond apart at least: the slope between them is then
  // known to a part in a million or better.
  if (!points_.empty() && (p.tsc <= points_.back().tsc || p.ns < points_.back().ns + 1'000'000)) {
    return;
  }
  points_.push_back(p);
}

uint64_t TscClock::ToNs(uint64_t tsc) const {
  if (points_.size() < 2) return 0;
  if (last_ < points_.size() && points_[last_ - 1].tsc <= tsc && tsc < points_[last_].tsc)
    return Through(points_[last_ - 1], points_[last_], tsc);
  auto after = std::upper_bound(points_.begin(), points_.end(), tsc,
                                [](uint64_t t, const Point& p) { return t < p.tsc; });
  if (after == points_.begin()) ++after;
  if (after == points_.end()) --after;
  last_ = size_t(after - points_.begin());
  return Through(*(after - 1), *after, tsc);
}

}  // namespace microscope::probes
