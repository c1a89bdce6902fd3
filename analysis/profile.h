// Aggregations over a validated capture: flat self/total costs per function
// key, the caller-first call tree, and the inverted (callee-first) tree.
// Pure: same capture and options, same result, same order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/filter.h"
#include "analysis/keys.h"
#include "capture/capture.h"

namespace microscope::analysis {

// What a row measures: how many samples, and their value in the capture's
// unit (settings.metric / settings.unit: CPU nanoseconds for a recording).
struct Cost {
  uint64_t samples = 0;
  uint64_t value = 0;
  void Add(uint64_t n, uint64_t v) {
    samples += n;
    value += v;
  }
  void Add(const Cost& o) { Add(o.samples, o.value); }
};

struct FlatRow {
  KeyId key;
  Cost self;
  Cost total;
};

struct Flat {
  Cost all;
  std::vector<FlatRow> rows;  // by self value desc, then total, then name
};

struct TreeNode {
  KeyId key;
  uint32_t parent;  // capture::kNone for roots
  Cost self;
  Cost total;
  std::vector<uint32_t> children;  // by total value desc, then name
};

struct CallTree {
  Cost all;
  bool inverted = false;
  std::vector<TreeNode> nodes;
  std::vector<uint32_t> roots;  // by total value desc, then name
};

struct TreeOptions {
  bool inverted = false;            // roots are the sampled functions, children their callers
  bool collapse_recursion = false;  // a function calling itself is one node
};

// Samples and value ending in each stack node (index = StackId); samples
// without a stack are added to `no_stack`.
std::vector<Cost> CostPerStack(const capture::Capture& capture, const SampleFilter& filter,
                               Cost* no_stack);

Flat ComputeFlat(const capture::Capture& capture, const FunctionKeys& keys,
                 const SampleFilter& filter = {});
CallTree ComputeTree(const capture::Capture& capture, const FunctionKeys& keys,
                     const SampleFilter& filter = {}, TreeOptions options = {});

// The stack of a node as keys, outermost first (for the inverted tree, the
// sampled function first).
std::vector<KeyId> PathOf(const CallTree& tree, uint32_t node);

}  // namespace microscope::analysis
