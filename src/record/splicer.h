// The seam where a runtime (CPython, V8) puts its interpreted frames into
// the native stacks. A runtime's event source hands the processor a
// StackSplicer (EventSource::splicer()); the processor then
//  - tells it each executable mapping as it appears, so it can mark the code
//    ranges whose frames it replaces (the interpreter's eval loop), found
//    from the module's own symbols: frames are not named at record time;
//  - calls Splice for every stack (sample, off-CPU interval, system call)
//    that holds a marked frame, after unwinding and before interning, with
//    an interner for the interpreted frames it inserts.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/capture.h"

namespace microscope::record {

// An executable mapping of a process, as the processor recorded it.
struct MappedModule {
  uint32_t pid = 0;
  capture::ModuleId module = capture::kNone;
  std::string_view path;
  std::span<const uint8_t> build_id;
  uint64_t start = 0;  // the mapping's addresses
  uint64_t end = 0;
  uint64_t file_offset = 0;
  bool first = false;  // the module's first mapping in the recording
};

// The tags splicers mark code with: one space for all of them, since every
// splicer sees every tagged stack.
namespace code_tags {
// Set by the processor, not a splicer: code in an anonymous mapping (JIT).
inline constexpr uint8_t kAnonymousCode = 1;
// A tag of its own for a runtime's kind of code (CPython's eval loop, V8's
// builtins), taken once, at start-up: up to 254 in a program.
inline uint8_t Allocate() {
  static std::atomic<unsigned> next{kAnonymousCode + 1};
  const unsigned tag = next.fetch_add(1);
  if (tag > 255) std::abort();  // a program's own bug: it takes its tags once each
  return uint8_t(tag);
}
}  // namespace code_tags

// Where a splicer marks code: file-offset ranges of a module, each with a
// tag (non-zero, from code_tags) that Splice sees again.
class CodeMarks {
 public:
  virtual ~CodeMarks() = default;
  virtual void Mark(capture::ModuleId module, uint64_t begin, uint64_t end, uint8_t tag) = 0;
  // Code of the module in [begin, end) (file offsets) that has no CFI and
  // keeps frame pointers (a runtime's generated code, such as V8's
  // builtins): unwound by its frame pointers whatever the call-graph mode.
  virtual void MarkFramePointerCode(capture::ModuleId module, uint64_t begin, uint64_t end) = 0;
  // Process `pid`'s anonymous code (its runtime's generated code, such as
  // V8's) keeps frame pointers: where nothing else describes it, it is
  // unwound by them whatever the call-graph mode. Until its next exec.
  virtual void MarkAnonymousFramePointers(uint32_t pid) = 0;
  // The module is `runtime`'s interpreter (capture Module.runtime).
  virtual void MarkRuntime(capture::ModuleId module, capture::Runtime runtime) = 0;
};

// One frame of interpreted code, by its text.
struct InterpretedFrame {
  std::string_view function;  // qualified name
  std::string_view file;
  uint32_t line = 0;
  uint32_t first_line = 0;  // of the function: tells apart same-named functions of a file
};

class FrameInterner {
 public:
  virtual ~FrameInterner() = default;
  virtual capture::FrameId Interpreted(const InterpretedFrame& frame) = 0;
  // A frame of the stack being spliced (native frames: module and file
  // offset, no function: frames are named when the capture is finished).
  virtual const capture::Frame& frame(capture::FrameId id) const = 0;
  // Names native frame `id` `function` (of its module): code the runtime
  // proved, such as its eval loop, where the module's symbols name none.
  // Symbolization keeps the name unless debug information gives the code's
  // own with its lines.
  virtual void NameNative(capture::FrameId id, std::string_view function) = 0;
};

// The stack being spliced, leaf first (kernel frames first, then user
// frames): frames[i] and, for each, the tag of the code range it is in (0:
// none). The splicer edits `frames` (and may leave `tags` stale).
struct SpliceStack {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  std::vector<capture::FrameId>* frames = nullptr;
  std::span<const uint8_t> tags;
  // Each frame's stack pointer, where the unwinder knew it (0 elsewhere): a
  // frame's locals lie from it up to the next frame's.
  std::span<const uint64_t> sps;
  // What the runtime's BPF program wrote for this stack (a sample's walk,
  // paired in ring order); empty when it wrote nothing.
  std::span<const uint8_t> walk;
  // A sample's label the splicer may set (key, value; strings that outlive
  // the call): the processor keeps spans of a thread's samples with one
  // value (capture LabelSpans).
  std::pair<std::string_view, std::string_view>* label = nullptr;
};

// The stack's first user frame (kernel frames have no stack pointer);
// sps.size() when there is none.
inline size_t FirstUserFrame(std::span<const uint64_t> sps) {
  size_t leaf = 0;
  while (leaf < sps.size() && sps[leaf] == 0) ++leaf;
  return leaf;
}

// The native frame (index) whose stack holds `address`: the innermost frame
// whose stack pointer is at or below it, when the next known one is above
// (past the outermost known frame, a frame's extent is not known).
inline std::optional<size_t> FrameHolding(std::span<const uint64_t> sps, uint64_t address) {
  std::optional<size_t> found;
  for (size_t i = 0; i < sps.size(); ++i) {
    if (sps[i] == 0) continue;
    if (sps[i] > address) return found;
    found = i;
  }
  return std::nullopt;
}

class StackSplicer {
 public:
  virtual ~StackSplicer() = default;
  virtual void OnModuleMapped(const MappedModule& mapping, CodeMarks* marks) = 0;
  virtual void Splice(const SpliceStack& stack, FrameInterner* interner) = 0;
  // Whether `walk` (a record the runtimes' BPF program wrote) is this
  // runtime's: a stack goes to a splicer when one of its frames is tagged
  // or its walk is the splicer's, and each splicer sees only its own walks.
  virtual bool OwnsWalk(std::span<const uint8_t> walk) const = 0;
  // Process `pid` ended (its last thread exited; the pid may be reused).
  // Events come in time order: no later stack is of it, so what the
  // splicer keeps for it (counted in --target-memory) may go.
  virtual void OnProcessEnded(uint32_t /*pid*/) {}
};

}  // namespace microscope::record
