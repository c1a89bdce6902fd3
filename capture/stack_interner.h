// The one way stacks enter a capture's prefix tree (Stacks), and the one
// list of the tables whose rows point into it.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "capture/capture.h"
#include "capture/columns.h"

namespace microscope::capture {

// Interns stacks into `stacks`: one node per (parent, frame), so equal
// stacks and equal prefixes share nodes. Nodes already in `stacks` are found
// too. Used by the recorder, symbolize's rebuild, the importers and the
// analysis' pseudo frames.
class StackInterner {
 public:
  explicit StackInterner(Stacks* stacks);
  // Only for adding nodes under new frames (pseudo frames): the nodes
  // already in `stacks` cannot be asked for, so they are not indexed.
  struct NewFramesOnly {};
  StackInterner(Stacks* stacks, NewFramesOnly) : stacks_(stacks) {}
  StackInterner(const StackInterner&) = delete;
  StackInterner& operator=(const StackInterner&) = delete;

  // Indexes `stacks` again, after its nodes were renumbered.
  void Reindex();
  // The node for `frame` called from `parent` (kNone: a root).
  StackId Intern(StackId parent, FrameId frame);
  // The node for `frames`, leaf first as unwinders list them; kNone when empty.
  StackId InternLeafFirst(std::span<const FrameId> frames);

 private:
  Stacks* stacks_;
  std::unordered_map<uint64_t, StackId> nodes_;
};

// Calls fn(table_name, column) with each event table's stack column
// (samples, system calls, off-CPU intervals: the columns tables.h declares
// as references to stacks), for whatever remaps or counts stacks.
template <typename CaptureT, typename Fn>
void ForEachStackColumn(CaptureT& c, Fn fn) {
  ForEachRefColumn(c, Ref::kStack,
                   [&](const char* table, const ColumnInfo&, auto& column) { fn(table, column); });
}

}  // namespace microscope::capture
