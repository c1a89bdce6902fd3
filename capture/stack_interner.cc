#include "capture/stack_interner.h"

namespace microscope::capture {
namespace {

uint64_t Key(StackId parent, FrameId frame) {
  return (uint64_t(parent) << 32) | frame;
}

}  // namespace

StackInterner::StackInterner(Stacks* stacks) : stacks_(stacks) {
  Reindex();
}

void StackInterner::Reindex() {
  nodes_.clear();
  nodes_.reserve(stacks_->size());
  for (size_t n = 0; n < stacks_->size(); ++n) {
    nodes_.emplace(Key(stacks_->parent[n], stacks_->frame[n]), StackId(n));
  }
}

StackId StackInterner::Intern(StackId parent, FrameId frame) {
  auto [it, inserted] = nodes_.try_emplace(Key(parent, frame), StackId(stacks_->size()));
  if (inserted) {
    stacks_->parent.push_back(parent);
    stacks_->frame.push_back(frame);
  }
  return it->second;
}

StackId StackInterner::InternLeafFirst(std::span<const FrameId> frames) {
  StackId node = kNone;
  for (size_t i = frames.size(); i-- > 0;) node = Intern(node, frames[i]);
  return node;
}

}  // namespace microscope::capture
