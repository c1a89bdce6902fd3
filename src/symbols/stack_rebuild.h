// Puts the inlined calls symbolization found into a capture's stack tree.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/capture.h"

namespace microscope::symbols {

// Frames whose inlined calls changed, by frame id.
struct InlineEdits {
  std::vector<char> replaced;                          // 1: the frame's inline frames are these now
  std::vector<std::vector<capture::FrameId>> inlined;  // innermost first
};

// Rebuilds the stack tree so that each replaced frame is followed (toward
// the callee) by its inlined calls, outermost first, dropping the inline
// frames an earlier symbolization had put there. Returns how many chains
// of inlined calls were cut short by the depth readers accept.
uint64_t RebuildStacks(capture::Capture* c, const InlineEdits& edits);

}  // namespace microscope::symbols
