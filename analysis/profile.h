// Aggregations over a validated capture: flat self/total costs per function
// and the caller-first call tree. Pure: same capture, same result, same order.
//
// A frame's function key is its symbol when named, else the frame itself
// (shown as module+0xoffset), so unnamed code is kept apart, not merged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture/capture.h"

namespace microscope::analysis {

using KeyId = uint32_t;

// Names of function keys; built once per capture.
class FunctionKeys {
 public:
  explicit FunctionKeys(const capture::Capture& capture);
  KeyId KeyOf(capture::FrameId frame) const { return frame_key_[frame]; }
  std::string Name(KeyId key) const;
  std::string ModuleName(KeyId key) const;  // module file's base name, or [unmapped]
  size_t size() const { return capture_.functions.size() + capture_.frames.size(); }

 private:
  const capture::Capture& capture_;
  std::vector<KeyId> frame_key_;
};

// Quantity of a row: CPU samples and the CPU time they stand for.
struct Cost {
  uint64_t samples = 0;
  uint64_t time_ns = 0;
  void Add(uint64_t n, uint64_t t) {
    samples += n;
    time_ns += t;
  }
};

struct FlatRow {
  KeyId key;
  Cost self;
  Cost total;
};

struct Flat {
  Cost all;
  std::vector<FlatRow> rows;  // by self desc, then total desc, then name
};

struct TreeNode {
  KeyId key;
  uint32_t parent;  // capture::kNone for roots
  Cost self;
  Cost total;
  std::vector<uint32_t> children;  // by total desc, then name
};

struct CallTree {
  Cost all;
  std::vector<TreeNode> nodes;
  std::vector<uint32_t> roots;  // by total desc, then name
};

Flat ComputeFlat(const capture::Capture& capture, const FunctionKeys& keys);
CallTree ComputeTree(const capture::Capture& capture, const FunctionKeys& keys);

// Samples and time ending in each stack node (index = StackId); the samples
// without a stack are returned in `no_stack`.
std::vector<Cost> CostPerStack(const capture::Capture& capture, Cost* no_stack);

}  // namespace microscope::analysis
