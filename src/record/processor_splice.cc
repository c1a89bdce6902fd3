// Processor: the runtimes' seam (splicer.h). The runtimes mark code in the
// processor's CodeMap and intern frames through its InterpretedFrames.
// Marks are per module, so each frame's tag is found once, when the frame
// is first interned (or its module marked); a stack is handed to the
// splicers only when one of its frames is tagged.
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
      frame_tag_[f] = code_map_.FrameTag(capture_.frames[f].module, capture_.frames[f].address);
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
  for (StackSplicer* s : splicers_) s->OnModuleMapped(mapped, &code_map_);
  RetagNewlyMarked();
}

void Processor::TagNewFrame(FrameId frame, uint8_t tag) {
  if (splicers_.empty()) return;
  frame_tag_.resize(frame, 0);
  frame_tag_.push_back(tag);
}

void Processor::RetagNewlyMarked() {
  for (capture::ModuleId module : code_map_.TakeNewlyMarked()) {
    for (size_t f = 0; f < capture_.frames.size() && f < frame_tag_.size(); ++f) {
      const capture::Frame& frame = capture_.frames[f];
      if (frame.module == module && frame.kind == capture::FrameKind::kNative)
        frame_tag_[f] = code_map_.FrameTag(module, frame.address);
    }
  }
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
                    &interpreted_);
  }
}

}  // namespace microscope::record
