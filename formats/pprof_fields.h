// profile.proto's field numbers, shared by the pprof writer (pprof.cc) and
// reader (pprof_reader.cc). Internal to formats/.
#pragma once

#include <cstdint>

namespace microscope::formats::pprof_fields {

enum ProfileField : uint32_t {
  kSampleType = 1,
  kSample = 2,
  kMapping = 3,
  kLocation = 4,
  kFunction = 5,
  kStringTable = 6,
  kTimeNanos = 9,
  kDurationNanos = 10,
  kPeriodType = 11,
  kPeriod = 12,
  kDefaultSampleType = 14,
};

}  // namespace microscope::formats::pprof_fields
