// A walk record (bpf/walk.h) as a runtime's BPF walker writes it.
#pragma once

#include <linux/types.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "bpf/walk.h"

namespace microscope::testing {

template <typename Frame>
std::vector<uint8_t> WalkRecordBytes(uint8_t runtime, uint32_t pid, uint32_t tid, uint8_t status,
                                     const std::vector<Frame>& frames) {
  walk_header h{};
  h.magic = MICROSCOPE_WALK_MAGIC;
  h.runtime = runtime;
  h.pid = pid;
  h.tid = tid;
  h.status = status;
  h.nframes = uint16_t(frames.size());
  h.frame_size = sizeof(Frame);
  std::vector<uint8_t> out(sizeof(h) + frames.size() * sizeof(Frame));
  std::memcpy(out.data(), &h, sizeof(h));
  if (!frames.empty()) std::memcpy(out.data() + sizeof(h), frames.data(), frames.size() * sizeof(Frame));
  return out;
}

}  // namespace microscope::testing
