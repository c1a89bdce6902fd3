// Choosing and running a conversion: which export a name asks for, writing
// a capture in that format (atomically), and reading an imported profile
// (pprof or folded, told apart by content).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/profile.h"
#include "base/status.h"
#include "capture/capture.h"
#include "formats/pprof.h"

namespace microscope::formats {

// "pprof", "chrome", "folded", "speedscope" or "mscap" from `to` when given,
// else from the output's name (.pb.gz, .json, .speedscope.json, .folded);
// empty when neither says.
std::string ExportFormatFor(const std::string& to, const std::string& output);

// The file extension an export in `format` is written under (".pb.gz",
// ".json", ".speedscope.json", ".folded"); empty for what is not an export
// format (mscap is the capture itself).
std::string_view ExportExtension(std::string_view format);

struct ExportOptions {
  analysis::FilterSpec filter;
  bool per_thread = false;  // folded: one stack per thread
  // Folded (then in µs, not counts, for offcpu and wall) and speedscope
  // write that metric's samples (analysis::ForMetric); pprof has every type
  // and makes it the default; chrome always draws CPU samples and off-CPU
  // intervals.
  analysis::Metric metric = analysis::Metric::kCpu;
  // false: inlined calls folded into their functions (analysis::WithoutInlines).
  bool inlines = true;
  // Which frames of mixed Python and native stacks are written.
  analysis::Look look = analysis::Look::kMixed;
  // analysis::Transformed's, after the look.
  std::vector<std::string> merge, collapse;
  // Set from another thread (serve's deadline): ExportToMemory ends with
  // kCancelled within milliseconds, keeping nothing.
  analysis::Cancel cancel;
};

// Writes `capture` as `format` to `output` through a temporary name; mscap
// is the capture itself (filters and --inlines off are refused for it, the
// latter as kInvalidArgument).
Status Export(const capture::Capture& capture, const std::string& format, const std::string& output,
              const ExportOptions& options);

// The same export (not mscap) as bytes in memory, for the browser view's
// downloads: kTooLarge past `limit` bytes, which it never holds more of;
// kCancelled when options.cancel is set while it is made.
Result<std::string> ExportToMemory(const capture::Capture& capture, const std::string& format,
                                   const ExportOptions& options, size_t limit);

// Reads a pprof profile (gzipped or raw protobuf, inflated to at most
// `max_inflated` bytes), perf script text or folded stacks.
Result<capture::Capture> ImportProfile(std::span<const uint8_t> bytes,
                                       size_t max_inflated = kMaxInflatedPprof);

}  // namespace microscope::formats
