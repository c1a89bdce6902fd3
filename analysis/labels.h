// A capture's label spans (capture::LabelSpans) looked up per sample: the
// value each label key had on a thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "capture/capture.h"

namespace microscope::analysis {

class SampleLabels {
 public:
  explicit SampleLabels(const capture::Capture& capture);

  // The spans (indexes into capture.labels) covering `time` on `thread`,
  // at most one per key, in key order; appended to `out`.
  void At(capture::ThreadId thread, uint64_t time, std::vector<size_t>* out) const;
  // The value the label `key` had on `thread` at `time`, when a span says.
  std::optional<std::string_view> Value(capture::ThreadId thread, uint64_t time,
                                        std::string_view key) const;
  bool empty() const { return capture_.labels.size() == 0; }

 private:
  const capture::Capture& capture_;
  // Per thread: its spans grouped by key, each group in start order.
  std::vector<std::vector<std::vector<size_t>>> by_thread_;
  std::optional<size_t> Covering(const std::vector<size_t>& spans, uint64_t time) const;
};

}  // namespace microscope::analysis
