#include "src/record/interpreted_frames.h"

namespace microscope::record {

using capture::FrameId;
using capture::kNone;

FrameId InterpretedFrames::Interpreted(const InterpretedFrame& frame) {
  capture::StringId name = strings_->Intern(frame.function);
  capture::StringId file = frame.file.empty() ? kNone : strings_->Intern(frame.file);
  auto [fn, new_function] = functions_.try_emplace({name, file, frame.first_line},
                                                   capture::FunctionId(capture_->functions.size()));
  if (new_function) capture_->functions.push_back({name, kNone, kNone});
  auto [it, inserted] =
      frames_.try_emplace({fn->second, frame.line}, FrameId(capture_->frames.size()));
  if (inserted) {
    capture_->frames.push_back(
        {capture::FrameKind::kInterpreted, kNone, frame.first_line, fn->second, file, frame.line});
  }
  return it->second;
}

void InterpretedFrames::NameNative(FrameId id, std::string_view function) {
  capture::Frame& f = capture_->frames[id];
  if (f.kind != capture::FrameKind::kNative || f.function != kNone) return;
  capture::StringId name = strings_->Intern(function);
  auto [fn, added] =
      native_.try_emplace({name, f.module}, capture::FunctionId(capture_->functions.size()));
  if (added) capture_->functions.push_back({name, f.module, kNone});
  f.function = fn->second;
}

void InterpretedFrames::Renumber(const capture::CodeRenumbering& r) {
  capture::RenumberValues(functions_, r.functions);
  capture::RenumberValues(native_, r.functions);
  // A kept frame keeps its function.
  std::map<std::pair<capture::FunctionId, uint32_t>, FrameId> frames;
  for (const auto& [key, frame] : frames_) {
    if (r.frames[frame] != kNone) frames[{r.functions[key.first], key.second}] = r.frames[frame];
  }
  frames_ = std::move(frames);
}

}  // namespace microscope::record
