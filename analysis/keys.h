// Function identity at a chosen granularity. A frame's key is its function
// (function granularity) or the frame itself (address granularity); an
// unnamed frame is always its own key, shown as module+0xoffset, so unnamed
// code is kept apart rather than merged. Named (imported) frames are keyed
// by their function's text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capture/capture.h"

namespace microscope::analysis {

using KeyId = uint32_t;

// kLine: function and source line (frames without a line fall back to the
// function); kAddress: every frame address apart.
enum class Granularity : uint8_t { kFunction, kLine, kAddress };

// What a frame without a function is called everywhere (reports, folded,
// pprof): its module's base name and file offset ("cc1plus+0x4f2a0"), or
// its address when it has no module.
std::string UnnamedFrameName(const capture::Capture& capture, const capture::Frame& frame);

class FunctionKeys {
 public:
  FunctionKeys(const capture::Capture& capture, Granularity granularity = Granularity::kFunction);
  KeyId KeyOf(capture::FrameId frame) const { return frame_key_[frame]; }
  const std::string& Name(KeyId key) const { return names_[key]; }
  // The module file's base name, or [unmapped]; an interpreted function's
  // whole source path.
  std::string ModuleName(KeyId key) const;
  // An interpreted function's first line in its file (0: not known or not
  // an interpreted function).
  uint32_t FirstLine(KeyId key) const;
  // What kind of code the function is, for colouring by kind: "native",
  // "inline", "kernel", "python", "javascript", "interpreted" (neither by
  // its file), "jit" (code in anonymous
  // memory: a JIT's, named by its perf map or not), "other" (the frames a
  // recording names itself, as an off-CPU state).
  std::string_view KindName(KeyId key) const;
  size_t size() const { return names_.size(); }
  Granularity granularity() const { return granularity_; }

 private:
  // A frame's module, or its function's (null: none).
  const capture::Module* ModuleOf(const capture::Frame& frame) const;
  const capture::Capture& capture_;
  Granularity granularity_;
  std::vector<KeyId> frame_key_;
  std::vector<capture::FrameId> key_frame_;  // a representative frame per key
  std::string_view interpreted_kind_ = "interpreted";
  std::vector<std::string> names_;
};

}  // namespace microscope::analysis
