#include "src/runtimes/node/walk.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include <linux/types.h>

#include "src/record/splicer.h"
#include "src/record/walk_record.h"
#include "src/runtimes/node/node.h"

namespace microscope::runtimes::node {

bool IsV8Walk(std::span<const uint8_t> bytes) {
  return record::WalkRuntime(bytes) == MICROSCOPE_RUNTIME_NODE;
}

Status ParseV8Walk(std::span<const uint8_t> bytes, V8Walk* w) {
  ASSIGN_OR_RETURN(
      record::WalkRecord record,
      record::ParseWalkRecord(bytes, MICROSCOPE_RUNTIME_NODE, sizeof(v8_frame), "V8 walk record"));
  w->pid = record.pid;
  w->tid = record.tid;
  w->status = record.status;
  w->bound = record.bound;
  w->isolate = record.context[1];
  w->interpreter_offset.reset();
  w->top_of_stack.reset();
  if (record.flags & MICROSCOPE_V8_INTERPRETER) {
    w->interpreter_offset = record.context[0];
  } else if (record.flags & MICROSCOPE_V8_TOP) {
    w->top_of_stack = record.context[0];
  }
  w->frames.clear();
  for (size_t i = 0; i < record.nframes; ++i) {
    v8_frame f;
    std::memcpy(&f, record.frames.data() + i * sizeof(f), sizeof(f));
    w->frames.push_back(
        {f.fp, f.function, f.shared, f.name, f.script, f.bytecode_array, f.bytecode_offset});
  }
  return OkStatus();
}

Result<V8Walk> ParseV8Walk(std::span<const uint8_t> bytes) {
  V8Walk w;
  RETURN_IF_ERROR(ParseV8Walk(bytes, &w));
  return w;
}

std::string V8WalkEndReason(const V8Walk& walk) {
  switch (walk.status) {
    case MICROSCOPE_V8_WALKED:
      return "";
    case MICROSCOPE_V8_TRUNCATED:
      if (walk.frames.size() >= walk.bound) {
        return "cut at " + std::to_string(walk.bound) +
               " JavaScript frames (record --runtime-frames)";
      }
      return "cut after " + std::to_string(walk.bound * MICROSCOPE_V8_STEPS_PER_FRAME) +
             " frame pointers (record --runtime-frames)";
    case MICROSCOPE_V8_UNREADABLE:
      return "a frame pointer led to unreadable memory";
    default:
      return "walk status " + std::to_string(walk.status);
  }
}

void SpliceV8Walk(const V8Walk& walk, std::vector<capture::FrameId>* frames,
                  std::span<const uint8_t> tags, std::span<const uint64_t> sps,
                  std::initializer_list<uint8_t> builtin_tags, const V8SpliceHooks& hooks,
                  V8SpliceScratch* scratch) {
  V8SpliceScratch local;
  V8SpliceScratch& s = scratch != nullptr ? *scratch : local;
  const size_t n = frames->size();
  // What goes before native frame i (leafward of it), in the order of i
  // (frames are placed leaf to root), and whether frame i itself is
  // replaced; index n: after the last native frame.
  auto& before = s.before;
  auto& replaced = s.replaced;
  auto& named = s.named;
  before.clear();
  named.clear();
  replaced.assign(n, {0, 0});
  const size_t leaf = record::FirstUserFrame(sps);
  size_t next = 0;  // frames are placed leaf to root: never leafward of this
  size_t placed = 0;
  for (const V8Frame& f : walk.frames) {
    std::optional<size_t> k = record::FrameHolding(sps, f.fp);
    if (!k || *k >= n) break;  // outer frames, beyond what the native stack knows
    size_t at = *k;
    const uint8_t tag = at < tags.size() ? tags[at] : 0;
    const size_t first = named.size();
    if (tag == record::code_tags::kAnonymousCode && at >= next &&
        replaced[at].first == replaced[at].second) {
      hooks.frame(f, at == leaf && placed == 0, (*frames)[at],  // the function's own generated code
                  &named);
      replaced[at] = {uint32_t(first), uint32_t(named.size())};
      next = at + 1;
      ++placed;
      continue;
    }
    // A builtin further out than the leaf is the interpreter's entry that
    // runs the function, which goes leafward of it. At the leaf (a bytecode
    // handler, a frameless builtin) or in other native code, the frame runs
    // for the function, which goes callerward of it.
    const bool entry =
        std::find(builtin_tags.begin(), builtin_tags.end(), tag) != builtin_tags.end() &&
        at != leaf;
    size_t slot = entry ? at : at + 1;
    slot = std::max(slot, next);
    hooks.frame(f, at == leaf && placed == 0, kNoCodeFrame, &named);
    for (size_t i = first; i < named.size(); ++i) before.emplace_back(slot, named[i]);
    next = slot;
    ++placed;
  }
  std::vector<capture::FrameId>& out = s.out;
  out.clear();
  size_t b = 0;
  for (size_t i = 0; i < n; ++i) {
    for (; b < before.size() && before[b].first == i; ++b) out.push_back(before[b].second);
    if (replaced[i].first == replaced[i].second) {
      out.push_back((*frames)[i]);
    } else {
      out.insert(out.end(), named.begin() + replaced[i].first, named.begin() + replaced[i].second);
    }
  }
  for (; b < before.size(); ++b) out.push_back(before[b].second);
  std::string reason = V8WalkEndReason(walk);
  if (placed < walk.frames.size()) {
    for (size_t j = placed; j < walk.frames.size(); ++j)
      hooks.frame(walk.frames[j], j == 0, kNoCodeFrame, &out);
    std::string why = std::to_string(walk.frames.size() - placed) + " of " +
                      std::to_string(walk.frames.size()) +
                      " JavaScript frames not found in the native stack";
    reason = reason.empty() ? why : why + "; " + reason;
  }
  if (!reason.empty()) out.push_back(hooks.marker(reason));
  frames->swap(out);
}

}  // namespace microscope::runtimes::node
