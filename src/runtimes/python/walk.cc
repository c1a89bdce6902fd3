#include "src/runtimes/python/walk.h"

#include <cstring>

#include <linux/types.h>

#include "bpf/python.h"

namespace microscope::runtimes::python {

Result<Walk> ParseWalk(std::span<const uint8_t> bytes) {
  constexpr size_t kFixed = MICROSCOPE_PY_WALK_FIXED;
  // The raw sample pads what the program wrote to 8 bytes (and a u32 size).
  if (bytes.size() < kFixed) {
    return Status::Error(StatusCode::kDataLoss, "Python walk record of " +
                                                    std::to_string(bytes.size()) +
                                                    " bytes is shorter than its header");
  }
  py_walk header;
  std::memcpy(&header, bytes.data(), kFixed);
  if (header.magic != MICROSCOPE_PY_MAGIC) {
    return Status::Error(
        StatusCode::kDataLoss,
        "Python walk record has magic " + std::to_string(header.magic) + ", not this recorder's");
  }
  if (header.nframes > MICROSCOPE_PY_MAX_FRAMES ||
      bytes.size() < kFixed + size_t(header.nframes) * sizeof(py_frame)) {
    return Status::Error(StatusCode::kDataLoss, "Python walk record of " +
                                                    std::to_string(bytes.size()) +
                                                    " bytes cannot hold its " +
                                                    std::to_string(header.nframes) + " frames");
  }
  Walk w;
  w.pid = header.pid;
  w.tid = header.tid;
  w.status = header.status;
  w.tstate = header.tstate;
  w.frames.reserve(header.nframes);
  for (size_t i = 0; i < header.nframes; ++i) {
    py_frame f;
    std::memcpy(&f, bytes.data() + kFixed + i * sizeof(f), sizeof(f));
    w.frames.push_back({f.code, f.qualname, f.filename, f.firstlineno,
                        f.instr & ~MICROSCOPE_PY_ENTRY, (f.instr & MICROSCOPE_PY_ENTRY) != 0});
  }
  return w;
}

std::string WalkEndReason(uint8_t status) {
  switch (status) {
    case MICROSCOPE_PY_WALKED:
      return "";
    case MICROSCOPE_PY_NO_THREAD:
      return "no Python thread state has this thread's id";
    case MICROSCOPE_PY_SEVERAL:
      return "several Python thread states have this thread's id";
    case MICROSCOPE_PY_PAST_BOUND:
      return "thread state not among the " + std::to_string(MICROSCOPE_PY_SEARCH) +
             " searched (a thread newer than the last refresh)";
    case MICROSCOPE_PY_UNREADABLE:
      return "target memory unreadable during the walk";
    case MICROSCOPE_PY_TRUNCATED:
      return "more than " + std::to_string(MICROSCOPE_PY_MAX_FRAMES) + " Python frames";
    default:
      return "walk status " + std::to_string(status);
  }
}

void SpliceWalk(const Walk* walk, const std::string& no_walk_reason,
                std::vector<capture::FrameId>* frames, std::span<const uint8_t> tags,
                uint8_t eval_tag, const SpliceHooks& hooks) {
  std::vector<size_t> activations;  // indexes into *frames, leaf first
  for (size_t i = 0; i < frames->size() && i < tags.size(); ++i) {
    if (tags[i] == eval_tag) activations.push_back(i);
  }
  if (activations.empty()) return;
  std::string reason = walk == nullptr ? no_walk_reason : WalkEndReason(walk->status);
  if (walk == nullptr || walk->frames.empty()) {
    // Nothing to place: say why at the innermost activation.
    if (reason.empty()) reason = "the thread ran no Python frame";
    frames->insert(frames->begin() + ptrdiff_t(activations[0]), hooks.marker(reason));
    return;
  }
  // Groups of frames, one per activation, leaf first.
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) in walk->frames
  size_t begin = 0;
  for (size_t i = 0; i < walk->frames.size(); ++i) {
    if (walk->frames[i].entry) {
      groups.push_back({begin, i + 1});
      begin = i + 1;
    }
  }
  if (begin < walk->frames.size()) groups.push_back({begin, walk->frames.size()});
  const size_t placed = std::min(groups.size(), activations.size());
  std::vector<capture::FrameId> out;
  out.reserve(frames->size() + walk->frames.size() + 1);
  size_t next = 0;  // next native frame to copy
  for (size_t g = 0; g < placed; ++g) {
    const size_t at = activations[g];
    out.insert(out.end(), frames->begin() + ptrdiff_t(next), frames->begin() + ptrdiff_t(at));
    for (size_t i = groups[g].first; i < groups[g].second; ++i)
      out.push_back(hooks.frame(walk->frames[i]));
    next = at;
  }
  out.insert(out.end(), frames->begin() + ptrdiff_t(next), frames->end());
  for (size_t g = placed; g < groups.size(); ++g) {
    for (size_t i = groups[g].first; i < groups[g].second; ++i)
      out.push_back(hooks.frame(walk->frames[i]));
  }
  if (groups.size() != activations.size()) {
    std::string why = std::to_string(groups.size()) + " Python activations, " +
                      std::to_string(activations.size()) + " native";
    reason = reason.empty() ? why : why + "; " + reason;
  }
  if (!reason.empty()) out.push_back(hooks.marker(reason));
  frames->swap(out);
}

}  // namespace microscope::runtimes::python
