#include "analysis/profile.h"

#include <algorithm>
#include <array>
#include <map>

#include "capture/stack_interner.h"

namespace microscope::analysis {

using capture::kNone;

bool ParseMetric(const std::string& name, Metric* metric) {
  for (Metric m : {Metric::kCpu, Metric::kOffCpu, Metric::kWall}) {
    if (name == MetricName(m)) {
      *metric = m;
      return true;
    }
  }
  return false;
}

const char* MetricName(Metric metric) {
  switch (metric) {
    case Metric::kCpu:
      return "cpu";
    case Metric::kOffCpu:
      return "offcpu";
    case Metric::kWall:
      return "wall";
  }
  return "cpu";
}

Metric DefaultMetric(const capture::Capture& c) {
  bool off = c.off_cpu.size() > 0 || c.off_cpu_short.size() > 0;
  return c.samples.size() == 0 && off ? Metric::kOffCpu : Metric::kCpu;
}

Status CheckMetric(const capture::Capture& c, Metric metric) {
  if (metric == Metric::kCpu || c.off_cpu.size() > 0 || c.off_cpu_short.size() > 0) {
    return OkStatus();
  }
  const std::string state = c.settings.SourceState(capture::kOffCpuSource);
  std::string why =
      state.empty() ? "it was recorded without off-CPU tracing" : "off-CPU tracing was " + state;
  return Status::Error(std::string("--metric ") + MetricName(metric) +
                       ": no off-CPU intervals in this capture (" + why + ")");
}

uint64_t OffCpuMin(const capture::Capture& c) {
  const capture::SourceSetting* off = c.settings.Source(capture::kOffCpuSource);
  return off != nullptr ? off->Value("min_ns") : 0;
}

std::string ShortOffCpuFrameName(uint64_t min_ns) {
  if (min_ns == 0) return "[short off-CPU intervals, no stack]";
  std::string n =
      min_ns % 1000 == 0 ? std::to_string(min_ns / 1000) + " µs" : std::to_string(min_ns) + " ns";
  return "[off-CPU intervals under " + n + ", no stack]";
}

std::string OffCpuStateFrameName(capture::OffCpuState state) {
  return std::string("[") + capture::OffCpuStateName(state) + "]";
}

namespace {

// Appends pseudo frames (named, no module) and stack nodes to a capture.
class PseudoFrames {
 public:
  explicit PseudoFrames(capture::Capture* c)
      : c_(c),
        base_stacks_(c->stacks.size()),
        stacks_(&c->stacks, capture::StackInterner::NewFramesOnly{}) {}
  capture::FrameId Frame(const std::string& name) {
    c_->strings.push_back(name);
    c_->functions.push_back({capture::StringId(c_->strings.size() - 1), kNone, kNone});
    c_->frames.push_back({capture::FrameKind::kNamed, kNone, 0,
                          capture::FunctionId(c_->functions.size() - 1), kNone, 0});
    return capture::FrameId(c_->frames.size() - 1);
  }
  capture::StackId Node(capture::StackId parent, capture::FrameId frame) {
    return stacks_.Intern(parent, frame);
  }
  // The child of `stack` (kNone: a root) naming `state`, made once.
  capture::StackId StateLeaf(capture::StackId stack, capture::OffCpuState state) {
    uint8_t s = uint8_t(state);
    if (state_frame_[s] == kNone) state_frame_[s] = Frame(OffCpuStateFrameName(state));
    std::vector<capture::StackId>& leaves = state_leaf_[s];
    if (leaves.empty()) leaves.assign(base_stacks_ + 1, kNone);
    size_t slot = stack == kNone ? 0 : size_t(stack) + 1;
    if (slot >= leaves.size()) leaves.resize(slot + 1, kNone);  // a node appended here
    if (leaves[slot] == kNone) leaves[slot] = Node(stack, state_frame_[s]);
    return leaves[slot];
  }

 private:
  capture::Capture* c_;
  size_t base_stacks_;
  capture::StackInterner stacks_;
  // Every state's frame kNone until made (an initializer list would leave
  // the states it does not name at frame 0).
  std::array<capture::FrameId, capture::kOffCpuStateCount> state_frame_ = [] {
    std::array<capture::FrameId, capture::kOffCpuStateCount> none;
    none.fill(kNone);
    return none;
  }();
  std::array<std::vector<capture::StackId>, capture::kOffCpuStateCount> state_leaf_;
};

}  // namespace

namespace {

// Every table's stacks of `out` as `remap` maps them (old node to new).
void RemapStacks(capture::Capture* out, const std::vector<capture::StackId>& remap) {
  capture::ForEachStackColumn(*out, [&](const char*, auto& column) {
    for (size_t i = 0; i < column.size(); ++i) {
      if (column[i] != kNone) column[i] = remap[column[i]];
    }
  });
}

}  // namespace

capture::StackId AppendPseudoFrame(capture::Capture* c, const std::string& name,
                                   capture::StackId parent) {
  PseudoFrames pseudo(c);
  return pseudo.Node(parent, pseudo.Frame(name));
}

capture::Capture WithoutInlines(const capture::Capture& c) {
  capture::Capture out = c;
  out.stacks = {};
  capture::StackInterner stacks(&out.stacks);
  std::vector<capture::StackId> remap(c.stacks.size(), kNone);
  for (size_t n = 0; n < c.stacks.size(); ++n) {
    capture::StackId parent = c.stacks.parent[n] == kNone ? kNone : remap[c.stacks.parent[n]];
    capture::FrameId f = c.stacks.frame[n];
    // An inline frame's time goes to the frame below it, the function that
    // holds the code.
    remap[n] = c.frames[f].kind == capture::FrameKind::kInline ? parent : stacks.Intern(parent, f);
  }
  RemapStacks(&out, remap);
  return out;
}

capture::Capture Transformed(const capture::Capture& c, const std::vector<std::string>& merge,
                             const std::vector<std::string>& collapse) {
  if (merge.empty() && collapse.empty()) return c;
  capture::Capture out = c;
  const FunctionKeys keys(c);
  // Per frame: merged away, or the module it collapses into (its frame).
  std::vector<uint8_t> merged(c.frames.size(), 0);
  std::vector<capture::FrameId> into(c.frames.size(), kNone);
  std::map<std::string, capture::FrameId> collapsed;  // by module name
  for (size_t f = 0; f < c.frames.size(); ++f) {
    const KeyId key = keys.KeyOf(capture::FrameId(f));
    if (std::find(merge.begin(), merge.end(), keys.Name(key)) != merge.end()) {
      merged[f] = 1;
      continue;
    }
    if (collapse.empty()) continue;
    const std::string module = keys.ModuleName(key);
    if (module.empty() || std::find(collapse.begin(), collapse.end(), module) == collapse.end())
      continue;
    auto [it, fresh] = collapsed.try_emplace(module, kNone);
    if (fresh) {
      out.strings.push_back(module);
      out.functions.push_back({capture::StringId(out.strings.size() - 1), c.frames[f].module});
      out.frames.push_back({capture::FrameKind::kNamed, c.frames[f].module, 0,
                            capture::FunctionId(out.functions.size() - 1)});
      it->second = capture::FrameId(out.frames.size() - 1);
    }
    into[f] = it->second;
  }
  out.stacks = {};
  capture::StackInterner stacks(&out.stacks);
  std::vector<capture::StackId> remap(c.stacks.size(), kNone);
  for (size_t n = 0; n < c.stacks.size(); ++n) {
    const capture::StackId parent = c.stacks.parent[n] == kNone ? kNone : remap[c.stacks.parent[n]];
    const capture::FrameId f = c.stacks.frame[n];
    if (merged[f]) {
      remap[n] = parent;
    } else if (into[f] != kNone) {
      // A run of the module's frames is one frame.
      remap[n] = parent != kNone && out.stacks.frame[parent] == into[f]
                     ? parent
                     : stacks.Intern(parent, into[f]);
    } else {
      remap[n] = stacks.Intern(parent, f);
    }
  }
  RemapStacks(&out, remap);
  return out;
}

Result<capture::Capture> Rooted(const capture::Capture& c, const std::vector<std::string>& path) {
  capture::Capture out = c;
  const FunctionKeys keys(c);
  const int32_t whole = int32_t(path.size());
  // Per stack node (parents come first): how much of the path its frames
  // from the root match, -1 once they leave it.
  std::vector<int32_t> matched(c.stacks.size(), -1);
  out.stacks = {};
  capture::StackInterner stacks(&out.stacks);
  std::vector<capture::StackId> remap(c.stacks.size(), kNone);
  bool found = false;
  for (size_t n = 0; n < c.stacks.size(); ++n) {
    const capture::StackId parent = c.stacks.parent[n];
    const int32_t above = parent == kNone ? 0 : matched[parent];
    const capture::FrameId f = c.stacks.frame[n];
    if (above < 0) continue;
    if (above == whole) {
      matched[n] = whole;
      remap[n] = stacks.Intern(remap[parent], f);
    } else if (keys.Name(keys.KeyOf(f)) == path[size_t(above)]) {
      matched[n] = above + 1;
      if (matched[n] == whole) {
        remap[n] = stacks.Intern(kNone, f);
        found = true;
      }
    }
  }
  if (!found) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "no stack begins with the call path " + JoinCallPath(path));
  }
  RemapStacks(&out, remap);
  return out;
}

Result<std::optional<capture::Capture>> AsShown(const capture::Capture& c, const Shaping& how) {
  if (how.inlines && how.look == Look::kMixed && how.merge.empty() && how.collapse.empty() &&
      how.focus_path.empty()) {
    return std::optional<capture::Capture>();
  }
  capture::Capture t =
      Transformed(WithLook(how.inlines ? c : WithoutInlines(c), how.look), how.merge, how.collapse);
  if (how.focus_path.empty()) return std::optional<capture::Capture>(std::move(t));
  ASSIGN_OR_RETURN(capture::Capture rooted, Rooted(t, how.focus_path));
  return std::optional<capture::Capture>(std::move(rooted));
}

bool ParseLook(std::string_view text, Look* look, bool native_leaves) {
  if (text == "mixed") {
    *look = Look::kMixed;
  } else if (text == "python" || text == "js") {
    *look = native_leaves ? Look::kInterpretedNativeLeaves : Look::kInterpreted;
  } else if (text == "native") {
    *look = Look::kNative;
  } else {
    return false;
  }
  return true;
}

namespace {

// The C and C++ runtime libraries, whose frames at a stack's leaf py-spy
// and --cpu-prof leave out: by the file's name, any version.
bool SystemLibrary(std::string_view path) {
  const std::string_view name = path.substr(path.rfind('/') + 1);
  static constexpr std::string_view kLibraries[] = {
      "libc.so", "libc-",    "libm.so",  "libm-",     "libpthread", "libdl",
      "librt",   "ld-linux", "libgcc_s", "libstdc++", "libc++",     "libc++abi"};
  for (std::string_view l : kLibraries) {
    if (name.substr(0, l.size()) == l) return true;
  }
  return false;
}

}  // namespace

capture::Capture WithLook(const capture::Capture& c, Look look) {
  capture::Capture out = c;
  if (look == Look::kMixed) return out;
  // Per module: a system leaf's (kernel, vDSO, C and C++ runtime libraries).
  std::vector<uint8_t> system(c.modules.size());
  for (size_t m = 0; m < c.modules.size(); ++m) {
    const capture::Module& mod = c.modules[m];
    system[m] = mod.kind == capture::ModuleKind::kKernel ||
                mod.kind == capture::ModuleKind::kVdso ||
                (mod.kind == capture::ModuleKind::kFile && SystemLibrary(c.str(mod.path)));
  }
  auto system_leaf = [&](capture::FrameId f) {
    const capture::Frame& frame = c.frames[f];
    if (frame.kind == capture::FrameKind::kKernel) return true;
    if (frame.kind == capture::FrameKind::kInterpreted || frame.module == kNone) return false;
    return frame.module < system.size() && system[frame.module] != 0;
  };
  auto interpreted = [&](capture::FrameId f) {
    return c.frames[f].kind == capture::FrameKind::kInterpreted;
  };
  auto interpreter_own = [&](capture::FrameId f) {
    const capture::Frame& frame = c.frames[f];
    return frame.kind != capture::FrameKind::kInterpreted && frame.module != kNone &&
           frame.module < c.modules.size() &&
           c.modules[frame.module].runtime != capture::Runtime::kNone;
  };
  out.stacks = {};
  capture::StackInterner stacks(&out.stacks);
  std::vector<capture::StackId> remap(c.stacks.size(), kNone);
  std::vector<uint8_t> done(c.stacks.size(), 0);
  std::vector<capture::FrameId> frames;  // root first
  std::vector<capture::FrameId> kept;    // of those, what the look keeps
  auto map = [&](capture::StackId id) {
    if (done[id]) return remap[id];
    frames.clear();
    for (capture::StackId n = id; n != kNone; n = c.stacks.parent[n])
      frames.push_back(c.stacks.frame[n]);
    std::reverse(frames.begin(), frames.end());
    capture::StackId node = kNone;
    if (look == Look::kNative) {
      for (capture::FrameId f : frames) {
        if (!interpreted(f)) node = stacks.Intern(node, f);
      }
    } else {
      auto first = std::find_if(frames.begin(), frames.end(), interpreted);
      kept.clear();
      for (auto it = first == frames.end() ? frames.begin() : first; it != frames.end(); ++it) {
        if (first == frames.end() || !interpreter_own(*it)) kept.push_back(*it);
      }
      if (first != frames.end() && look == Look::kInterpreted) {
        // The system's leaves go, down to the innermost other frame, once
        // the interpreter's own are out: a C library frame between two of
        // the interpreter's (a callback's, an unwind cut short under
        // Python frames placed after it) is a leaf of this look too.
        while (!kept.empty() && system_leaf(kept.back())) kept.pop_back();
      }
      for (capture::FrameId f : kept) node = stacks.Intern(node, f);
    }
    done[id] = 1;
    return remap[id] = node;
  };
  capture::ForEachStackColumn(out, [&](const char*, auto& column) {
    for (size_t i = 0; i < column.size(); ++i) {
      if (column[i] != kNone && column[i] < c.stacks.size()) column[i] = map(column[i]);
    }
  });
  return out;
}

capture::Capture ForMetric(const capture::Capture& c, Metric metric, const MetricOptions& options) {
  capture::Capture out = c;
  if (metric == Metric::kCpu) return out;
  out.settings.metric = MetricName(metric);
  out.settings.unit = "nanoseconds";
  if (metric == Metric::kOffCpu) out.settings.frequency = 0;
  PseudoFrames pseudo(&out);
  const capture::OffCpu& o = c.off_cpu;
  const capture::Samples& s = c.samples;
  const size_t cpu_rows = metric == Metric::kWall ? s.size() : 0;
  const size_t rows = cpu_rows + o.size() + c.off_cpu_short.size();
  std::vector<uint64_t> time, weight;
  std::vector<capture::ThreadId> thread;
  std::vector<capture::StackId> stack;
  std::vector<capture::StackEnd> end;
  std::vector<uint32_t> count;
  time.reserve(rows);
  weight.reserve(rows);
  thread.reserve(rows);
  stack.reserve(rows);
  end.reserve(rows);
  count.reserve(rows);
  auto add = [&](uint64_t t, capture::ThreadId th, capture::StackId st, uint64_t w,
                 capture::StackEnd e, uint64_t n) {
    time.push_back(t);
    thread.push_back(th);
    stack.push_back(st);
    weight.push_back(w);
    end.push_back(e);
    count.push_back(uint32_t(std::min<uint64_t>(n, UINT32_MAX)));
  };
  // Short intervals have no time: they stand at the start, before any row.
  if (c.off_cpu_short.size() > 0) {
    uint64_t at = c.settings.start_time;
    if (cpu_rows > 0) at = std::min(at, s.time.front());
    if (o.size() > 0) at = std::min(at, o.start.front());
    capture::StackId node = pseudo.Node(kNone, pseudo.Frame(ShortOffCpuFrameName(OffCpuMin(c))));
    const capture::OffCpuShort& sh = c.off_cpu_short;
    for (size_t i = 0; i < sh.size(); ++i) {
      capture::StackId st = options.by_state ? pseudo.StateLeaf(node, sh.state[i]) : node;
      add(at, sh.thread[i], st, sh.total[i], capture::StackEnd::kEmpty, sh.count[i]);
    }
  }
  // Both tables are in time order: merge them.
  size_t i = 0, j = 0;
  while (i < cpu_rows || j < o.size()) {
    if (j == o.size() || (i < cpu_rows && s.time[i] <= o.start[j])) {
      add(s.time[i], s.thread[i], s.stack[i], s.weight[i], s.end[i], s.CountAt(i));
      ++i;
    } else {
      capture::StackId st =
          options.by_state ? pseudo.StateLeaf(o.stack[j], o.state[j]) : o.stack[j];
      add(o.start[j], o.thread[j], st, o.end[j] - o.start[j], o.stack_end[j], 1);
      ++j;
    }
  }
  out.samples = capture::Samples{};
  out.samples.time = std::move(time);
  out.samples.thread = std::move(thread);
  out.samples.stack = std::move(stack);
  out.samples.weight = std::move(weight);
  out.samples.end = std::move(end);
  out.samples.count = std::move(count);
  return out;
}

std::vector<Cost> CostPerStack(const capture::Capture& c, const SampleFilter& filter,
                               Cost* no_stack, Cancel cancel) {
  std::vector<Cost> per(c.stacks.size());
  const auto& s = c.samples;
  for (size_t i = 0; i < s.size(); ++i) {
    if (cancel.At(i)) break;
    if (!filter.Keep(c, i)) continue;
    Cost& target = s.stack[i] == kNone ? *no_stack : per[s.stack[i]];
    target.Add(s.CountAt(i), s.weight[i]);
  }
  return per;
}

Flat ComputeFlat(const capture::Capture& c, const FunctionKeys& keys, const SampleFilter& filter,
                 Cancel cancel) {
  Flat flat;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, filter, &no_stack, cancel);
  std::vector<Cost> self(keys.size()), total(keys.size());
  std::vector<uint32_t> seen(keys.size(), kNone);  // last stack node that counted a key
  flat.all = no_stack;
  for (uint32_t node = 0; node < per_stack.size(); ++node) {
    if (cancel.At(node)) break;
    const Cost& cost = per_stack[node];
    if (cost.samples == 0 && cost.value == 0) continue;
    flat.all.Add(cost);
    self[keys.KeyOf(c.stacks.frame[node])].Add(cost);
    // Total counts a function once per stack, however often it recurses.
    for (uint32_t n = node; n != kNone; n = c.stacks.parent[n]) {
      KeyId k = keys.KeyOf(c.stacks.frame[n]);
      if (seen[k] == node) continue;
      seen[k] = node;
      total[k].Add(cost);
    }
  }
  for (KeyId k = 0; k < keys.size(); ++k) {
    if (total[k].samples > 0 || total[k].value > 0) flat.rows.push_back({k, self[k], total[k]});
  }
  std::sort(flat.rows.begin(), flat.rows.end(), [&](const FlatRow& a, const FlatRow& b) {
    if (a.self.value != b.self.value) return a.self.value > b.self.value;
    if (a.total.value != b.total.value) return a.total.value > b.total.value;
    if (a.self.samples != b.self.samples) return a.self.samples > b.self.samples;
    return keys.Name(a.key) < keys.Name(b.key);
  });
  return flat;
}

namespace {

// (parent << 32 | key) -> tree node, open addressing with linear probing:
// the tree is built once per query over every stack node, and an ordered
// map (then a node-based hash map) was a third of a query at 1M samples.
class ChildIndex {
 public:
  explicit ChildIndex(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    slots_.assign(capacity, Slot{kEmpty, 0});
    mask_ = capacity - 1;
  }
  // The node under `key`, or `fresh` entered under it.
  uint32_t FindOrAdd(uint64_t key, uint32_t fresh, bool* added) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == key) {
        *added = false;
        return slots_[i].node;
      }
      if (slots_[i].key == kEmpty) {
        slots_[i] = {key, fresh};
        ++size_;
        *added = true;
        return fresh;
      }
    }
  }

 private:
  // No key is all ones: a parent is a node index below kNone, or kNone
  // with a key below kNone.
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  struct Slot {
    uint64_t key;
    uint32_t node;
  };
  static size_t Hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return size_t(k);
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{kEmpty, 0});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = Hash(s.key) & mask_;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

class TreeBuilder {
 public:
  TreeBuilder(CallTree* tree, size_t expected) : tree_(tree), index_(expected) {}
  uint32_t Child(uint32_t parent, KeyId key) {
    bool added = false;
    uint32_t node =
        index_.FindOrAdd(uint64_t(parent) << 32 | key, uint32_t(tree_->nodes.size()), &added);
    if (added) {
      tree_->nodes.push_back({key, parent, {}, {}, {}});
      if (parent == kNone) {
        tree_->roots.push_back(node);
      } else {
        tree_->nodes[parent].children.push_back(node);
      }
    }
    return node;
  }

 private:
  CallTree* tree_;
  ChildIndex index_;
};

}  // namespace

CallTree ComputeTree(const capture::Capture& c, const FunctionKeys& keys,
                     const SampleFilter& filter, TreeOptions options) {
  CallTree tree;
  tree.inverted = options.inverted;
  Cost no_stack;
  std::vector<Cost> per_stack = CostPerStack(c, filter, &no_stack, options.cancel);
  tree.all = no_stack;
  // Past max_nodes (a compare after each node added) it stops over_bound;
  // the cancel flag is read every kStride stack nodes.
  const size_t max_nodes = options.max_nodes == 0 ? SIZE_MAX - 1 : options.max_nodes;
  auto stop = [&](uint32_t node) {
    if (options.cancel.At(node)) tree.cancelled = true;
    return tree.cancelled || tree.over_bound;
  };
  if (!options.inverted) {
    // Stack nodes with no cost below them (all of them filtered out) make
    // no tree node: one backward pass marks the others, children first.
    std::vector<uint8_t> live(c.stacks.size());
    size_t live_count = 0;
    for (uint32_t node = uint32_t(c.stacks.size()); node-- > 0;) {
      if (per_stack[node].samples != 0 || per_stack[node].value != 0) live[node] = 1;
      if (!live[node]) continue;
      ++live_count;
      uint32_t sp = c.stacks.parent[node];
      if (sp != kNone) live[sp] = 1;
    }
    TreeBuilder builder(&tree, std::min(live_count, max_nodes + 1));
    tree.nodes.reserve(std::min(live_count, max_nodes + 1));
    // Stack nodes become tree nodes merged by key under the same parent;
    // parents precede children in both, so one forward pass suffices.
    std::vector<uint32_t> tree_of_stack(c.stacks.size());
    for (uint32_t node = 0; node < c.stacks.size(); ++node) {
      if (stop(node)) break;
      if (!live[node]) continue;
      uint32_t sp = c.stacks.parent[node];
      uint32_t parent = sp == kNone ? kNone : tree_of_stack[sp];
      KeyId key = keys.KeyOf(c.stacks.frame[node]);
      uint32_t t = (options.collapse_recursion && parent != kNone && tree.nodes[parent].key == key)
                       ? parent
                       : builder.Child(parent, key);
      tree_of_stack[node] = t;
      tree.nodes[t].self.Add(per_stack[node]);
      tree.all.Add(per_stack[node]);
      if (tree.nodes.size() > max_nodes) tree.over_bound = true;
    }
    for (uint32_t i = uint32_t(tree.nodes.size()); i-- > 0;) {
      TreeNode& n = tree.nodes[i];
      n.total.Add(n.self);
      if (n.parent != kNone) tree.nodes[n.parent].total.Add(n.total);
    }
  } else {
    // Each sampled stack, read from its leaf outwards, is a path from a
    // root (the sampled function) through its callers.
    // At most one tree node per frame of each sampled stack: the index and
    // the nodes sized for that once (growing them was an eighth of a query).
    std::vector<uint32_t> depth(c.stacks.size());
    size_t bound = 0;
    for (uint32_t node = 0; node < c.stacks.size(); ++node) {
      uint32_t sp = c.stacks.parent[node];
      depth[node] = (sp == kNone ? 0 : depth[sp]) + 1;
      if (per_stack[node].samples != 0 || per_stack[node].value != 0) bound += depth[node];
    }
    TreeBuilder builder(&tree, std::min(bound, max_nodes + 1));
    tree.nodes.reserve(std::min(bound, max_nodes + 1));
    for (uint32_t node = 0; node < c.stacks.size(); ++node) {
      if (stop(node)) break;
      const Cost& cost = per_stack[node];
      if (cost.samples == 0 && cost.value == 0) continue;
      tree.all.Add(cost);
      uint32_t t = kNone;
      KeyId last = kNone;
      for (uint32_t n = node; n != kNone; n = c.stacks.parent[n]) {
        KeyId key = keys.KeyOf(c.stacks.frame[n]);
        if (options.collapse_recursion && key == last) continue;
        t = builder.Child(t, key);
        tree.nodes[t].total.Add(cost);
        if (n == node) tree.nodes[t].self.Add(cost);
        last = key;
        if (tree.nodes.size() > max_nodes) {
          tree.over_bound = true;
          break;
        }
      }
    }
  }
  auto order = [&](uint32_t a, uint32_t b) {
    const TreeNode& x = tree.nodes[a];
    const TreeNode& y = tree.nodes[b];
    if (x.total.value != y.total.value) return x.total.value > y.total.value;
    if (x.total.samples != y.total.samples) return x.total.samples > y.total.samples;
    if (keys.Name(x.key) != keys.Name(y.key)) return keys.Name(x.key) < keys.Name(y.key);
    return a < b;
  };
  std::sort(tree.roots.begin(), tree.roots.end(), order);
  for (TreeNode& n : tree.nodes) std::sort(n.children.begin(), n.children.end(), order);
  return tree;
}

std::vector<KeyId> PathOf(const CallTree& tree, uint32_t node) {
  std::vector<KeyId> path;
  for (uint32_t n = node; n != kNone; n = tree.nodes[n].parent) path.push_back(tree.nodes[n].key);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<bool> FunctionsNamed(const capture::Capture& c, const std::string& name) {
  std::vector<bool> named(c.functions.size());
  bool any = false;
  for (size_t f = 0; f < c.functions.size(); ++f) {
    named[f] = c.str(c.functions[f].name) == name;
    any = any || named[f];
  }
  if (!any) named.clear();
  return named;
}

}  // namespace microscope::analysis
