// Processor: the runtimes' seam (splicer.h). Marks are per module, so each
// frame's tag is found once, when the frame is first interned; a stack is
// handed to the splicers only when one of its frames is tagged.
#include <algorithm>

#include "src/record/processor.h"

namespace microscope::record {

using capture::FrameId;
using capture::kNone;

void Processor::AddSplicer(StackSplicer* splicer) {
  splicers_.push_back(splicer);
  const size_t known = frame_tag_.size();
  frame_tag_.resize(capture_.frames.size(), 0);
  for (size_t f = known; f < capture_.frames.size(); ++f) {
    if (capture_.frames[f].kind == capture::FrameKind::kNative)
      frame_tag_[f] = FrameTag(capture_.frames[f].module, capture_.frames[f].address);
  }
  // Mappings already known (an attach seeds them before sources start).
  module_announced_.assign(capture_.modules.size(), 0);
  for (auto& [pid, process] : processes_) {
    for (const auto& [start, row] : process.live) AnnounceMapping(pid, row);
  }
}

void Processor::AddJitNamer(JitNamer* namer) {
  jit_namers_.push_back(namer);
  AddMappingWatcher(namer);
}

void Processor::AddMappingWatcher(MappingWatcher* watcher) {
  mapping_watchers_.push_back(watcher);
  // Mappings already known (an attach seeds them before sources start).
  for (auto& [pid, process] : processes_) {
    for (const auto& [start, row] : process.live) watcher->OnMapping(Mapped(pid, row, false));
  }
}

MappedModule Processor::Mapped(uint32_t pid, uint32_t mapping_row, bool first) const {
  const capture::Mapping& m = capture_.mappings[mapping_row];
  const capture::Module& mod = capture_.modules[m.module];
  MappedModule mapped;
  mapped.pid = pid;
  mapped.module = m.module;
  mapped.path = capture_.str(mod.path);
  mapped.build_id = mod.build_id;
  mapped.start = m.start;
  mapped.end = m.end;
  mapped.file_offset = m.file_offset;
  mapped.first = first;
  return mapped;
}

void Processor::AnnounceMapping(uint32_t pid, uint32_t mapping_row) {
  const capture::ModuleId module = capture_.mappings[mapping_row].module;
  for (MappingWatcher* w : mapping_watchers_) w->OnMapping(Mapped(pid, mapping_row, false));
  if (splicers_.empty()) return;
  if (module_announced_.size() <= module) module_announced_.resize(module + 1, 0);
  const MappedModule mapped = Mapped(pid, mapping_row, !module_announced_[module]);
  module_announced_[module] = 1;
  for (StackSplicer* s : splicers_) s->OnModuleMapped(mapped, this);
}

void Processor::Mark(capture::ModuleId module, uint64_t begin, uint64_t end, uint8_t tag) {
  if (module >= capture_.modules.size() || begin >= end || tag == 0) return;
  if (module_marks_.size() <= module) module_marks_.resize(module + 1);
  auto& ranges = module_marks_[module];
  CodeRange range{begin, end, tag};
  ranges.insert(
      std::upper_bound(ranges.begin(), ranges.end(), range,
                       [](const CodeRange& a, const CodeRange& b) { return a.begin < b.begin; }),
      range);
  // Frames interned before the mark learn it now.
  for (size_t f = 0; f < capture_.frames.size() && f < frame_tag_.size(); ++f) {
    const capture::Frame& frame = capture_.frames[f];
    if (frame.module == module && frame.kind == capture::FrameKind::kNative)
      frame_tag_[f] = FrameTag(module, frame.address);
  }
}

void Processor::MarkFramePointerCode(capture::ModuleId module, uint64_t begin, uint64_t end) {
  if (module >= capture_.modules.size() || begin >= end) return;
  if (frame_pointer_code_.size() <= module) frame_pointer_code_.resize(module + 1);
  auto& ranges = frame_pointer_code_[module];
  ranges.insert(std::upper_bound(ranges.begin(), ranges.end(), std::pair{begin, end}),
                std::pair{begin, end});
}

void Processor::MarkAnonymousFramePointers(uint32_t pid) {
  auto p = processes_.find(pid);
  if (p != processes_.end()) p->second.anonymous_frame_pointers = true;
}

bool Processor::FramePointerCode(capture::ModuleId module, uint64_t offset) const {
  if (module >= frame_pointer_code_.size()) return false;
  const auto& ranges = frame_pointer_code_[module];
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::pair{offset, UINT64_MAX});
  return it != ranges.begin() && offset < std::prev(it)->second;
}

void Processor::MarkRuntime(capture::ModuleId module, capture::Runtime runtime) {
  if (module < capture_.modules.size()) capture_.modules[module].runtime = runtime;
}

uint8_t Processor::FrameTag(capture::ModuleId module, uint64_t address) const {
  const uint8_t tag = TagOf(module, address);
  if (tag != 0 || module == kNone || module >= capture_.modules.size()) return tag;
  return capture_.modules[module].kind == capture::ModuleKind::kAnonymous
             ? code_tags::kAnonymousCode
             : 0;
}

uint8_t Processor::TagOf(capture::ModuleId module, uint64_t offset) const {
  if (module == kNone || module >= module_marks_.size()) return 0;
  const auto& ranges = module_marks_[module];
  auto it = std::upper_bound(ranges.begin(), ranges.end(), offset,
                             [](uint64_t o, const CodeRange& r) { return o < r.begin; });
  if (it == ranges.begin()) return 0;
  --it;
  return offset < it->end ? it->tag : 0;
}

void Processor::SpliceScratch(uint32_t pid, uint32_t tid, uint64_t time,
                              std::span<const uint8_t> walk) {
  for (StackSplicer* splicer : splicers_) {
    scratch_tags_.resize(scratch_.size());
    bool any = false;
    for (size_t i = 0; i < scratch_.size(); ++i) {
      FrameId f = scratch_[i];
      scratch_tags_[i] = f < frame_tag_.size() ? frame_tag_[f] : 0;
      any |= scratch_tags_[i] != 0;
    }
    const bool owns = !walk.empty() && splicer->OwnsWalk(walk);
    if (!any && !owns) continue;
    scratch_sp_.resize(scratch_.size(), 0);
    splicer->Splice({pid, tid, time, &scratch_, scratch_tags_, scratch_sp_,
                     owns ? walk : std::span<const uint8_t>(), &scratch_label_},
                    this);
  }
}

FrameId Processor::Interpreted(const InterpretedFrame& frame) {
  capture::StringId name = strings_.Intern(frame.function);
  capture::StringId file = frame.file.empty() ? kNone : strings_.Intern(frame.file);
  auto [fn, new_function] = interpreted_functions_.try_emplace(
      {name, file, frame.first_line}, capture::FunctionId(capture_.functions.size()));
  if (new_function) capture_.functions.push_back({name, kNone, kNone});
  auto [it, inserted] =
      interpreted_frames_.try_emplace({fn->second, frame.line}, FrameId(capture_.frames.size()));
  if (inserted) {
    capture_.frames.push_back(
        {capture::FrameKind::kInterpreted, kNone, frame.first_line, fn->second, file, frame.line});
    if (!splicers_.empty()) frame_tag_.push_back(0);
  }
  return it->second;
}

}  // namespace microscope::record
