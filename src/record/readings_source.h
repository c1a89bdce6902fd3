// The readings source (record --readings): every 100 ms, the targets' own
// counters as the kernel keeps them, beside the samples: each thread's (of
// the target and its descendants)
// scheduler statistics (/proc/PID/task/TID/schedstat: time on CPU, time
// runnable but waiting for one, timeslices), the target's cgroup's CPU
// quota and throttling (v1 cpu.cfs_quota_us, cpu.cfs_period_us, cpu.stat;
// v2 cpu.max, cpu.stat, cpu.pressure), and the system's pressure stall
// information (/proc/pressure). Rows of the capture's readings table
// (capture.h lists the keys). `microscope triage` records with it; its rules
// take on-CPU, run-queue and throttled time from these rows.
#pragma once

#include <memory>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::record {

Result<std::unique_ptr<EventSource>> StartReadingsSource(const SourceContext& context);

// The most rows a recording keeps (32 bytes each); past it readings are
// counted in the problems, not kept.
inline constexpr size_t kMaxReadingRows = 1000000;
// The most threads read at each reading; the rest are counted.
inline constexpr size_t kMaxReadingThreads = 4096;

}  // namespace microscope::record
