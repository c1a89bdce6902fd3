// What the V8 walk (node_walk.bpf.h) writes for a sample, read back
// from untrusted ring bytes, and where its frames go in the native stack.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::runtimes::node {

struct V8Frame {
  uint64_t fp = 0;               // the frame pointer the frame was found at
  uint64_t function = 0;         // the JSFunction in its function slot
  uint64_t shared = 0;           // and, as the walk read them: its SharedFunctionInfo,
  uint64_t name = 0;             // the SFI's name (or ScopeInfo)
  uint64_t script = 0;           // and Script: the proof user space checks
  uint64_t bytecode_array = 0;   // the frame's bytecode array and offset
  uint64_t bytecode_offset = 0;  // slots (an interpreted frame's)
};

struct V8Walk {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint8_t status = 0;    // MICROSCOPE_V8_* (node.h)
  uint16_t bound = 0;    // the most frames the walk could keep
  uint64_t isolate = 0;  // the thread's current isolate, as its TLS said (0: none)
  // At a sample whose r12 was the innermost frame's bytecode array: its r9,
  // the offset of the bytecode whose handler runs if one does (as the
  // frame's offset slot keeps it).
  std::optional<uint64_t> interpreter_offset;
  // Otherwise, at a sample (not off CPU): the word on top of its stack,
  // where a builtin that made no frame returns to.
  std::optional<uint64_t> top_of_stack;
  std::vector<V8Frame> frames;  // leaf first
};

// Whether `bytes` are a V8 walk record (by its magic): other runtimes'
// records share the ring.
bool IsV8Walk(std::span<const uint8_t> bytes);
// Refuses bytes that are not a whole walk record, saying why.
Result<V8Walk> ParseV8Walk(std::span<const uint8_t> bytes);
// The same into `walk`, whose frames' storage is reused (once per stack).
Status ParseV8Walk(std::span<const uint8_t> bytes, V8Walk* walk);
// Why a walk ended short, in words ("" when it did not).
std::string V8WalkEndReason(const V8Walk& walk);

// Splices a walk's frames into a native stack (leaf first). Each JavaScript
// frame goes where its frame pointer lies, by `sps` (each native frame's
// stack pointer): the native frame holding it is V8 code running that
// function. Anonymous code (code_tags::kAnonymousCode: the function's own
// generated code) is replaced by the JavaScript frame. Other frames stay: the
// JavaScript frame goes just leafward of a builtin (`builtin_tag`) further
// out than the leaf (the interpreter's entry that runs it), and just
// callerward of any other (a bytecode handler or frameless builtin at the
// leaf, native code it called). Frames that cannot be placed follow the
// native ones and a marker with the reason ends the stack.
inline constexpr capture::FrameId kNoCodeFrame = ~capture::FrameId(0);
struct V8SpliceHooks {
  // A JavaScript frame; `running`: the code that runs it is the stack's
  // leaf (a bytecode handler or builtin that has called nothing), or it
  // could not be placed. An interpreted frame that called out has its
  // bytecode offset in its frame (V8 writes it before any call); a running
  // one's may be stale.
  // `code`: the native frame the JavaScript frame replaces (anonymous code:
  // its function's own generated code, at the address it runs), or
  // kNoCodeFrame. Appends the frame to `out`, after the functions its code
  // inlined at that address (innermost first), if any.
  std::function<void(const V8Frame&, bool running, capture::FrameId code,
                     std::vector<capture::FrameId>* out)>
      frame;
  std::function<capture::FrameId(const std::string&)> marker;  // "unknown" with a reason
};
// What SpliceV8Walk reuses from one stack to the next: a source keeps one,
// so that splicing allocates nothing once it has grown.
struct V8SpliceScratch {
  std::vector<std::pair<size_t, capture::FrameId>> before;  // (native index, frame), in order
  // Per native frame, the frames that replace it: [first, end) of `named`
  // (first == end: not replaced).
  std::vector<std::pair<uint32_t, uint32_t>> replaced;
  std::vector<capture::FrameId> named;  // what the hooks gave, in order
  std::vector<capture::FrameId> out;
};
// `builtin_tags`: the tags of V8's builtins (a bytecode handler's among them).
void SpliceV8Walk(const V8Walk& walk, std::vector<capture::FrameId>* frames,
                  std::span<const uint8_t> tags, std::span<const uint64_t> sps,
                  std::initializer_list<uint8_t> builtin_tags, const V8SpliceHooks& hooks,
                  V8SpliceScratch* scratch = nullptr);

}  // namespace microscope::runtimes::node
