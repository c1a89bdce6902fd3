#include "src/runtimes/python/walk.h"

#include <cstring>
#include <optional>

#include <linux/types.h>

#include "src/record/splicer.h"
#include "src/record/walk_record.h"
#include "src/runtimes/python/python.h"

namespace microscope::runtimes::python {

bool IsPythonWalk(std::span<const uint8_t> bytes) {
  return record::WalkRuntime(bytes) == MICROSCOPE_RUNTIME_PYTHON;
}

Status ParseWalk(std::span<const uint8_t> bytes, Walk* w) {
  ASSIGN_OR_RETURN(record::WalkRecord record,
                   record::ParseWalkRecord(bytes, MICROSCOPE_RUNTIME_PYTHON, sizeof(py_frame),
                                           "Python walk record"));
  w->pid = record.pid;
  w->tid = record.tid;
  w->status = record.status;
  w->bound = record.bound;
  w->gil_known = (record.flags & MICROSCOPE_PY_GIL_KNOWN) != 0;
  w->holds_gil = w->gil_known && (record.flags & MICROSCOPE_PY_HOLDS_GIL) != 0;
  w->tstate = record.context[0];
  w->frames.clear();
  for (size_t i = 0; i < record.nframes; ++i) {
    py_frame f;
    std::memcpy(&f, record.frames.data() + i * sizeof(f), sizeof(f));
    w->frames.push_back({f.code, f.qualname, f.filename, f.firstlineno,
                         f.instr & ~(MICROSCOPE_PY_ENTRY | MICROSCOPE_PY_SHIM),
                         (f.instr & MICROSCOPE_PY_ENTRY) != 0,
                         (f.instr & MICROSCOPE_PY_SHIM) != 0});
  }
  return OkStatus();
}

Result<Walk> ParseWalk(std::span<const uint8_t> bytes) {
  Walk w;
  RETURN_IF_ERROR(ParseWalk(bytes, &w));
  return w;
}

std::string WalkEndReason(const Walk& walk) {
  switch (walk.status) {
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
      return "cut at " + std::to_string(walk.bound) + " Python frames (record --runtime-frames)";
    default:
      return "walk status " + std::to_string(walk.status);
  }
}

void SpliceWalk(const Walk* walk, const std::string& no_walk_reason,
                std::vector<capture::FrameId>* frames, std::span<const uint8_t> tags,
                std::span<const uint64_t> sps, uint8_t eval_tag, const SpliceHooks& hooks,
                SpliceScratch* scratch) {
  SpliceScratch local;
  SpliceScratch& s = scratch != nullptr ? *scratch : local;
  std::vector<size_t>& tagged = s.tagged;
  tagged.clear();
  for (size_t i = 0; i < frames->size() && i < tags.size(); ++i) {
    if (tags[i] == eval_tag) tagged.push_back(i);
  }
  std::string reason = walk == nullptr ? no_walk_reason : WalkEndReason(*walk);
  // Groups of Python frames, one per activation, leaf first.
  std::vector<SpliceScratch::Group>& groups = s.groups;
  groups.clear();
  bool by_shim = false;
  if (walk != nullptr) {
    size_t begin = 0;
    for (size_t i = 0; i < walk->frames.size(); ++i) {
      const WalkFrame& f = walk->frames[i];
      if (f.shim) {
        by_shim = true;
        if (i > begin) groups.push_back({begin, i, f.code});
        begin = i + 1;
      } else if (f.entry) {
        groups.push_back({begin, i + 1});
        begin = i + 1;
      }
    }
    if (begin < walk->frames.size()) groups.push_back({begin, walk->frames.size()});
  }
  if (groups.empty()) {
    // Nothing to place. A thread that runs no Python code says nothing,
    // unless the native stack shows the eval loop.
    if (walk != nullptr && reason.empty() && tagged.empty()) return;
    if (walk != nullptr && walk->status == 1 /* MICROSCOPE_PY_NO_THREAD */ && tagged.empty())
      return;
    if (reason.empty()) reason = "the thread ran no Python frame";
    const size_t at = tagged.empty() ? frames->size() : tagged[0];
    frames->insert(frames->begin() + ptrdiff_t(at), hooks.marker(reason));
    return;
  }
  // Where each group goes: a native frame index, or none.
  std::vector<std::optional<size_t>>& place = s.place;
  place.assign(groups.size(), std::nullopt);
  size_t placed = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (by_shim) {
      if (groups[g].shim != 0) place[g] = record::FrameHolding(sps, groups[g].shim);
    } else if (g < tagged.size()) {
      place[g] = tagged[g];
    }
    // Activations run inside one another: each group's lies further out.
    if (place[g] && g > 0 && place[g - 1] && *place[g] <= *place[g - 1]) place[g].reset();
    if (!place[g]) break;
    ++placed;
  }
  if (hooks.activation) {
    for (size_t g = 0; g < placed; ++g) hooks.activation((*frames)[*place[g]]);
  }
  std::vector<capture::FrameId>& out = s.out;
  out.clear();
  size_t next = 0;  // next native frame to copy
  for (size_t g = 0; g < placed; ++g) {
    const size_t at = *place[g];
    out.insert(out.end(), frames->begin() + ptrdiff_t(next), frames->begin() + ptrdiff_t(at));
    for (size_t i = groups[g].begin; i < groups[g].end; ++i)
      out.push_back(hooks.frame(walk->frames[i]));
    next = at;
  }
  out.insert(out.end(), frames->begin() + ptrdiff_t(next), frames->end());
  // The activations the native stack did not reach (its unwind stopped
  // early) lie further out: their frames follow the native ones, after a
  // marker for the gap, and keep their callers.
  if (placed < groups.size()) {
    out.push_back(hooks.marker(std::to_string(groups.size() - placed) + " of " +
                               std::to_string(groups.size()) +
                               " Python activations not found in the native stack"));
  }
  for (size_t g = placed; g < groups.size(); ++g) {
    for (size_t i = groups[g].begin; i < groups[g].end; ++i)
      out.push_back(hooks.frame(walk->frames[i]));
  }
  if (!reason.empty()) out.push_back(hooks.marker(reason));
  frames->swap(out);
}

}  // namespace microscope::runtimes::python
