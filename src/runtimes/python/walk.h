// What the BPF walker (bpf/python.bpf.c) writes for a sample, read back
// from untrusted ring bytes, and where its frames go in the native stack.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::runtimes::python {

struct WalkFrame {
  uint64_t code = 0;
  uint64_t qualname = 0;   // co_qualname, co_filename and co_firstlineno as
  uint64_t filename = 0;   // the walk read them: the proof that a code
  int32_t first_line = 0;  // object read later is the one the frame ran
  // Byte offset of the instruction from co_code_adaptive; kNoInstr: none.
  uint32_t instr = 0;
  bool entry = false;  // the outermost frame of its eval loop activation (3.11)
  // Not a Python frame: the shim below an activation's frames (3.12 on),
  // whose address (`code`) lies in that activation's native frame.
  bool shim = false;
  static constexpr uint32_t kNoInstr = 0x3fffffff;
};

struct Walk {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint8_t status = 0;      // MICROSCOPE_PY_* (python.h)
  uint16_t bound = 0;      // the most frames the walk could keep
  bool gil_known = false;  // whether the thread held its interpreter's GIL is known
  bool holds_gil = false;
  uint64_t tstate = 0;
  std::vector<WalkFrame> frames;  // leaf first
};

// Whether `bytes` are a Python walk record (by its magic): other runtimes'
// records share the ring.
bool IsPythonWalk(std::span<const uint8_t> bytes);
// Refuses bytes that are not a whole walk record, saying why.
Result<Walk> ParseWalk(std::span<const uint8_t> bytes);
// The same into `walk`, whose frames' storage is reused (once per stack).
Status ParseWalk(std::span<const uint8_t> bytes, Walk* walk);

// Why a walk ended short, in words ("" when it did not).
std::string WalkEndReason(const Walk& walk);

// Splices a walk's frames into a native stack (leaf first): each native
// activation of the eval loop gets, leafward of it, the Python frames it
// runs, leaf first. From 3.12 an activation is the native frame whose stack
// holds the shim that ends its frames (by `sps`, each frame's stack
// pointer), whatever the function is called (compilers split and rename
// the eval loop); in 3.11 the activations are the frames tagged eval_tag,
// in order, each running the frames up to its entry frame. The frames of
// activations the native stack does not reach (its unwind stopped early)
// follow the native ones after a marker saying how many; a walk ended
// short ends the stack with a marker saying why; a walk with no frames at
// all puts its marker at the innermost activation, or at the stack's end
// when none is known.
struct SpliceHooks {
  std::function<capture::FrameId(const WalkFrame&)> frame;     // a Python frame
  std::function<capture::FrameId(const std::string&)> marker;  // "unknown" with a reason
  // The native frame of an activation that got its Python frames (unset:
  // none is told).
  std::function<void(capture::FrameId)> activation;
};
// What SpliceWalk reuses from one stack to the next: a source keeps one, so
// that splicing allocates nothing once it has grown.
struct SpliceScratch {
  struct Group {
    size_t begin, end;  // in walk.frames
    uint64_t shim = 0;  // its activation's shim, 0: none
  };
  std::vector<size_t> tagged;                // activations by tag, leaf first
  std::vector<Group> groups;                 // of Python frames, one per activation, leaf first
  std::vector<std::optional<size_t>> place;  // each group's native frame
  std::vector<capture::FrameId> out;
};
void SpliceWalk(const Walk* walk, const std::string& no_walk_reason,
                std::vector<capture::FrameId>* frames, std::span<const uint8_t> tags,
                std::span<const uint64_t> sps, uint8_t eval_tag, const SpliceHooks& hooks,
                SpliceScratch* scratch = nullptr);

}  // namespace microscope::runtimes::python
