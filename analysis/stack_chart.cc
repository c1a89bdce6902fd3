#include "analysis/stack_chart.h"

#include <algorithm>
#include <unordered_map>

namespace microscope::analysis {

using capture::kNone;

namespace {

// Interns the stacks and names of the runs.
class ChartStacks {
 public:
  ChartStacks(const capture::Capture& c, const FunctionKeys& keys, StackChart* chart)
      : c_(c), keys_(keys), chart_(chart) {}

  uint32_t Of(capture::StackId stack) {
    auto [it, fresh] = stacks_.try_emplace(stack, uint32_t(chart_->stacks.size()));
    if (!fresh) return it->second;
    std::vector<uint32_t> frames;
    for (uint32_t n = stack; n != kNone; n = c_.stacks.parent[n]) {
      frames.push_back(Name(keys_.KeyOf(c_.stacks.frame[n])));
    }
    std::reverse(frames.begin(), frames.end());
    chart_->stacks.push_back(std::move(frames));
    return it->second;
  }

 private:
  uint32_t Name(KeyId key) {
    auto [it, fresh] = names_.try_emplace(key, uint32_t(chart_->names.size()));
    if (fresh) {
      chart_->names.push_back(keys_.Name(key));
      chart_->modules.push_back(keys_.ModuleName(key));
    }
    return it->second;
  }

  const capture::Capture& c_;
  const FunctionKeys& keys_;
  StackChart* chart_;
  std::unordered_map<capture::StackId, uint32_t> stacks_;
  std::unordered_map<KeyId, uint32_t> names_;
};

}  // namespace

StackChart ComputeStackChart(const capture::Capture& c, const FunctionKeys& keys,
                             const SampleFilter& filter, size_t max_runs, Cancel cancel) {
  StackChart chart;
  const capture::Samples& s = c.samples;
  // The busiest thread kept.
  std::vector<uint64_t> per_thread(c.threads.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (cancel.At(i)) return chart;
    if (filter.Keep(c, i)) per_thread[s.thread[i]] += s.CountAt(i);
  }
  const auto busiest = std::max_element(per_thread.begin(), per_thread.end());
  if (busiest == per_thread.end() || *busiest == 0) return chart;
  const capture::ThreadId thread = capture::ThreadId(busiest - per_thread.begin());
  chart.threads = size_t(
      std::count_if(per_thread.begin(), per_thread.end(), [](uint64_t n) { return n != 0; }));
  chart.tid = c.threads[thread].tid;
  chart.thread = c.str(c.threads[thread].name);
  chart.thread_samples = *busiest;
  // A sample of a time metric covers its weight; of another (bytes,
  // events), it lasts until the thread's next sample.
  const bool timed = c.settings.unit == "nanoseconds";
  const uint64_t origin = c.settings.start_time;
  ChartStacks stacks(c, keys, &chart);
  std::vector<size_t> kept;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.thread[i] == thread && filter.Keep(c, i)) kept.push_back(i);
  }
  for (size_t k = 0; k < kept.size(); ++k) {
    if (cancel.At(k)) break;
    const size_t i = kept[k];
    const uint64_t start = s.time[i] > origin ? s.time[i] - origin : 0;
    uint64_t end = timed ? start + std::max<uint64_t>(1, s.weight[i]) : start + 1;
    if (!timed && k + 1 < kept.size()) end = std::max(end, s.time[kept[k + 1]] - origin);
    const uint32_t stack = s.stack[i] == kNone ? stacks.Of(kNone) : stacks.Of(s.stack[i]);
    if (!chart.runs.empty()) {
      StackChartRun& last = chart.runs.back();
      // Touching the run before: overlapping it, or after it by less than
      // half a sample's weight (a timer's samples come a little late or
      // early, never exactly a period apart).
      const uint64_t slack = timed ? s.weight[i] / 2 : 0;
      if (start <= last.end + slack) {
        if (last.stack == stack) {
          last.end = std::max(last.end, end);
          last.samples += s.CountAt(i);
          continue;
        }
        // Another stack: the run before it ends where this one starts.
        last.end = std::max(last.start + 1, start);
      }
    }
    if (chart.runs.size() >= max_runs) {
      chart.truncated = true;
      break;
    }
    chart.runs.push_back({start, end, stack, s.CountAt(i)});
  }
  return chart;
}

}  // namespace microscope::analysis
