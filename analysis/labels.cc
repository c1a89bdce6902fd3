#include "analysis/labels.h"

#include <algorithm>

namespace microscope::analysis {

SampleLabels::SampleLabels(const capture::Capture& c) : capture_(c), by_thread_(c.threads.size()) {
  const capture::LabelSpans& l = c.labels;
  for (size_t i = 0; i < l.size(); ++i) {
    if (l.thread[i] >= by_thread_.size()) continue;
    auto& groups = by_thread_[l.thread[i]];
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const std::vector<size_t>& s) { return l.key[s[0]] == l.key[i]; });
    if (g == groups.end()) {
      groups.push_back({i});
    } else {
      g->push_back(i);
    }
  }
  for (auto& groups : by_thread_) {
    for (auto& spans : groups) {
      std::sort(spans.begin(), spans.end(),
                [&](size_t a, size_t b) { return l.start[a] < l.start[b]; });
    }
    std::sort(groups.begin(), groups.end(),
              [&](const std::vector<size_t>& a, const std::vector<size_t>& b) {
                return c.str(l.key[a[0]]) < c.str(l.key[b[0]]);
              });
  }
}

std::optional<size_t> SampleLabels::Covering(const std::vector<size_t>& spans,
                                             uint64_t time) const {
  const capture::LabelSpans& l = capture_.labels;
  auto after = std::upper_bound(spans.begin(), spans.end(), time,
                                [&](uint64_t t, size_t s) { return t < l.start[s]; });
  if (after == spans.begin() || time > l.end[*std::prev(after)]) return std::nullopt;
  return *std::prev(after);
}

void SampleLabels::At(capture::ThreadId thread, uint64_t time, std::vector<size_t>* out) const {
  if (thread >= by_thread_.size()) return;
  for (const auto& spans : by_thread_[thread]) {
    if (auto s = Covering(spans, time)) out->push_back(*s);
  }
}

std::optional<std::string_view> SampleLabels::Value(capture::ThreadId thread, uint64_t time,
                                                    std::string_view key) const {
  if (thread >= by_thread_.size()) return std::nullopt;
  const capture::LabelSpans& l = capture_.labels;
  for (const auto& spans : by_thread_[thread]) {
    if (capture_.str(l.key[spans[0]]) != key) continue;
    if (auto s = Covering(spans, time)) return capture_.str(l.value[*s]);
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace microscope::analysis
