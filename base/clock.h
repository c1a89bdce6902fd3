// The recording's clock: CLOCK_MONOTONIC in nanoseconds, the clock of perf
// samples and BPF events (bpf_ktime_get_ns).
#pragma once

#include <time.h>

#include <cstdint>

namespace microscope {

inline uint64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// CLOCK_REALTIME in nanoseconds since the Unix epoch: wall-clock names and
// the wall-clock time a capture's start corresponds to.
inline uint64_t RealtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace microscope
