// Aggregations over a validated capture: flat self/total costs per function
// key, the caller-first call tree, and the inverted (callee-first) tree.
// Pure: same capture and options, same result, same order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "base/status.h"
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
  // It stopped at TreeOptions::max_nodes, or was cancelled: incomplete.
  bool over_bound = false;
  bool cancelled = false;
  std::vector<TreeNode> nodes;
  std::vector<uint32_t> roots;  // by total value desc, then name
};

struct TreeOptions {
  bool inverted = false;            // roots are the sampled functions, children their callers
  bool collapse_recursion = false;  // a function calling itself is one node
  // The most nodes it may build (over_bound past them); 0: no bound. An
  // inverted tree can have a node per frame of every sampled stack.
  size_t max_nodes = 0;
  Cancel cancel;
};

// What the samples of a view measure. kCpu: the capture's samples as they
// are. kOffCpu: each off-CPU interval, weighted by its stored duration
// (end - start: an interval cut at the recording's start or end is counted
// as stored, never stretched), at its stack, plus each thread's short
// intervals (counted only) under one pseudo frame, so that totals are the
// whole off-CPU time. kWall: per thread, both (CPU samples weigh their
// period), so a thread's wall time is its CPU time plus its off-CPU time.
enum class Metric : uint8_t { kCpu, kOffCpu, kWall };

// "cpu", "offcpu", "wall"; false for anything else.
bool ParseMetric(const std::string& name, Metric* metric);
const char* MetricName(Metric metric);
// kOffCpu for a capture with off-CPU intervals and no samples, else kCpu.
Metric DefaultMetric(const capture::Capture& capture);

// An error for kOffCpu or kWall over a capture without off-CPU intervals,
// saying why it has none (the off-cpu source's state).
Status CheckMetric(const capture::Capture& capture, Metric metric);

struct MetricOptions {
  // Off-CPU stacks end (at their leaf) in a pseudo frame naming the
  // thread's state: "[sleeping]", "[uninterruptible]", "[preempted]", "[other]".
  bool by_state = false;
};

// The name of the pseudo frame that holds a thread's short off-CPU
// intervals: "[off-CPU intervals under 100 µs, no stack]".
std::string ShortOffCpuFrameName(uint64_t off_cpu_min_ns);
// The recording's --off-cpu-min in ns (0 when off-CPU time was not asked for).
uint64_t OffCpuMin(const capture::Capture& c);
// "[sleeping]" and so on.
std::string OffCpuStateFrameName(capture::OffCpuState state);

// Appends a named frame (no module) and a stack node for it under `parent`
// (kNone: a root): the pseudo frames above are made this way.
capture::StackId AppendPseudoFrame(capture::Capture* capture, const std::string& name,
                                   capture::StackId parent);

// The capture whose samples are `metric`: for kCpu a copy of `capture`; else
// its samples are replaced by the chosen rows in time order (off-CPU rows
// at their start, short-interval totals at the recording's start, samples
// count 1 per interval, short rows their count), settings.metric set to
// "offcpu" or "wall" and unit "nanoseconds". Every other table is kept;
// pseudo frames and their stack nodes are only appended, so frame and stack
// ids (and a SampleFilter made for either capture) stay valid in both. Every
// view (flat, trees, threads, diff, folded, speedscope) then works per metric.
capture::Capture ForMetric(const capture::Capture& capture, Metric metric,
                           const MetricOptions& options = {});

// The capture with inlined calls folded into the functions that hold them
// (report and convert --inlines off, as perf report credits them): every
// table's stacks without their inline frames. Frame ids stay valid.
capture::Capture WithoutInlines(const capture::Capture& capture);

// The call-graph transforms of report --merge and --collapse (the Firefox
// Profiler's "merge function" and "collapse library"), by the names the
// views show (FunctionKeys: a function's name, an unnamed frame's
// module+0xoffset, a module's file name): every table's stacks without the
// frames of the `merge` functions (their time goes to their callers), and
// each run of frames of a `collapse` module as one frame named after it.
// Frame ids stay valid (collapsed frames are appended).
capture::Capture Transformed(const capture::Capture& capture, const std::vector<std::string>& merge,
                             const std::vector<std::string>& collapse);

// The Firefox Profiler's "focus on subtree only" (report --focus-path): the
// capture with every table's stacks that begin at their root with `path`
// (function names as the views show them, root first) re-rooted at its last
// function, and every other stack none, so that a filter made with the
// path (FilterSpec::focus_path) drops those rows. kInvalidArgument when no
// stack begins with it. Frame ids stay valid.
Result<capture::Capture> Rooted(const capture::Capture& capture,
                                const std::vector<std::string>& path);

// Which frames of a mixed stack (native, kernel and interpreted frames of a
// runtime's code) a view shows (report and convert --look).
enum class Look : uint8_t {
  kMixed,  // every frame
  // "python" or "js", one look for every runtime: from the outermost
  // interpreted frame (Python or JavaScript) in, without the runtime's own
  // frames (Module.runtime: the interpreter, node's image); native code
  // called from the interpreted code stays where it was called, but the
  // system's leaves (the C and C++ runtime libraries, the vDSO and the
  // kernel, below every other frame) are left out, their time going to
  // their caller, as py-spy shows it. Stacks with no interpreted frame stay
  // whole.
  kInterpreted,
  kInterpretedNativeLeaves,  // the same, keeping the system's leaves (--native-leaves)
  kNative,                   // no interpreted frames (the runtimes' markers included)
};
// "mixed", "python" or "js" (the same look), "native"; false for another
// word. With `native_leaves`, python and js keep the system's leaves.
bool ParseLook(std::string_view text, Look* look, bool native_leaves = false);

// The capture with every table's stacks as `look` shows them. Frame ids
// stay valid; a stack left empty has no stack (kNone).
capture::Capture WithLook(const capture::Capture& capture, Look look);

// How report and convert shape a capture before their views: inlines
// folded or not, the look, Transformed's merge and collapse, and Rooted at
// a focus path (FilterSpec::focus_path), in that order.
struct Shaping {
  bool inlines = true;
  Look look = Look::kMixed;
  const std::vector<std::string>& merge;
  const std::vector<std::string>& collapse;
  const std::vector<std::string>& focus_path;
};
// The capture so shaped; nullopt when nothing shapes it (the capture as
// it is). Rooted's error when no stack begins with the focus path.
Result<std::optional<capture::Capture>> AsShown(const capture::Capture& capture,
                                                const Shaping& how);

// Samples and value ending in each stack node (index = StackId); samples
// without a stack are added to `no_stack`.
// Cancelled, they return what they have counted.
std::vector<Cost> CostPerStack(const capture::Capture& capture, const SampleFilter& filter,
                               Cost* no_stack, Cancel cancel = {});

// Which of the capture's functions are named `name` (one per module that
// has it), by FunctionId; empty when none is.
std::vector<bool> FunctionsNamed(const capture::Capture& capture, const std::string& name);

Flat ComputeFlat(const capture::Capture& capture, const FunctionKeys& keys,
                 const SampleFilter& filter = {}, Cancel cancel = {});
CallTree ComputeTree(const capture::Capture& capture, const FunctionKeys& keys,
                     const SampleFilter& filter = {}, TreeOptions options = {});

// The stack of a node as keys, outermost first (for the inverted tree, the
// sampled function first).
std::vector<KeyId> PathOf(const CallTree& tree, uint32_t node);

}  // namespace microscope::analysis
