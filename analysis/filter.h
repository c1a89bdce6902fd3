// Which samples a query counts: by process, thread (tid or name), time range
// (relative to the capture's start), and by function regex: --focus keeps
// samples whose stack has a matching function, --exclude drops them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/keys.h"
#include "capture/capture.h"
#include "capture/result.h"

namespace microscope::analysis {

struct FilterSpec {
  std::optional<int32_t> pid;
  std::string thread;               // a tid or a thread name; empty: every thread
  std::optional<uint64_t> from_ns;  // relative to the recording's start
  std::optional<uint64_t> to_ns;
  std::string focus;    // ECMAScript regex searched in function names
  std::string exclude;  // likewise
  bool empty() const {
    return !pid && thread.empty() && !from_ns && !to_ns && focus.empty() && exclude.empty();
  }
};

class SampleFilter {
 public:
  // Keeps every sample.
  SampleFilter() = default;
  static Result<SampleFilter> Make(const capture::Capture& capture, const FunctionKeys& keys,
                                   const FilterSpec& spec);
  bool Keep(const capture::Capture& c, size_t sample) const {
    if (all_) return true;
    if (!thread_keep_[c.samples.thread[sample]]) return false;
    uint64_t t = c.samples.time[sample];
    if (t < from_ || t > to_) return false;
    uint32_t s = c.samples.stack[sample];
    if (s == capture::kNone) return !needs_focus_;
    return stack_keep_[s] != 0;
  }
  bool keeps_all() const { return all_; }

 private:
  bool all_ = true;
  bool needs_focus_ = false;
  uint64_t from_ = 0;
  uint64_t to_ = UINT64_MAX;
  std::vector<uint8_t> thread_keep_;
  std::vector<uint8_t> stack_keep_;
};

// Parses "FROM..TO" ("1.5s..3s", "..2s", "500ms..") into relative nanoseconds.
Status ParseTimeRange(const std::string& text, FilterSpec* spec);

}  // namespace microscope::analysis
