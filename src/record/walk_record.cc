#include "src/record/walk_record.h"

#include <linux/types.h>

#include <cstring>
#include <string>

#include "bpf/walk.h"

namespace microscope::record {

uint8_t WalkRuntime(std::span<const uint8_t> bytes) {
  walk_header h;
  if (bytes.size() < sizeof(h)) return 0;
  std::memcpy(&h, bytes.data(), sizeof(h));
  return h.magic == MICROSCOPE_WALK_MAGIC ? h.runtime : 0;
}

Result<WalkRecord> ParseWalkRecord(std::span<const uint8_t> bytes, uint8_t runtime,
                                   size_t frame_size, const char* what) {
  walk_header h;
  // The raw sample pads what the program wrote to 8 bytes (and a u32 size).
  if (bytes.size() < sizeof(h)) {
    return Status::Error(StatusCode::kDataLoss, std::string(what) + " of " +
                                                    std::to_string(bytes.size()) +
                                                    " bytes is shorter than its header");
  }
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.magic != MICROSCOPE_WALK_MAGIC || h.runtime != runtime) {
    return Status::Error(StatusCode::kDataLoss,
                         std::string(what) + " has magic " + std::to_string(h.magic) +
                             " and runtime " + std::to_string(h.runtime) + ", not this recorder's");
  }
  if (h.frame_size != frame_size) {
    return Status::Error(StatusCode::kDataLoss, std::string(what) + " has frames of " +
                                                    std::to_string(h.frame_size) + " bytes, not " +
                                                    std::to_string(frame_size));
  }
  if (h.nframes > MICROSCOPE_WALK_ROOM / frame_size ||
      bytes.size() - sizeof(h) < size_t(h.nframes) * frame_size) {
    return Status::Error(StatusCode::kDataLoss,
                         std::string(what) + " of " + std::to_string(bytes.size()) +
                             " bytes cannot hold its " + std::to_string(h.nframes) + " frames");
  }
  WalkRecord w;
  w.runtime = h.runtime;
  w.status = h.status;
  w.flags = h.flags;
  w.pid = h.pid;
  w.tid = h.tid;
  w.context[0] = h.context[0];
  w.context[1] = h.context[1];
  w.frame_size = h.frame_size;
  w.nframes = h.nframes;
  w.bound = h.bound;
  w.frames = bytes.subspan(sizeof(h), size_t(h.nframes) * frame_size);
  return w;
}

}  // namespace microscope::record
