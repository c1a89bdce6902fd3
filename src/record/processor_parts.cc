// Processor: the parts an always-on recording cuts (segments, snapshots,
// a rolling window's eviction) and the generations of its dictionaries,
// which end at each cut (capture/compact.h).
#include <algorithm>

#include "capture/compact.h"
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

namespace {

// Rewrites the ids a cache maps to through `ids`, leaving out the dropped.
template <typename Map>
void RemapValues(Map& m, const std::vector<uint32_t>& ids) {
  for (auto it = m.begin(); it != m.end();) {
    if (ids[it->second] == kNone) {
      it = m.erase(it);
    } else {
      it->second = ids[it->second];
      ++it;
    }
  }
}

uint32_t Renumbered(const std::vector<uint32_t>& ids, uint32_t id) {
  return id == kNone ? kNone : ids[id];
}

}  // namespace

void Processor::ForgetUnusedCode() {
  const capture::CodeRenumbering r = capture::DropUnusedCode(&capture_);
  stacks_.Reindex();
  RemapValues(frames_, r.frames);
  RemapValues(jit_functions_, r.functions);
  RemapValues(interpreted_functions_, r.functions);
  // Caches keyed by a function: a kept frame keeps its function.
  std::map<std::pair<capture::FunctionId, uint32_t>, capture::FrameId> interpreted;
  for (const auto& [key, frame] : interpreted_frames_) {
    if (r.frames[frame] != kNone)
      interpreted[{Renumbered(r.functions, key.first), key.second}] = r.frames[frame];
  }
  interpreted_frames_ = std::move(interpreted);
  std::map<std::tuple<uint64_t, capture::ModuleId, capture::FunctionId>, capture::FrameId> jit;
  for (const auto& [key, frame] : jit_frames_) {
    if (r.frames[frame] == kNone) continue;
    jit[{std::get<0>(key), std::get<1>(key), Renumbered(r.functions, std::get<2>(key))}] =
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

}  // namespace microscope::record
