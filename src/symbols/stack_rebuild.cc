#include "src/symbols/stack_rebuild.h"

#include <algorithm>

#include "capture/stack_interner.h"

namespace microscope::symbols {

using capture::FrameId;
using capture::kNone;

uint64_t RebuildStacks(capture::Capture* c, const InlineEdits& edits) {
  capture::Stacks old = std::move(c->stacks);
  c->stacks = {};
  capture::StackInterner stacks(&c->stacks);
  std::vector<uint32_t> depth;
  auto intern = [&](capture::StackId parent, FrameId frame) {
    capture::StackId node = stacks.Intern(parent, frame);
    if (node == depth.size()) depth.push_back(parent == kNone ? 1 : depth[parent] + 1);
    return node;
  };
  // How many old frames hang below each node at most (parents come first):
  // inlined calls go in only where the stacks through them stay within the
  // depth readers accept.
  std::vector<uint32_t> height(old.size(), 0);
  for (size_t n = old.size(); n-- > 0;) {
    if (old.parent[n] != kNone)
      height[old.parent[n]] = std::max(height[old.parent[n]], height[n] + 1);
  }
  std::vector<capture::StackId> remap(old.size());
  std::vector<char> drop_inline_below(old.size(), 0);
  uint64_t dropped = 0;
  for (size_t n = 0; n < old.size(); ++n) {
    capture::StackId parent = old.parent[n] == kNone ? kNone : remap[old.parent[n]];
    FrameId f = old.frame[n];
    if (c->frames[f].kind == capture::FrameKind::kInline && old.parent[n] != kNone &&
        drop_inline_below[old.parent[n]]) {
      remap[n] = parent;
      drop_inline_below[n] = 1;
      continue;
    }
    capture::StackId node = intern(parent, f);
    if (f < edits.replaced.size() && edits.replaced[f]) {
      drop_inline_below[n] = 1;
      const auto& chain = edits.inlined[f];
      for (size_t k = chain.size(); k-- > 0;) {
        if (depth[node] + 1 + height[n] > capture::kMaxStackDepth) {
          ++dropped;
          break;
        }
        node = intern(node, chain[k]);
      }
    }
    remap[n] = node;
  }
  // Every table that holds stacks follows the new tree.
  capture::ForEachStackColumn(*c, [&](const char*, auto& column) {
    for (size_t i = 0; i < column.size(); ++i) {
      if (column[i] != kNone) column[i] = remap[column[i]];
    }
  });
  return dropped;
}

}  // namespace microscope::symbols
