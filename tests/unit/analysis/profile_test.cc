#include <doctest.h>

#include <algorithm>

#include "analysis/profile.h"
#include "analysis/summary.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::analysis;

namespace {

// A function's self samples in `cap`'s flat profile; -1 without a row.
int64_t SelfOf(const capture::Capture& cap, const std::string& name) {
  FunctionKeys keys(cap);
  for (const auto& r : ComputeFlat(cap, keys).rows) {
    if (keys.Name(r.key) == name) return int64_t(r.self.samples);
  }
  return -1;
}

}  // namespace

TEST_CASE("Flat: self and total per function, ordered") {
  capture::Capture c = testing::MakeTestCapture();
  FunctionKeys keys(c);
  Flat flat = ComputeFlat(c, keys);
  CHECK(flat.all.samples == 10);
  CHECK(flat.all.value == 10000);
  REQUIRE(flat.rows.size() == 4);
  CHECK(keys.Name(flat.rows[0].key) == "hot");
  CHECK(flat.rows[0].self.samples == 7);
  CHECK(keys.Name(flat.rows[1].key) == "cold");
  CHECK(flat.rows[1].self.samples == 3);
  CHECK(keys.Name(flat.rows[2].key) == "main");  // equal self and total: by name
  CHECK(keys.Name(flat.rows[3].key) == "run");
  CHECK(flat.rows[3].total.samples == 10);
  CHECK(flat.rows[3].self.samples == 0);
}

TEST_CASE("Flat: recursion counts a function's total once per sample") {
  capture::Capture c = testing::MakeTestCapture();
  // main > run > run(again) > hot
  c.stacks.parent.push_back(1);
  c.stacks.frame.push_back(1);
  c.stacks.parent.push_back(5);
  c.stacks.frame.push_back(2);
  c.samples.stack[0] = 6;
  FunctionKeys keys(c);
  Flat flat = ComputeFlat(c, keys);
  auto run = std::find_if(flat.rows.begin(), flat.rows.end(),
                          [&](const FlatRow& r) { return keys.Name(r.key) == "run"; });
  REQUIRE(run != flat.rows.end());
  CHECK(run->total.samples == 10);
}

TEST_CASE("Tree: callers first, merged by function, children by total; no node without cost") {
  capture::Capture c = testing::MakeTestCapture();
  FunctionKeys keys(c);
  CallTree t = ComputeTree(c, keys);
  REQUIRE(t.roots.size() == 1);
  const TreeNode& main = t.nodes[t.roots[0]];
  CHECK(keys.Name(main.key) == "main");
  CHECK(main.total.samples == 10);
  REQUIRE(main.children.size() == 1);
  const TreeNode& run = t.nodes[main.children[0]];
  // The stack ending in app+0x50 has no sample: it makes no node.
  REQUIRE(run.children.size() == 2);
  CHECK(keys.Name(t.nodes[run.children[0]].key) == "hot");
  CHECK(t.nodes[run.children[0]].total.samples == 7);
  CHECK(keys.Name(t.nodes[run.children[1]].key) == "cold");
  for (const TreeNode& n : t.nodes) CHECK(n.total.samples > 0);
  // Focused on cold, the other paths leave no node.
  SampleFilter first = SampleFilter::Make(c, keys, FilterSpec{.focus = "^cold$"}).value();
  CallTree f = ComputeTree(c, keys, first);
  for (const TreeNode& n : f.nodes) CHECK(keys.Name(n.key) != "hot");
}

TEST_CASE("Summary: header facts") {
  capture::Capture c = testing::MakeTestCapture();
  Summary s = Summarize(c);
  CHECK(s.samples == 10);
  CHECK(s.duration_ns == 990);
  REQUIRE(s.threads.size() == 1);
  CHECK(s.threads[0].name == "app");
  CHECK(s.threads[0].samples == 10);
  REQUIRE(s.problems.size() == 1);
  CHECK(s.problems[0].count == 2);
  CHECK(s.stack_ends[0] == 10);
  CHECK(s.fully_named == 10);  // main > run > hot|cold: all named
}

TEST_CASE("WithoutInlines: inlined calls' time goes to the function holding their code") {
  capture::Capture c = testing::MakeTestCapture();
  // hot (frame 2, at 0x30) gets an inlined call, inner, under it in 7 samples.
  c.strings.push_back("inner");
  c.functions.push_back({capture::StringId(c.strings.size() - 1), 0});
  c.frames.push_back(
      {capture::FrameKind::kInline, 0, 0x30, capture::FunctionId(c.functions.size() - 1)});
  c.stacks.parent.push_back(2);
  c.stacks.frame.push_back(capture::FrameId(c.frames.size() - 1));
  for (size_t i = 0; i < 7; ++i) c.samples.stack[i] = capture::StackId(c.stacks.size() - 1);
  c.off_cpu.stack.push_back(capture::StackId(c.stacks.size() - 1));
  REQUIRE(SelfOf(c, "inner") == 7);
  REQUIRE(SelfOf(c, "hot") == 0);
  capture::Capture folded = WithoutInlines(c);
  CHECK(SelfOf(folded, "inner") == -1);
  CHECK(SelfOf(folded, "hot") == 7);
  CHECK(SelfOf(folded, "cold") == SelfOf(c, "cold"));
  // Every table's stacks follow, and frame ids hold.
  CHECK(folded.frames.size() == c.frames.size());
  CHECK(folded.off_cpu.stack.back() == folded.samples.stack[0]);
  CHECK(folded.frames[folded.stacks.frame[folded.samples.stack[0]]].kind ==
        capture::FrameKind::kNative);
}

TEST_CASE("WithLook: Python frames among the native ones, alone, or left out") {
  using capture::FrameKind;
  capture::Capture c = testing::MakeTestCapture();
  // Module 0 (/bin/app) is the interpreter: main > run (its eval loop) runs
  // py_outer, which calls libc's qsort, which calls back into run, which
  // runs py_cmp. hot (frame 2) is its own code called from py_cmp.
  c.modules[0].runtime = capture::Runtime::kCPython;
  c.modules.push_back({0, {0x01}, 4096, capture::ModuleKind::kFile});  // module 1: libc
  auto function = [&](const char* name) {
    c.strings.push_back(name);
    c.functions.push_back({capture::StringId(c.strings.size() - 1), capture::kNone});
    return capture::FunctionId(c.functions.size() - 1);
  };
  auto frame = [&](capture::Frame f) {
    c.frames.push_back(f);
    return capture::FrameId(c.frames.size() - 1);
  };
  const capture::FrameId outer =
      frame({FrameKind::kInterpreted, capture::kNone, 1, function("py_outer"), 0, 3});
  const capture::FrameId qsort = frame({FrameKind::kNative, 1, 0x40, function("qsort")});
  const capture::FrameId cmp =
      frame({FrameKind::kInterpreted, capture::kNone, 5, function("py_cmp"), 0, 6});
  auto node = [&](capture::StackId parent, capture::FrameId f) {
    c.stacks.parent.push_back(parent);
    c.stacks.frame.push_back(f);
    return capture::StackId(c.stacks.size() - 1);
  };
  // main > run > py_outer > qsort > run > py_cmp > hot
  capture::StackId s = node(node(node(1, outer), qsort), 1);
  s = node(node(s, cmp), 2);
  for (size_t i = 0; i < 7; ++i) c.samples.stack[i] = s;  // the other 3: main > run > cold
  // Sample 7: py_cmp calls libc's malloc, which faults into the kernel.
  c.strings.push_back("/usr/lib/x86_64-linux-gnu/libc.so.6");
  c.modules[1].path = capture::StringId(c.strings.size() - 1);
  const capture::FrameId malloc_frame = frame({FrameKind::kNative, 1, 0x80, function("malloc")});
  const capture::FrameId fault =
      frame({FrameKind::kKernel, capture::kNone, 0xffff0000, function("asm_exc_page_fault")});
  c.samples.stack[7] =
      node(node(node(node(node(node(1, outer), qsort), 1), cmp), malloc_frame), fault);
  // Sample 8: qsort, running the interpreter's own code before py_cmp
  // starts, faults: qsort is then python's leaf, under the kernel's.
  c.samples.stack[8] = node(node(node(node(1, outer), qsort), 1), fault);
  auto paths = [](const capture::Capture& cap) {
    std::vector<std::string> out;
    for (capture::StackId id : cap.samples.stack) {
      std::string path;
      for (capture::StackId n = id; n != capture::kNone; n = cap.stacks.parent[n]) {
        path = cap.strings[cap.functions[cap.frames[cap.stacks.frame[n]].function].name] +
               (path.empty() ? "" : ";" + path);
      }
      out.push_back(path);
    }
    return out;
  };
  CHECK(paths(WithLook(c, Look::kMixed)) == paths(c));
  auto python = paths(WithLook(c, Look::kInterpreted));
  CHECK(python[0] == "py_outer;qsort;py_cmp");  // hot: the interpreter's own code, left out
  CHECK(python[9] == "main;run;cold");          // no Python frame: the stack stays whole
  // The system's leaves go (their time is py_cmp's), unless asked for;
  // qsort, libc's too, is no leaf and stays.
  CHECK(python[7] == "py_outer;qsort;py_cmp");
  CHECK(python[8] == "py_outer");
  CHECK(paths(WithLook(c, Look::kInterpretedNativeLeaves))[8] ==
        "py_outer;qsort;asm_exc_page_fault");
  CHECK(paths(WithLook(c, Look::kInterpretedNativeLeaves))[7] ==
        "py_outer;qsort;py_cmp;malloc;asm_exc_page_fault");
  auto native = paths(WithLook(c, Look::kNative));
  CHECK(native[0] == "main;run;qsort;run;hot");
  CHECK(native[9] == "main;run;cold");
  Look look;
  CHECK(ParseLook("python", &look));
  CHECK(look == Look::kInterpreted);
  look = Look::kMixed;
  CHECK(ParseLook("js", &look));
  CHECK(look == Look::kInterpreted);
  CHECK(ParseLook("python", &look, /*native_leaves=*/true));
  CHECK(look == Look::kInterpretedNativeLeaves);
  CHECK_FALSE(ParseLook("java", &look));
}

TEST_CASE("FunctionKeys: each function's kind of code, for colouring by kind") {
  using capture::kNone;
  capture::Capture c = testing::MakeTestCapture();
  using capture::FrameKind;
  const auto str = [&](const char* s) {
    c.strings.push_back(s);
    return capture::StringId(c.strings.size() - 1);
  };
  const capture::StringId vmlinux = str("[kernel.kallsyms]"), anon = str("//anon");
  c.modules.push_back({vmlinux, {}, 0, capture::ModuleKind::kKernel});
  c.modules.push_back({anon, {}, 0, capture::ModuleKind::kAnonymous});
  const auto function = [&](const char* name, capture::ModuleId module) {
    c.functions.push_back({str(name), module});
    return capture::FunctionId(c.functions.size() - 1);
  };
  const size_t first = c.frames.size();
  c.frames.push_back({FrameKind::kKernel, 1, 0x10, function("schedule", 1)});
  c.frames.push_back({FrameKind::kInline, 0, 0x20, function("inlined", 0)});
  c.frames.push_back({FrameKind::kNative, 2, 0x30, function("LazyCompile:*f", 2)});
  c.frames.push_back(
      {FrameKind::kInterpreted, kNone, 7, function("handler", kNone), str("app.py")});
  c.frames.push_back(
      {FrameKind::kInterpreted, kNone, 7, function("<module>", kNone), str("<string>")});
  c.frames.push_back(
      {FrameKind::kInterpreted, kNone, 7, function("render", kNone), str("/srv/app.mjs")});
  c.frames.push_back({FrameKind::kInterpreted, kNone, 0, function("from", kNone)});
  c.frames.push_back({FrameKind::kNamed, kNone, 0, function("[blocked]", kNone)});
  FunctionKeys keys(c);
  std::vector<std::string_view> kinds;
  for (size_t f = first; f < c.frames.size(); ++f) kinds.push_back(keys.KindName(keys.KeyOf(f)));
  CHECK(kinds == std::vector<std::string_view>{"kernel", "inline", "jit", "python", "python",
                                               "javascript", "interpreted", "other"});
  CHECK(keys.KindName(keys.KeyOf(0)) == "native");
  // With one runtime in the recording, a frame nothing else places is its.
  c.modules[0].runtime = capture::Runtime::kV8;
  FunctionKeys node(c);
  CHECK(node.KindName(node.KeyOf(c.frames.size() - 2)) == "javascript");
}

TEST_CASE("Transformed: a merged function's time goes to its caller; a module's run is one frame") {
  // main>run>hot (7 samples), main>run>cold (3), all in /bin/app.
  capture::Capture c = testing::MakeTestCapture();
  capture::Capture merged = Transformed(c, {"hot"}, {});
  CHECK(SelfOf(merged, "hot") == -1);
  CHECK(SelfOf(merged, "run") == 7);
  CHECK(SelfOf(merged, "cold") == 3);
  CHECK(merged.frames.size() == c.frames.size());  // frame ids hold
  // The module's frames, one frame per run of them: every stack is "app".
  capture::Capture collapsed = Transformed(c, {}, {"app"});
  FunctionKeys keys(collapsed);
  CallTree tree = ComputeTree(collapsed, keys);
  REQUIRE(tree.roots.size() == 1);
  const TreeNode& root = tree.nodes[tree.roots[0]];
  CHECK(keys.Name(root.key) == "app");
  CHECK(root.total.samples == 10);
  CHECK(root.self.samples == 10);
  CHECK(root.children.empty());
  // Nothing asked: the capture as it was.
  CHECK(Transformed(c, {}, {}).stacks.size() == c.stacks.size());
}

TEST_CASE("Rooted: stacks beginning with a call path start at its last function; others are none") {
  // main>run>hot (7 samples), main>run>cold (3).
  capture::Capture c = testing::MakeTestCapture();
  const std::vector<std::string> path = {"main", "run", "cold"};
  capture::Capture rooted = Rooted(c, path).value();
  CHECK(rooted.frames.size() == c.frames.size());  // frame ids hold
  FunctionKeys keys(rooted);
  // The filter made with the path drops the rows left with no stack.
  SampleFilter kept = SampleFilter::Make(rooted, keys, FilterSpec{.focus_path = path}).value();
  CallTree tree = ComputeTree(rooted, keys, kept);
  REQUIRE(tree.roots.size() == 1);
  const TreeNode& root = tree.nodes[tree.roots[0]];
  CHECK(keys.Name(root.key) == "cold");
  CHECK(root.total.samples == 3);
  CHECK(ComputeFlat(rooted, keys, kept).all.samples == 3);
  // A path that leaves the root, or one no stack begins with, is refused.
  Result<capture::Capture> none = Rooted(c, {"run"});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message() == "no stack begins with the call path run");
  CHECK_FALSE(Rooted(c, {"main", "cold"}).ok());
  FilterSpec spec;
  CHECK(ParseCallPath("main;run;cold", &spec).ok());
  CHECK(spec.focus_path == path);
  CHECK(JoinCallPath(spec.focus_path) == "main;run;cold");
  CHECK_FALSE(ParseCallPath("main;;cold", &spec).ok());
  CHECK_FALSE(ParseCallPath("", &spec).ok());
}
