// Names a capture's native and kernel frames, a module at a time, from the
// files found for the module: function, source file:line, and inlined calls
// as frames of their own. A frame is changed only when it gains
// information, so a capture can be symbolized again with more debug files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "src/symbols/line_table.h"
#include "src/symbols/module_resolver.h"
#include "src/symbols/namer.h"
#include "src/symbols/stack_rebuild.h"
#include "src/symbols/symbolizer.h"

namespace microscope::symbols {

class FrameNamer {
 public:
  // Notes which frames already have inlined calls below them: before any
  // frame is named.
  FrameNamer(capture::Capture* c, Namer* namer);

  // Names module `m`'s `frames`, counting them into `sum`. Returns how many
  // frames changed.
  uint64_t NameFrames(capture::ModuleId m, const ModuleFiles& files,
                      const std::vector<capture::FrameId>& frames, ModuleSummary* sum);

  // The frames whose inlined calls changed, for RebuildStacks; once, after
  // every module is named.
  InlineEdits TakeEdits();

 private:
  // The information a frame has: used to change frames only when they gain.
  struct FrameInfo {
    std::string function;  // raw name
    std::string file;
    uint32_t line = 0;
    std::vector<SourceFrame> inlined;  // innermost first
  };

  // What `files` say of `address` (a file offset, or a kernel address).
  // `segments`: the module's recorded segments, if any.
  FrameInfo LookUp(const ModuleFiles& files, const std::vector<LoadSegment>& segments,
                   uint64_t address);
  // Gives frame `f` of module `m` the name, line and inlined calls of `info`.
  void Rename(capture::ModuleId m, capture::FrameId f, const FrameInfo& info,
              const LineTable* lines, ModuleSummary* sum);

  capture::Capture* c_;
  Namer* namer_;
  std::vector<char> had_inlines_;  // by frame id
  InlineEdits edits_;
  std::vector<SourceFrame> source_;  // LookUp's, kept to reuse its memory
};

}  // namespace microscope::symbols
