// What a recording opens and says of itself before it runs: the collector's
// options from the record options, the capture's description of the host
// and of how it samples, and events on every thread of an attached process.
#pragma once

#include <sys/types.h>

#include "base/status.h"
#include "capture/capture.h"
#include "src/record/collector.h"
#include "src/record/record_options.h"

namespace microscope::record {

CollectorOptions CollectorOptionsFor(const RecordOptions& options);

// Host, kernel, clock, and how the recording samples, in its settings.
void DescribeRecording(const RecordOptions& options, const CollectorOptions& copts,
                       capture::Settings* s);

// Opens events on every thread of a running process. A thread started
// meanwhile by a thread whose events were open inherited them (its FORK
// record shows it): it gets no events of its own, or it would be sampled
// twice. Lists again until no thread is new. The sampling events are held
// (Collector::EnableSampling) where the task records have rings of their own.
Status OpenEveryThread(pid_t target, Collector* collector);

}  // namespace microscope::record
