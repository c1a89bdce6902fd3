// The code the runtimes marked (splicer.h's CodeMarks): per module, the
// file-offset ranges each runtime tagged and the ranges unwound by frame
// pointers, the processes whose anonymous code keeps frame pointers, and
// the modules that are a runtime's interpreter. The runtimes mark; the
// processor asks about each frame it interns and each pc it unwinds.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

#include "capture/capture.h"
#include "src/record/splicer.h"

namespace microscope::record {

class CodeMap final : public CodeMarks {
 public:
  // `capture`'s modules are the ones marked (their kinds, their runtime).
  explicit CodeMap(capture::Capture* capture) : capture_(capture) {}

  void Mark(capture::ModuleId module, uint64_t begin, uint64_t end, uint8_t tag) override;
  void MarkFramePointerCode(capture::ModuleId module, uint64_t begin, uint64_t end) override;
  void MarkAnonymousFramePointers(uint32_t pid) override { anonymous_fp_.insert(pid); }
  void MarkRuntime(capture::ModuleId module, capture::Runtime runtime) override;

  // The tag of the code at `offset` of `module` (0: none).
  uint8_t TagOf(capture::ModuleId module, uint64_t offset) const;
  // A native frame's tag: its module's marks, else kAnonymousCode for JIT code.
  uint8_t FrameTag(capture::ModuleId module, uint64_t address) const;
  bool FramePointerCode(capture::ModuleId module, uint64_t offset) const;
  bool AnonymousFramePointers(uint32_t pid) const { return anonymous_fp_.count(pid) != 0; }
  // The process ran exec or ended: its anonymous code is another program's.
  void ForgetProcess(uint32_t pid) { anonymous_fp_.erase(pid); }
  // The modules given tagged ranges since the last call: their frames
  // interned before the mark learn it.
  std::vector<capture::ModuleId> TakeNewlyMarked() { return std::exchange(newly_marked_, {}); }

 private:
  struct CodeRange {
    uint64_t begin, end;
    uint8_t tag;
  };
  capture::Capture* capture_;
  std::vector<std::vector<CodeRange>> module_marks_;  // per module, sorted
  // Per module, sorted [begin, end) file offsets unwound by frame pointers.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> frame_pointer_code_;
  std::unordered_set<uint32_t> anonymous_fp_;
  std::vector<capture::ModuleId> newly_marked_;
};

}  // namespace microscope::record
