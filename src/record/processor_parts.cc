// Processor: the parts an always-on recording cuts (segments, snapshots,
// a rolling window's eviction), the generations of its dictionaries, which
// end at each cut (capture/compact.h), and the whole capture at the end.
#include <algorithm>

#include "capture/compact.h"
#include "capture/row_order.h"
#include "capture/window.h"
#include "src/record/processor.h"

namespace microscope::record {

using capture::kNone;

void Processor::TakeRows(uint64_t before, bool by_end, capture::Capture* taken) {
  std::vector<char> open(capture_.labels.size(), 0);
  for (const auto& [key, row] : open_labels_) open[row] = 1;
  capture::TimeCut cut;
  cut.before = before;
  cut.intervals_by_end = by_end;
  cut.open_labels = &open;
  std::vector<uint32_t> index = capture::TakeEventRows(&capture_, cut, taken);
  for (auto& [key, row] : open_labels_) row = index[row];
}

void Processor::Evict(uint64_t before) {
  TakeRows(before, /*by_end=*/true, nullptr);
  EndGeneration(before);
}

void Processor::EndGeneration(uint64_t before) {
  capture::EntityPins pins;
  pins.threads.resize(capture_.threads.size());
  pins.processes.resize(capture_.processes.size());
  pins.mappings.resize(capture_.mappings.size());
  for (const auto& [tid, row] : threads_) pins.threads[row] = 1;
  for (const auto& [key, row] : open_labels_) pins.threads[key.first] = 1;
  for (const auto& [pid, p] : processes_) {
    pins.processes[p.row] = 1;
    for (const auto& [start, row] : p.live) pins.mappings[row] = 1;
    for (const auto& [start, row] : p.before_exec) pins.mappings[row] = 1;
  }
  const capture::EntityRenumbering r = capture::DropEndedEntities(&capture_, before, pins);
  for (auto& [tid, row] : threads_) row = r.threads[row];
  for (auto& [pid, p] : processes_) {
    p.row = r.processes[p.row];
    for (auto& [start, row] : p.live) row = r.mappings[row];
    for (auto& [start, row] : p.before_exec) row = r.mappings[row];
  }
  std::map<std::pair<capture::ThreadId, capture::StringId>, size_t> open;
  for (const auto& [key, row] : open_labels_) open[{r.threads[key.first], key.second}] = row;
  open_labels_ = std::move(open);
  std::vector<uint64_t> bias(capture_.mappings.size(), kUnknownBias);
  for (size_t i = 0; i < mapping_bias_.size(); ++i) {
    if (r.mappings[i] != kNone) bias[r.mappings[i]] = mapping_bias_[i];
  }
  mapping_bias_ = std::move(bias);
  ForgetUnusedCode();
}

void Processor::ForgetUnusedCode() {
  const capture::CodeRenumbering r = capture::DropUnusedCode(&capture_);
  stacks_.Reindex();
  capture::RenumberValues(frames_, r.frames);
  capture::RenumberValues(jit_functions_, r.functions);
  interpreted_.Renumber(r);
  std::map<std::tuple<uint64_t, capture::ModuleId, capture::FunctionId>, capture::FrameId> jit;
  for (const auto& [key, frame] : jit_frames_) {
    if (r.frames[frame] == kNone) continue;
    jit[{std::get<0>(key), std::get<1>(key), capture::Renumbered(r.functions, std::get<2>(key))}] =
        r.frames[frame];
  }
  jit_frames_ = std::move(jit);
  // Renumbering keeps the order: the tags of the kept frames, in order.
  std::vector<uint8_t> tags;
  for (size_t f = 0; f < frame_tag_.size(); ++f) {
    if (r.frames[f] != kNone) tags.push_back(frame_tag_[f]);
  }
  frame_tag_ = std::move(tags);
}

capture::Capture Processor::Part(uint64_t from, uint64_t now, std::optional<uint64_t> take_before) {
  capture::Capture part;
  if (take_before) {
    TakeRows(*take_before, /*by_end=*/false, &part);
  } else {
    part.samples = capture_.samples;
    part.syscalls = capture_.syscalls;
    part.off_cpu = capture_.off_cpu;
    part.off_cpu_short = capture_.off_cpu_short;
    part.labels = capture_.labels;
    part.probe_records = capture_.probe_records;
    part.readings = capture_.readings;
    // Gaps so far, and those still open (throttled, the budget's step) as
    // far as `now`.
    part.gaps = capture_.gaps;
    AppendOpenGaps(now, &part.gaps);
    capture::SortGaps(&part.gaps);
  }
  part.probe_sites = capture_.probe_sites;
  part.settings = capture_.settings;
  capture::CopyNeededDictionaries(capture_, from, now, &part);
  if (take_before) EndGeneration(*take_before);
  // Rows that began after `now` (processed beyond a segment's end) close
  // where they began; a part holds no event of theirs.
  for (auto& t : part.threads) {
    if (t.end_time == 0) t.end_time = std::max(now, t.start_time);
  }
  for (auto& p : part.processes) {
    if (p.end_time == 0) p.end_time = std::max(now, p.start_time);
  }
  for (auto& m : part.mappings) {
    if (m.time_end == 0) m.time_end = std::max(now, m.time_start);
  }
  auto add_string = [&part](const std::string& text) {
    part.strings.push_back(text);
    return capture::StringId(part.strings.size() - 1);
  };
  for (const auto& [kind, pc] : problems_) {
    const capture::StringId k = add_string(kind);
    part.problems.push_back(
        {k, pc.count, pc.example.empty() ? capture::kNone : add_string(pc.example)});
  }
  capture::NormalizeEventRows(&part);
  return part;
}

void Processor::SortSamplesByTime() {
  capture::Samples& s = capture_.samples;
  // A record stamped before the pump's watermark but written after it (a
  // long vCPU stall) was processed one round late: put samples back in order.
  size_t late = 0;
  for (size_t i = 1; i < s.size(); ++i) late += s.time[i] < s.time[i - 1];
  if (capture::SortTableBy(s, s.time)) {
    CountProblem("records arrived late and were reordered", std::to_string(late) + " samples");
  }
}

capture::ProbeSiteId Processor::Add(const capture::ProbeSites::Row& row) {
  capture_.probe_sites.Append(row);
  return capture::ProbeSiteId(capture_.probe_sites.size() - 1);
}

capture::Capture Processor::Finish(uint64_t end_time) {
  SortSamplesByTime();
  CloseOpenGaps(end_time);
  capture::SortGaps(&capture_.gaps);
  capture::OffCpu& o = capture_.off_cpu;
  for (size_t i = 0; i < o.size(); ++i) {
    if (o.end[i] == 0 || o.end[i] > end_time) {
      o.end[i] = std::max(end_time, o.start[i]);
      o.flags[i] |= capture::kOffCpuCutAtEnd;
    }
  }
  // Sources deliver in time order, but a system call's row comes at its
  // exit and probe rings read in one round may interleave.
  capture::NormalizeEventRows(&capture_);
  for (auto& t : capture_.threads) {
    if (t.end_time == 0) t.end_time = end_time;
  }
  for (auto& p : capture_.processes) {
    if (p.end_time == 0) p.end_time = end_time;
  }
  for (auto& m : capture_.mappings) {
    if (m.time_end == 0) m.time_end = end_time;
  }
  for (const auto& [kind, pc] : problems_) {
    capture_.problems.push_back({strings_.Intern(kind), pc.count,
                                 pc.example.empty() ? kNone : strings_.Intern(pc.example)});
  }
  return std::move(capture_);
}

}  // namespace microscope::record
