// Which samples a query counts: by process, thread (tid or name), time range
// (relative to the capture's start), by function regex (--focus keeps
// samples whose stack has a matching function, --exclude drops them), by
// the program's zone and by labels (KEY=VALUE held by the thread then).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/keys.h"
#include "base/status.h"
#include "capture/capture.h"

namespace microscope::analysis {

struct FilterSpec {
  std::optional<int32_t> pid;
  std::string thread;               // a tid or a thread name; empty: every thread
  std::optional<uint64_t> from_ns;  // relative to the recording's start
  std::optional<uint64_t> to_ns;
  std::string focus;    // an RE2 regex (no backreferences or lookaround) searched in function names
  std::string exclude;  // likewise
  // Keeps samples taken inside an occurrence of the zone of this name (the
  // program's probes, analysis/zones.h), at any depth of its thread's zones.
  std::string zone;
  // Keeps samples whose thread had each of these labels (key, value) then:
  // the runtimes' (python.gil, v8.isolate) and the program's own.
  std::vector<std::pair<std::string, std::string>> labels;
  // Keeps samples whose stack begins (at its root) with these functions, by
  // the names the views show: analysis::Rooted re-roots those stacks at the
  // last one and takes every other stack away, and the filter then drops
  // the rows with no stack.
  std::vector<std::string> focus_path;
  bool empty() const {
    return !pid && thread.empty() && !from_ns && !to_ns && focus.empty() && exclude.empty() &&
           zone.empty() && labels.empty() && focus_path.empty();
  }
};

class SampleFilter {
 public:
  // Keeps every sample.
  SampleFilter() = default;
  // kCancelled when `cancel` is set while it matches the stacks.
  static Result<SampleFilter> Make(const capture::Capture& capture, const FunctionKeys& keys,
                                   const FilterSpec& spec, Cancel cancel = {});
  bool Keep(const capture::Capture& c, size_t sample) const {
    return all_ || Keep(c.samples.thread[sample], c.samples.time[sample], c.samples.stack[sample]);
  }
  // The same test for any row with a thread, a time and a stack (off-CPU
  // intervals, by their start). A filter made for a capture also serves one
  // that only appends frames and stacks to it (analysis::ForMetric).
  bool Keep(capture::ThreadId thread, uint64_t time, capture::StackId stack) const {
    if (all_) return true;
    if (!thread_keep_[thread]) return false;
    if (time < from_ || time > to_) return false;
    if (!required_.empty() && !InsideRequired(thread, time)) return false;
    if (stack == capture::kNone || stack >= stack_keep_.size()) return !needs_focus_;
    return stack_keep_[stack] != 0;
  }
  bool keeps_all() const { return all_; }
  // The kept time range (absolute; the whole of time without --time).
  uint64_t from() const { return from_; }
  uint64_t to() const { return to_; }
  // The tests of a thread and a time only, for rows with no stack (the
  // program's probe records): the thread, time range, zone and labels.
  bool KeepPlace(capture::ThreadId thread, uint64_t time) const {
    if (all_) return true;
    if (!thread_keep_[thread] || time < from_ || time > to_) return false;
    return required_.empty() || InsideRequired(thread, time);
  }

 private:
  using Spans = std::vector<std::vector<std::pair<uint64_t, uint64_t>>>;
  bool InsideRequired(capture::ThreadId thread, uint64_t time) const;

  bool all_ = true;
  bool needs_focus_ = false;
  uint64_t from_ = 0;
  uint64_t to_ = UINT64_MAX;
  std::vector<uint8_t> thread_keep_;
  std::vector<uint8_t> stack_keep_;
  // What a kept row must lie inside, each: the zone's spans, each label's
  // (per thread, [begin, end), sorted and merged).
  std::vector<Spans> required_;
};

// Parses "FROM..TO" ("1.5s..3s", "..2s", "500ms..") into relative nanoseconds.
Status ParseTimeRange(const std::string& text, FilterSpec* spec);
// Parses "KEY=VALUE" into a label the filter requires.
Status ParseLabel(const std::string& text, FilterSpec* spec);
// Parses "main;run;hot" (root first, as folded stacks write a path) into
// the call path the filter focuses on; and writes one so.
Status ParseCallPath(const std::string& text, FilterSpec* spec);
std::string JoinCallPath(const std::vector<std::string>& path);

}  // namespace microscope::analysis
