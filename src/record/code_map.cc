#include "src/record/code_map.h"

#include <algorithm>

namespace microscope::record {

using capture::kNone;

void CodeMap::Mark(capture::ModuleId module, uint64_t begin, uint64_t end, uint8_t tag) {
  if (module >= capture_->modules.size() || begin >= end || tag == 0) return;
  if (module_marks_.size() <= module) module_marks_.resize(module + 1);
  auto& ranges = module_marks_[module];
  CodeRange range{begin, end, tag};
  ranges.insert(
      std::upper_bound(ranges.begin(), ranges.end(), range,
                       [](const CodeRange& a, const CodeRange& b) { return a.begin < b.begin; }),
      range);
  if (std::find(newly_marked_.begin(), newly_marked_.end(), module) == newly_marked_.end())
    newly_marked_.push_back(module);
}

void CodeMap::MarkFramePointerCode(capture::ModuleId module, uint64_t begin, uint64_t end) {
  if (module >= capture_->modules.size() || begin >= end) return;
  if (frame_pointer_code_.size() <= module) frame_pointer_code_.resize(module + 1);
  auto& ranges = frame_pointer_code_[module];
  ranges.insert(std::upper_bound(ranges.begin(), ranges.end(), std::pair{begin, end}),
                std::pair{begin, end});
}

void CodeMap::MarkRuntime(capture::ModuleId module, capture::Runtime runtime) {
  if (module < capture_->modules.size()) capture_->modules[module].runtime = runtime;
}

bool CodeMap::FramePointerCode(capture::ModuleId module, uint64_t offset) const {
  if (module >= frame_pointer_code_.size()) return false;
  const auto& ranges = frame_pointer_code_[module];
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::pair{offset, UINT64_MAX});
  return it != ranges.begin() && offset < std::prev(it)->second;
}

uint8_t CodeMap::FrameTag(capture::ModuleId module, uint64_t address) const {
  const uint8_t tag = TagOf(module, address);
  if (tag != 0 || module == kNone || module >= capture_->modules.size()) return tag;
  return capture_->modules[module].kind == capture::ModuleKind::kAnonymous
             ? code_tags::kAnonymousCode
             : 0;
}

uint8_t CodeMap::TagOf(capture::ModuleId module, uint64_t offset) const {
  if (module == kNone || module >= module_marks_.size()) return 0;
  const auto& ranges = module_marks_[module];
  auto it = std::upper_bound(ranges.begin(), ranges.end(), offset,
                             [](uint64_t o, const CodeRange& r) { return o < r.begin; });
  if (it == ranges.begin()) return 0;
  --it;
  return offset < it->end ? it->tag : 0;
}

}  // namespace microscope::record
