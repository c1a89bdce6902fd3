#include "analysis/summary.h"

#include <algorithm>

namespace microscope::analysis {

Summary Summarize(const capture::Capture& c) {
  Summary s;
  const capture::Settings& st = c.settings;
  s.mode = st.mode;
  s.command = st.command;
  s.target_pid = st.target_pid;
  s.frequency = st.frequency;
  s.symbols = st.symbols;
  s.call_graph = st.call_graph;
  s.stack_copy = st.stack_copy;
  s.metric = st.metric;
  s.unit = st.unit;
  s.duration_ns = st.end_time > st.start_time ? st.end_time - st.start_time : 0;
  s.lost_records = st.lost_records;
  s.lost_samples = st.lost_samples;
  s.throttles = st.throttles;
  s.kernel_frames = st.kernel_frames;
  s.notes = st.notes;
  // A stack is fully named when every frame on it has a function.
  std::vector<uint8_t> named(c.stacks.size());
  for (size_t n = 0; n < c.stacks.size(); ++n) {
    uint32_t p = c.stacks.parent[n];
    named[n] =
        c.frames[c.stacks.frame[n]].function != capture::kNone && (p == capture::kNone || named[p]);
  }
  std::vector<uint64_t> per_thread(c.threads.size());
  std::vector<uint64_t> per_process(c.processes.size());
  for (size_t i = 0; i < c.samples.size(); ++i) {
    uint32_t n = c.samples.CountAt(i);
    s.samples += n;
    if (c.samples.stack[i] != capture::kNone && named[c.samples.stack[i]]) s.fully_named += n;
    s.value += c.samples.weight[i];
    s.stack_ends[size_t(c.samples.end[i])] += n;
    per_thread[c.samples.thread[i]] += n;
    per_process[c.threads[c.samples.thread[i]].process] += n;
  }
  for (size_t i = 0; i < c.processes.size(); ++i) {
    const capture::Process& p = c.processes[i];
    s.processes.push_back({p.pid, p.parent_pid, c.str(p.command), p.exit_status, per_process[i]});
  }
  std::sort(s.processes.begin(), s.processes.end(),
            [](const ProcessSummary& a, const ProcessSummary& b) { return a.pid < b.pid; });
  for (size_t i = 0; i < c.threads.size(); ++i) {
    const capture::Thread& t = c.threads[i];
    s.threads.push_back({t.tid, c.processes[t.process].pid, c.str(t.name), per_thread[i]});
  }
  std::sort(s.threads.begin(), s.threads.end(), [](const ThreadSummary& a, const ThreadSummary& b) {
    if (a.samples != b.samples) return a.samples > b.samples;
    return a.tid < b.tid;
  });
  for (const capture::Problem& p : c.problems) {
    s.problems.push_back({c.str(p.kind), p.count, c.str(p.example)});
  }
  std::sort(s.problems.begin(), s.problems.end(),
            [](const ProblemSummary& a, const ProblemSummary& b) { return a.kind < b.kind; });
  return s;
}

std::vector<ThreadCost> ThreadTotals(const capture::Capture& c, const SampleFilter& filter) {
  std::vector<ThreadCost> out(c.threads.size());
  for (size_t t = 0; t < c.threads.size(); ++t) {
    out[t].tid = c.threads[t].tid;
    out[t].pid = c.processes[c.threads[t].process].pid;
    out[t].name = c.str(c.threads[t].name);
  }
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (!filter.Keep(c, i)) continue;
    ThreadCost& t = out[c.samples.thread[i]];
    t.samples += c.samples.CountAt(i);
    t.value += c.samples.weight[i];
  }
  std::erase_if(out, [](const ThreadCost& t) { return t.samples == 0; });
  std::sort(out.begin(), out.end(), [](const ThreadCost& a, const ThreadCost& b) {
    if (a.value != b.value) return a.value > b.value;
    return a.tid < b.tid;
  });
  return out;
}

}  // namespace microscope::analysis
