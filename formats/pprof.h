// pprof's profile.proto, gzipped, written and read with libprotozero.
//
// Written: sample types samples/count and the capture's metric (cpu/
// nanoseconds for a recording), and off_cpu/nanoseconds when the capture has
// off-CPU intervals (then wall/nanoseconds too, for Metric::kWall); one
// sample per distinct (stack, thread, off-CPU state) with labels pid, tid
// and thread, and state on off-CPU rows. CPU rows have 0 off_cpu; off-CPU
// rows have 0 samples and 0 CPU time, their duration as off_cpu (short
// intervals under a pseudo frame); `metric` picks the default sample type; one location per frame,
// with the function as its line (an unnamed frame's function is named module+0xoffset, as reports
// name it, so that pprof keeps unnamed addresses apart; ReadPprof reads it back unnamed); one
// mapping per module with build ID and file offsets (each module gets its own address range so that
// address - start + offset is the frame's file offset); period and duration. Not carried: sample
// times (pprof samples have none), stack end reasons, lost/throttle counts, problems, the process
// tree.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/profile.h"
#include "base/status.h"
#include "capture/capture.h"

namespace microscope::formats {

// Cancelled (`cancel` set), it stops counting and returns what it has.
std::vector<uint8_t> WritePprof(const capture::Capture& capture,
                                const analysis::SampleFilter& filter,
                                analysis::Metric metric = analysis::Metric::kCpu,
                                analysis::Cancel cancel = {});

// Reads a pprof profile (gzipped or not). The value used as the capture's
// weight is `sample_type` when given (an error when the profile lacks it),
// else the "cpu" sample type if present, else the default or last one; a
// "samples"/"count" type gives the sample counts. In a profile of three or
// more types, rows whose weight is 0 belong to another quantity (off-CPU
// rows read as cpu) and are skipped.
// Errors name the byte offset in the (inflated) protobuf. A gzipped profile
// inflates to at most `max_inflated` bytes, whatever the file's size
// (convert --max-inflate; kMaxInflatedPprof by default).
constexpr size_t kMaxInflatedPprof = size_t(256) << 20;
Result<capture::Capture> ReadPprof(std::span<const uint8_t> file,
                                   const std::string& sample_type = "",
                                   size_t max_inflated = kMaxInflatedPprof);

}  // namespace microscope::formats
