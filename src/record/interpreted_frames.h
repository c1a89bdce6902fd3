// Frames of interpreted code, by their text (splicer.h's FrameInterner):
// a function per (name, file, first line), a frame per (function, line),
// interned into the capture's tables for the runtimes' splicers.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "capture/capture.h"
#include "capture/compact.h"
#include "capture/string_table.h"
#include "src/record/splicer.h"

namespace microscope::record {

class InterpretedFrames final : public FrameInterner {
 public:
  InterpretedFrames(capture::Capture* capture, capture::StringTable* strings)
      : capture_(capture), strings_(strings) {}

  capture::FrameId Interpreted(const InterpretedFrame& frame) override;
  const capture::Frame& frame(capture::FrameId id) const override { return capture_->frames[id]; }
  void NameNative(capture::FrameId id, std::string_view function) override;
  // A generation ended (capture/compact.h): the dropped functions and
  // frames are forgotten, the kept ones renumbered.
  void Renumber(const capture::CodeRenumbering& r);

 private:
  capture::Capture* capture_;
  capture::StringTable* strings_;
  std::map<std::tuple<capture::StringId, capture::StringId, uint32_t>, capture::FunctionId>
      functions_;
  std::map<std::pair<capture::FunctionId, uint32_t>, capture::FrameId> frames_;
  // Native functions NameNative gave, by (name, module).
  std::map<std::pair<capture::StringId, capture::ModuleId>, capture::FunctionId> native_;
};

}  // namespace microscope::record
