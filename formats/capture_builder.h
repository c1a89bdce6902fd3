// Builds a Capture from imported stacks (pprof, folded): interns strings,
// modules, functions, frames and stack nodes, and appends samples. The
// result goes through ValidateCapture like any file the reader opens.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "capture/capture.h"
#include "capture/stack_interner.h"
#include "capture/string_table.h"

namespace microscope::formats {

class CaptureBuilder {
 public:
  CaptureBuilder();
  capture::ModuleId Module(std::string_view path, const std::vector<uint8_t>& build_id);
  capture::FunctionId Function(std::string_view name, capture::ModuleId module);
  capture::FrameId Frame(capture::FrameKind kind, capture::ModuleId module, uint64_t address,
                         capture::FunctionId function);
  // A frame known by function (and source line) only.
  capture::FrameId NamedFrame(capture::FunctionId function, std::string_view file, uint32_t line);
  // An inline frame at (module, address), `depth` levels inside the native frame.
  capture::FrameId InlineFrame(capture::ModuleId module, uint64_t address,
                               capture::FunctionId function, size_t depth);
  capture::ThreadId Thread(int32_t pid, int32_t tid, std::string_view name);
  // Sets a frame's source file and line (first writer wins: frames are shared).
  void SetLine(capture::FrameId frame, std::string_view file, uint32_t line);
  // `frames` leaf first, as profilers list them.
  capture::StackId Stack(const std::vector<capture::FrameId>& frames);
  void Sample(uint64_t time, capture::ThreadId thread, capture::StackId stack, uint64_t weight,
              uint32_t count);
  capture::Capture& capture() { return capture_; }
  capture::StringId Intern(std::string_view s) { return strings_.Intern(s); }

 private:
  capture::Capture capture_;
  capture::StringTable strings_;
  std::map<std::pair<std::string, std::vector<uint8_t>>, capture::ModuleId> modules_;
  std::map<std::pair<std::string, capture::ModuleId>, capture::FunctionId> functions_;
  std::map<std::tuple<uint8_t, capture::ModuleId, uint64_t, capture::FunctionId, size_t>,
           capture::FrameId>
      frames_;
  std::map<int32_t, capture::ProcessId> processes_;
  std::map<std::tuple<int32_t, int32_t, std::string>, capture::ThreadId> threads_;
  capture::StackInterner stacks_{&capture_.stacks};
};

}  // namespace microscope::formats
