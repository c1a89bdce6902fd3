#include "sql/corpus.h"

#include <algorithm>
#include <map>

#include "analysis/keys.h"

namespace microscope::sql {

using capture::kNone;

namespace {

std::vector<uint32_t> Depths(const capture::Stacks& stacks) {
  std::vector<uint32_t> depth(stacks.size(), kNone);
  std::vector<uint32_t> path;
  for (uint32_t i = 0; i < stacks.size(); ++i) {
    // A parent may follow its child in a merged capture: walk up to a node
    // whose depth is known (the reader bounds every stack's depth).
    uint32_t n = i;
    while (n != kNone && depth[n] == kNone) {
      path.push_back(n);
      n = stacks.parent[n];
    }
    uint32_t d = n == kNone ? 0 : depth[n] + 1;
    for (size_t k = path.size(); k-- > 0;) depth[path[k]] = d++;
    path.clear();
  }
  return depth;
}

void AddLoss(Part* p, const char* kind, uint64_t count) {
  p->losses.emplace_back(kind, count);
}

}  // namespace

size_t Part::Rows(IdKind kind) const {
  const capture::Capture& c = capture;
  switch (kind) {
    case IdKind::kModule:
      return c.modules.size();
    case IdKind::kMapping:
      return c.mappings.size();
    case IdKind::kProcess:
      return c.processes.size();
    case IdKind::kThread:
      return c.threads.size();
    case IdKind::kFunction:
      return c.functions.size();
    case IdKind::kFrame:
      return c.frames.size();
    case IdKind::kStack:
      return c.stacks.size();
    case IdKind::kSample:
      return c.samples.size();
    case IdKind::kSyscall:
      return c.syscalls.size();
    case IdKind::kOffCpu:
      return c.off_cpu.size();
    case IdKind::kZone:
      return zones.occurrences.size();
    case IdKind::kTrace:
      return c.traces.size();
    case IdKind::kTraceTrack:
      return trace_tracks.size();
    case IdKind::kTraceEvent:
      return trace_events.size();
  }
  return 0;
}

std::string_view Part::FrameName(capture::FrameId frame) const {
  const capture::Frame& f = capture.frames[frame];
  if (f.function != kNone) return capture.str(capture.functions[f.function].name);
  return unnamed[frame];
}

Result<const std::vector<analysis::ReportFunction>*> Part::FunctionCosts(
    analysis::Cancel cancel) const {
  if (!costs_) {
    analysis::ReportQuery query;
    query.views.flat = true;
    query.cancel = cancel;
    query.capture_name = name;
    Result<analysis::ReportModel> model = analysis::BuildReport(capture, query);
    if (!model.ok()) return model.status();
    costs_ = std::move(model->flat.rows);
  }
  return &*costs_;
}

const std::vector<std::pair<uint32_t, uint32_t>>& Part::ZoneSamples() const {
  if (!zone_samples_) {
    zone_samples_.emplace();
    if (!zones.occurrences.empty()) {
      const capture::Samples& s = capture.samples;
      std::vector<uint32_t> at = analysis::InnermostAt(
          capture, zones, std::span(s.thread.data(), s.size()), std::span(s.time.data(), s.size()));
      for (uint32_t i = 0; i < at.size(); ++i) {
        if (at[i] != kNone) zone_samples_->emplace_back(i, at[i]);
      }
    }
  }
  return *zone_samples_;
}

namespace {

// First and last value of each (owner, key) in time order.
template <typename Owner>
std::map<std::pair<Owner, capture::StringId>, std::pair<int64_t, int64_t>> FirstLast(
    const capture::Readings& r, Owner (*owner)(const capture::Readings&, size_t)) {
  std::map<std::pair<Owner, capture::StringId>, std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i < r.size(); ++i) {
    const Owner o = owner(r, i);
    auto [it, fresh] = out.try_emplace({o, r.key[i]}, r.value[i], r.value[i]);
    if (!fresh) it->second.second = r.value[i];
  }
  return out;
}

}  // namespace

const std::vector<Part::ThreadWindow>& Part::ThreadWindows() const {
  if (thread_windows_) return *thread_windows_;
  thread_windows_.emplace();
  const capture::Readings& r = capture.readings;
  std::map<capture::ThreadId, size_t> index;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.thread[i] == kNone) continue;
    auto [it, fresh] = index.try_emplace(r.thread[i], thread_windows_->size());
    if (fresh) thread_windows_->push_back({r.thread[i], r.time[i], r.time[i]});
    ThreadWindow& w = (*thread_windows_)[it->second];
    w.end = std::max(w.end, r.time[i]);
  }
  auto by_thread = [](const capture::Readings& rr, size_t i) { return rr.thread[i]; };
  for (const auto& [key, values] : FirstLast<capture::ThreadId>(r, by_thread)) {
    if (key.first == kNone) continue;
    ThreadWindow& w = (*thread_windows_)[index[key.first]];
    const std::string& name = capture.str(key.second);
    const int64_t delta = values.second - values.first;
    if (name == capture::kReadingOnCpu) w.on_cpu = delta;
    if (name == capture::kReadingRunDelay) w.run_delay = delta;
    if (name == capture::kReadingTimeslices) w.timeslices = delta;
  }
  const capture::OffCpu& o = capture.off_cpu;
  for (size_t i = 0; i < o.size(); ++i) {
    auto it = index.find(o.thread[i]);
    if (it == index.end()) continue;
    ThreadWindow& w = (*thread_windows_)[it->second];
    const uint64_t b = std::max(o.start[i], w.start), e = std::min(o.end[i], w.end);
    if (e > b) w.off_cpu[size_t(o.state[i])] += e - b;
  }
  return *thread_windows_;
}

std::optional<int64_t> Part::ScopeWindow::Value(const capture::Capture& c, std::string_view key,
                                                bool last_value) const {
  for (const auto& [k, v] : keys) {
    if (c.str(k) == key) return last_value ? v.first : v.second;
  }
  return std::nullopt;
}

const std::vector<Part::ScopeWindow>& Part::ScopeWindows() const {
  if (scope_windows_) return *scope_windows_;
  scope_windows_.emplace();
  const capture::Readings& r = capture.readings;
  std::map<capture::StringId, size_t> index;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.scope[i] == kNone) continue;
    auto [it, fresh] = index.try_emplace(r.scope[i], scope_windows_->size());
    if (fresh) scope_windows_->push_back({r.scope[i], r.time[i], r.time[i], {}});
    ScopeWindow& w = (*scope_windows_)[it->second];
    w.end = std::max(w.end, r.time[i]);
  }
  auto by_scope = [](const capture::Readings& rr, size_t i) { return rr.scope[i]; };
  for (const auto& [key, values] : FirstLast<capture::StringId>(r, by_scope)) {
    if (key.first == kNone) continue;
    (*scope_windows_)[index[key.first]].keys.push_back(
        {key.second, {values.second, values.second - values.first}});
  }
  return *scope_windows_;
}

void Corpus::Add(std::string name, capture::Capture c) {
  auto p = std::make_unique<Part>();
  p->name = std::move(name);
  p->index = uint32_t(parts_.size());
  p->capture = std::move(c);
  const capture::Capture& cap = p->capture;
  p->stack_depth = Depths(cap.stacks);
  if (cap.probe_records.size() > 0) {
    p->zones = analysis::PairZones(cap);
    p->probe_labels = analysis::ProbeLabelSpans(cap);
    for (uint32_t i = 0; i < cap.probe_records.size(); ++i) {
      if (cap.probe_records.op[i] == capture::ProbeOp::kMark) p->marks.push_back(i);
      if (cap.probe_records.op[i] == capture::ProbeOp::kCounter) p->counters.push_back(i);
    }
  }
  p->unnamed.resize(cap.frames.size());
  for (uint32_t i = 0; i < cap.frames.size(); ++i) {
    const capture::Frame& f = cap.frames[i];
    if (f.function != kNone) continue;
    p->unnamed[i] = f.kind == capture::FrameKind::kNamed ? "?" : analysis::UnnamedFrameName(cap, f);
  }
  const capture::Settings& s = cap.settings;
  AddLoss(p.get(), "lost_records", s.lost_records);
  AddLoss(p.get(), "lost_samples", s.lost_samples);
  if (s.lost_task_records) AddLoss(p.get(), "lost_task_records", *s.lost_task_records);
  if (s.ring_lost_records) AddLoss(p.get(), "ring_lost_records", *s.ring_lost_records);
  if (s.kernel_lost_records) AddLoss(p.get(), "kernel_lost_records", *s.kernel_lost_records);
  AddLoss(p.get(), "throttles", s.throttles);
  AddLoss(p.get(), "unthrottles", s.unthrottles);
  for (uint32_t i = 0; i < s.sources.size(); ++i) {
    const capture::SourceSetting& src = s.sources[i];
    if (src.values.empty()) p->source_values.emplace_back(i, kNone);
    for (uint32_t k = 0; k < src.values.size(); ++k) {
      p->source_values.emplace_back(i, k);
      const std::string& key = src.values[k].first;
      // What a source could not keep: its rings' and its bounds' losses.
      if (key.find("lost") != std::string::npos || key.find("dropped") != std::string::npos ||
          key.find("refused") != std::string::npos) {
        p->losses.emplace_back(src.name + "." + key, src.values[k].second);
      }
    }
  }
  for (uint32_t t = 0; t < cap.traces.size(); ++t) {
    const capture::Trace& tr = cap.traces[t];
    p->trace_first_track.push_back(uint32_t(p->trace_tracks.size()));
    p->trace_first_event.push_back(uint32_t(p->trace_events.size()));
    for (uint32_t i = 0; i < tr.tracks.size(); ++i) p->trace_tracks.emplace_back(t, i);
    for (uint32_t i = 0; i < tr.events.size(); ++i) p->trace_events.emplace_back(t, i);
    for (uint32_t i = 0; i < tr.flows.size(); ++i) p->trace_flows.emplace_back(t, i);
  }
  for (size_t k = 0; k < kIdKinds; ++k) {
    p->base[k] = next_[k];
    next_[k] += p->Rows(IdKind(k));
  }
  parts_.push_back(std::move(p));
}

std::pair<const Part*, uint32_t> Corpus::Locate(IdKind kind, int64_t id) const {
  const size_t k = size_t(kind);
  if (id < 0 || uint64_t(id) >= next_[k]) return {nullptr, 0};
  // The last capture whose first id is at or before `id`, and has rows.
  auto it =
      std::upper_bound(parts_.begin(), parts_.end(), uint64_t(id),
                       [k](uint64_t v, const std::unique_ptr<Part>& p) { return v < p->base[k]; });
  while (it != parts_.begin()) {
    --it;
    const Part& p = **it;
    if (uint64_t(id) - p.base[k] < p.Rows(kind)) return {&p, uint32_t(uint64_t(id) - p.base[k])};
  }
  return {nullptr, 0};
}

}  // namespace microscope::sql
