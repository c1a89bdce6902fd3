// The time stamp counter the probes write (one instruction, where reading
// CLOCK_MONOTONIC takes a vDSO call) turned into the capture's clock: the
// recorder reads both clocks side by side at each drain and converts a
// stamp between two such points on the line through them, before the first
// or after the last on the nearest line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace microscope::probes {

class TscClock {
 public:
  struct Point {
    uint64_t tsc = 0;
    uint64_t ns = 0;
  };
  // Both clocks now (the counter read on each side of the clock, averaged).
  static Point Measure();

  // Points must come in time order; one too close to the last is skipped.
  void Add(Point p);
  // CLOCK_MONOTONIC nanoseconds of `tsc`; 0 with fewer than two points.
  uint64_t ToNs(uint64_t tsc) const;
  size_t points() const { return points_.size(); }

 private:
  std::vector<Point> points_;
  mutable size_t last_ = 1;  // the segment the last stamp fell in: stamps come in runs
};

}  // namespace microscope::probes
