// pprof's profile.proto, gzipped, written and read with libprotozero.
//
// Written: sample types samples/count and the capture's metric (cpu/
// nanoseconds for a recording); one sample per distinct (stack, thread) with
// labels pid, tid and thread; one location per frame, with the function as
// its line; one mapping per module with build ID and file offsets (each
// module gets its own address range so that address - start + offset is the
// frame's file offset); period and duration.
// Not carried: sample times (pprof samples have none), stack end reasons,
// lost/throttle counts, problems, the process tree.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/filter.h"
#include "capture/capture.h"
#include "capture/result.h"

namespace microscope::formats {

std::vector<uint8_t> WritePprof(const capture::Capture& capture,
                                const analysis::SampleFilter& filter);

// Reads a pprof profile (gzipped or not). The value used as the capture's
// weight is the "cpu" sample type if present, else the default or last one;
// a "samples"/"count" type gives the sample counts. Errors name the byte
// offset in the (inflated) protobuf.
Result<capture::Capture> ReadPprof(std::span<const uint8_t> file);

}  // namespace microscope::formats
