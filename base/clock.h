// The recording's clock: CLOCK_MONOTONIC in nanoseconds, the clock of perf
// samples and BPF events (bpf_ktime_get_ns).
#pragma once

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace microscope {

inline uint64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in nanoseconds:
// what work costs, where a wall-clock span would count the time the thread
// waited for a CPU on a loaded machine.
inline uint64_t ThreadCpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// CLOCK_REALTIME in nanoseconds since the Unix epoch: wall-clock names and
// the wall-clock time a capture's start corresponds to.
inline uint64_t RealtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// A wall-clock time in UTC to the millisecond: "2026-12-02 06:30:15.123 UTC",
// or for file names "20261202T063015.123Z".
enum class UtcStyle { kText, kCompact };
inline std::string UtcText(uint64_t realtime_ns, UtcStyle style = UtcStyle::kText) {
  time_t seconds = time_t(realtime_ns / 1000000000ull);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  const unsigned ms = unsigned(realtime_ns / 1000000ull % 1000);
  if (style == UtcStyle::kCompact) {
    std::snprintf(text, sizeof(text), "%04d%02d%02dT%02d%02d%02d.%03uZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
  } else {
    std::snprintf(text, sizeof(text), "%04d-%02d-%02d %02d:%02d:%02d.%03u UTC", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
  }
  return text;
}

}  // namespace microscope
