#include "analysis/summary.h"

#include "analysis/labels.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace microscope::analysis {

Summary Summarize(const capture::Capture& c) {
  Summary s;
  const capture::Settings& st = c.settings;
  s.mode = st.mode;
  s.recorder = st.recorder;
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
  s.lost_task_records = st.lost_task_records;
  s.ring_lost_records = st.ring_lost_records;
  s.kernel_lost_records = st.kernel_lost_records;
  s.throttles = st.throttles;
  s.kernel_frames = st.kernel_frames;
  s.notes = st.notes;
  s.realtime_start = st.realtime_start;
  s.part = st.part;
  s.part_index = st.part_index;
  s.recording_id = st.recording_id;
  s.budget_ppm = st.budget_ppm;
  s.budget_steps = st.budget_steps;
  s.start_time = st.start_time;
  s.sources = st.sources;
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
  std::map<capture::GapCause, GapSummary> gaps;
  for (const capture::Gap& g : c.gaps) {
    GapSummary& to = gaps[g.cause];
    to.cause = std::string(capture::GapCauseName(g.cause));
    ++to.gaps;
    to.ns += g.end - g.begin;
    to.count += g.count;
  }
  for (auto& [cause, summary] : gaps) s.gaps.push_back(std::move(summary));
  return s;
}

std::vector<ThreadCost> ThreadTotals(const capture::Capture& c, const SampleFilter& filter) {
  std::vector<ThreadCost> out(c.threads.size());
  for (size_t t = 0; t < c.threads.size(); ++t) {
    out[t].tid = c.threads[t].tid;
    out[t].pid = c.processes[c.threads[t].process].pid;
    out[t].name = c.str(c.threads[t].name);
  }
  const SampleLabels labels(c);
  std::vector<std::vector<std::string_view>> isolates(c.threads.size());
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (!filter.Keep(c, i)) continue;
    const capture::ThreadId thread = c.samples.thread[i];
    ThreadCost& t = out[thread];
    t.samples += c.samples.CountAt(i);
    t.value += c.samples.weight[i];
    if (labels.empty()) continue;
    const uint64_t time = c.samples.time[i];
    if (auto gil = labels.Value(thread, time, capture::kGilLabel)) {
      t.gil_labeled += c.samples.CountAt(i);
      if (*gil == "held") t.gil_held += c.samples.CountAt(i);
    }
    if (auto isolate = labels.Value(thread, time, capture::kV8IsolateLabel)) {
      auto& seen = isolates[thread];
      if (std::find(seen.begin(), seen.end(), *isolate) == seen.end()) seen.push_back(*isolate);
    }
  }
  // Each thread's isolates, in the order its samples first ran them.
  for (size_t thread = 0; thread < isolates.size(); ++thread) {
    for (std::string_view isolate : isolates[thread])
      out[thread].isolate += (out[thread].isolate.empty() ? "" : ",") + std::string(isolate);
  }
  std::erase_if(out, [](const ThreadCost& t) { return t.samples == 0; });
  std::sort(out.begin(), out.end(), [](const ThreadCost& a, const ThreadCost& b) {
    if (a.value != b.value) return a.value > b.value;
    return a.tid < b.tid;
  });
  return out;
}

OffCpuSummary SummarizeOffCpu(const capture::Capture& c, const SampleFilter& filter,
                              size_t top_wakers) {
  OffCpuSummary s;
  if (const capture::SourceSetting* off = c.settings.Source(capture::kOffCpuSource)) {
    s.status = off->state;
    s.min_ns = off->Value("min_ns");
  }
  constexpr size_t kStates = capture::kOffCpuStateCount;
  std::vector<OffCpuStateTotal> per(c.threads.size() * kStates);
  // (thread, waker tid, waker name) -> waker
  std::map<std::tuple<capture::ThreadId, int32_t, capture::StringId>, Waker> wakers;
  const capture::OffCpu& o = c.off_cpu;
  for (size_t i = 0; i < o.size(); ++i) {
    if (!filter.Keep(o.thread[i], o.start[i], o.stack[i])) continue;
    uint64_t ns = o.end[i] - o.start[i];
    ++s.intervals;
    s.interval_ns += ns;
    if (o.flags[i] & capture::kOffCpuCutAtStart) {
      ++s.cut_at_start;
      s.cut_at_start_ns += ns;
    }
    if (o.flags[i] & capture::kOffCpuCutAtEnd) {
      ++s.cut_at_end;
      s.cut_at_end_ns += ns;
    }
    s.no_user_stack += (o.flags[i] & capture::kOffCpuNoUserStack) != 0;
    for (OffCpuStateTotal* t :
         {&s.by_state[uint8_t(o.state[i])], &per[o.thread[i] * kStates + uint8_t(o.state[i])]}) {
      ++t->intervals;
      t->total_ns += ns;
    }
    if (o.state[i] == capture::OffCpuState::kPreempted) continue;
    Waker& w = wakers[{o.thread[i], o.waker_tid[i], o.waker_name[i]}];
    w.tid = o.waker_tid[i];
    w.name = c.str(o.waker_name[i]);
    ++w.count;
    w.total_ns += ns;
  }
  const capture::OffCpuShort& sh = c.off_cpu_short;
  for (size_t i = 0; i < sh.size(); ++i) {
    if (!filter.Keep(sh.thread[i], c.settings.start_time, capture::kNone)) continue;
    s.shorts += sh.count[i];
    s.short_ns += sh.total[i];
    for (OffCpuStateTotal* t :
         {&s.by_state[uint8_t(sh.state[i])], &per[sh.thread[i] * kStates + uint8_t(sh.state[i])]}) {
      t->shorts += sh.count[i];
      t->total_ns += sh.total[i];
    }
  }
  for (size_t k = 0; k < per.size(); ++k) {
    if (per[k].intervals == 0 && per[k].shorts == 0) continue;
    s.by_thread_state.push_back(
        {capture::ThreadId(k / kStates), capture::OffCpuState(k % kStates), per[k]});
  }
  auto tid = [&](capture::ThreadId t) { return c.threads[t].tid; };
  std::sort(s.by_thread_state.begin(), s.by_thread_state.end(),
            [&](const OffCpuThreadState& a, const OffCpuThreadState& b) {
              if (a.total.total_ns != b.total.total_ns) return a.total.total_ns > b.total.total_ns;
              if (tid(a.thread) != tid(b.thread)) return tid(a.thread) < tid(b.thread);
              return a.state < b.state;
            });
  for (auto& [key, w] : wakers) {
    capture::ThreadId t = std::get<0>(key);
    if (s.wakers.empty() || s.wakers.back().thread != t) s.wakers.push_back({t, 0, 0, {}});
    s.wakers.back().count += w.count;
    s.wakers.back().total_ns += w.total_ns;
    s.wakers.back().wakers.push_back(std::move(w));
  }
  for (ThreadWakers& tw : s.wakers) {
    std::sort(tw.wakers.begin(), tw.wakers.end(), [](const Waker& a, const Waker& b) {
      if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
      if (a.count != b.count) return a.count > b.count;
      if (a.tid != b.tid) return a.tid < b.tid;
      return a.name < b.name;
    });
    if (tw.wakers.size() > top_wakers) tw.wakers.resize(top_wakers);
  }
  std::sort(s.wakers.begin(), s.wakers.end(), [&](const ThreadWakers& a, const ThreadWakers& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return tid(a.thread) < tid(b.thread);
  });
  return s;
}

}  // namespace microscope::analysis
