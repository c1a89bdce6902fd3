#include <doctest.h>

#include <map>

#include "analysis/diff.h"
#include "analysis/filter.h"
#include "analysis/lanes.h"
#include "analysis/markers.h"
#include "analysis/neighbors.h"
#include "analysis/profile.h"
#include "analysis/stack_chart.h"
#include "analysis/summary.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::analysis;

namespace {
// main > run > {hot x7, cold x3}, in one thread named "app" (tid 100).
capture::Capture TestCapture() {
  return testing::MakeTestCapture();
}

uint64_t SelfOf(const Flat& f, const FunctionKeys& k, const std::string& name) {
  for (const auto& r : f.rows) {
    if (k.Name(r.key) == name) return r.self.samples;
  }
  return 0;
}

// The row named `name`, or null: a test REQUIREs it before checking it, so
// a missing row fails instead of passing unchecked.
const DiffRow* RowNamed(const std::vector<DiffRow>& rows, const std::string& name) {
  for (const DiffRow& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}
}  // namespace

TEST_CASE("Filter: focus keeps stacks through a function, exclude drops them") {
  auto c = TestCapture();
  FunctionKeys keys(c);
  FilterSpec spec;
  spec.focus = "^cold$";
  auto f = SampleFilter::Make(c, keys, spec);
  REQUIRE(f.ok());
  Flat flat = ComputeFlat(c, keys, *f);
  CHECK(flat.all.samples == 3);
  CHECK(SelfOf(flat, keys, "hot") == 0);
  spec = {};
  spec.exclude = "col";
  f = SampleFilter::Make(c, keys, spec);
  REQUIRE(f.ok());
  flat = ComputeFlat(c, keys, *f);
  CHECK(flat.all.samples == 7);
  spec.exclude = "([";
  CHECK_FALSE(SampleFilter::Make(c, keys, spec).ok());
}

TEST_CASE("Filter: regexes match in linear time, and too large ones are refused by name") {
  auto c = TestCapture();
  // "hot" renamed to 200,000 characters of words: a backtracking engine
  // takes exponential time on these patterns against it.
  std::string name;
  while (name.size() < 200000) name += "abcdefgh ";
  name += "!";
  for (std::string& s : c.strings) {
    if (s == "hot") s = name;
  }
  FunctionKeys keys(c);
  // Each against every name: 0 samples kept but for the one that matches
  // "main" (all 10); none of them takes the long name's backtracking.
  const std::pair<const char*, uint64_t> patterns[] = {
      {"(.*.*)*QQQ", 0}, {"^(\\w+\\s?)*$", 10}, {"(a|aa)+$", 0}, {"(x+x+)+y", 0}};
  for (const auto& [pattern, kept] : patterns) {
    FilterSpec spec;
    spec.focus = pattern;
    auto f = SampleFilter::Make(c, keys, spec);
    REQUIRE(f.ok());
    CHECK(ComputeFlat(c, keys, *f).all.samples == kept);
  }
  FilterSpec spec;
  spec.focus = "^(\\w+\\s?)*!$";
  CHECK(ComputeFlat(c, keys, *SampleFilter::Make(c, keys, spec)).all.samples == 7);
  // RE2's syntax: a backreference or lookaround is an error naming the option.
  spec.focus = "(a)\\1";
  auto back = SampleFilter::Make(c, keys, spec);
  REQUIRE_FALSE(back.ok());
  CHECK(back.status().message().find("--focus '(a)\\1' is not a valid regex") == 0);
  CHECK(back.status().message().find("no backreferences or lookaround") != std::string::npos);
  spec = {};
  spec.exclude = "a(?=b)";
  CHECK(SampleFilter::Make(c, keys, spec).status().message().find("--exclude") == 0);
  // Over 4 KiB of pattern, or a program over RE2's memory bound.
  spec = {};
  spec.focus = std::string(5000, 'a');
  CHECK(SampleFilter::Make(c, keys, spec).status().message().find("longer than 4096") !=
        std::string::npos);
  spec.focus = "(\\pL{100}){10}";
  auto large = SampleFilter::Make(c, keys, spec);
  REQUIRE_FALSE(large.ok());
  CHECK(large.status().message().find("--focus") == 0);
  CHECK(large.status().message().find("MiB") != std::string::npos);
}

TEST_CASE("Filter: thread by name or tid, pid, and time range relative to the start") {
  auto c = TestCapture();
  FunctionKeys keys(c);
  FilterSpec spec;
  spec.thread = "app";
  CHECK(ComputeFlat(c, keys, *SampleFilter::Make(c, keys, spec)).all.samples == 10);
  spec.thread = "100";
  CHECK(ComputeFlat(c, keys, *SampleFilter::Make(c, keys, spec)).all.samples == 10);
  spec.thread = "nope";
  auto missing = SampleFilter::Make(c, keys, spec);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "no thread 'nope' in the capture");
  spec = {};
  // Samples are at times 100..109; the capture starts at 10.
  REQUIRE(ParseTimeRange("90ns..94ns", &spec).ok());
  CHECK(ComputeFlat(c, keys, *SampleFilter::Make(c, keys, spec)).all.samples == 5);
  CHECK_FALSE(ParseTimeRange("5s", &spec).ok());
  CHECK_FALSE(ParseTimeRange("3s..1s", &spec).ok());
  // The same grammar as record's options: hours and microseconds too.
  spec = {};
  REQUIRE(ParseTimeRange("1h..2h", &spec).ok());
  CHECK(*spec.from_ns == 3600000000000ull);
  CHECK(*spec.to_ns == 7200000000000ull);
  spec = {};
  REQUIRE(ParseTimeRange("..500us", &spec).ok());
  CHECK(*spec.to_ns == 500000ull);
  CHECK_FALSE(ParseTimeRange("1x..2s", &spec).ok());
}

TEST_CASE("Tree: inverted puts sampled functions first, then their callers") {
  auto c = TestCapture();
  FunctionKeys keys(c);
  CallTree t = ComputeTree(c, keys, {}, {true, false});
  REQUIRE(t.roots.size() == 2);
  const TreeNode& hot = t.nodes[t.roots[0]];
  CHECK(keys.Name(hot.key) == "hot");
  CHECK(hot.self.samples == 7);
  REQUIRE(hot.children.size() == 1);
  CHECK(keys.Name(t.nodes[hot.children[0]].key) == "run");
  CHECK(t.nodes[hot.children[0]].total.samples == 7);
}

TEST_CASE("Tree: collapsing recursion merges a function's self-calls") {
  auto c = TestCapture();
  // main > run > run > hot for the first sample.
  c.stacks.parent.push_back(1);
  c.stacks.frame.push_back(1);
  c.stacks.parent.push_back(5);
  c.stacks.frame.push_back(2);
  c.samples.stack[0] = 6;
  FunctionKeys keys(c);
  CallTree plain = ComputeTree(c, keys);
  CallTree collapsed = ComputeTree(c, keys, {}, {false, true});
  CHECK(plain.nodes.size() == collapsed.nodes.size() + 2);
  REQUIRE(collapsed.roots.size() == 1);
  const TreeNode& main = collapsed.nodes[collapsed.roots[0]];
  REQUIRE(main.children.size() == 1);
  const TreeNode& run = collapsed.nodes[main.children[0]];
  REQUIRE_FALSE(run.children.empty());
  CHECK(keys.Name(run.key) == "run");
  for (uint32_t ch : run.children) CHECK(keys.Name(collapsed.nodes[ch].key) != "run");
}

TEST_CASE("Keys: address granularity keeps frames of one function apart") {
  auto c = TestCapture();
  c.frames.push_back({capture::FrameKind::kNative, 0, 0x44, 2});  // a second address in hot
  c.stacks.parent.push_back(1);
  c.stacks.frame.push_back(5);
  c.samples.stack[0] = 5;
  FunctionKeys by_fn(c), by_addr(c, Granularity::kAddress);
  CHECK(ComputeFlat(c, by_fn).rows.size() == 4);
  CHECK(ComputeFlat(c, by_addr).rows.size() == 5);
  CHECK(by_addr.Name(by_addr.KeyOf(5)) == "hot @0x44");
}

TEST_CASE("Lanes: samples per thread per time bucket") {
  auto c = TestCapture();
  Lanes lanes = ComputeLanes(c, {}, 10);
  REQUIRE(lanes.lanes.size() == 1);
  uint64_t sum = 0;
  for (uint32_t b : lanes.lanes[0].buckets) sum += b;
  CHECK(sum == 10);
  CHECK(lanes.lanes[0].total == 10);
  CHECK(lanes.bucket_count == 10);
}

TEST_CASE("Diff: shares per function and path; different quantities are refused") {
  auto base = TestCapture();
  auto other = TestCapture();
  // other: all ten samples in cold.
  for (size_t i = 0; i < other.samples.size(); ++i) other.samples.stack[i] = 3;
  auto d = Diff(base, other);
  REQUIRE(d.ok());
  REQUIRE_FALSE(d->self.empty());
  const DiffRow& top = d->self[0];
  CHECK((top.name == "cold" || top.name == "hot"));
  const DiffRow* hot = RowNamed(d->self, "hot");
  const DiffRow* cold = RowNamed(d->self, "cold");
  REQUIRE(hot != nullptr);
  REQUIRE(cold != nullptr);
  CHECK(hot->delta() == doctest::Approx(-0.7));
  CHECK(cold->delta() == doctest::Approx(0.7));
  const DiffRow* path = RowNamed(d->paths, "main;run;cold");
  REQUIRE(path != nullptr);
  CHECK(path->other_share == doctest::Approx(1.0));
  other.settings.metric = "alloc_space";
  other.settings.unit = "bytes";
  auto refused = Diff(base, other);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("different quantities") != std::string::npos);
}

TEST_CASE("ThreadTotals and aggregated rows (samples.count)") {
  auto c = TestCapture();
  c.samples.count.assign(c.samples.size(), 2);
  auto t = ThreadTotals(c, {});
  REQUIRE(t.size() == 1);
  CHECK(t[0].samples == 20);
  CHECK(Summarize(c).samples == 20);
}

TEST_CASE("Stack chart: a thread's samples in time order, one run per stack while it lasts") {
  auto c = TestCapture();  // hot at 100..106, cold at 107..109 (start 10), 1000 ns each
  FunctionKeys keys(c);
  StackChart chart = ComputeStackChart(c, keys, SampleFilter(), 100);
  CHECK(chart.tid == 100);
  CHECK(chart.thread == "app");
  CHECK(chart.thread_samples == 10);
  CHECK(chart.threads == 1);
  REQUIRE(chart.runs.size() == 2);
  // hot's samples overlap (each covers 1000 ns): one run, ended where cold begins.
  CHECK(chart.runs[0].start == 90);
  CHECK(chart.runs[0].end == 97);
  CHECK(chart.runs[0].samples == 7);
  CHECK(chart.runs[1].start == 97);
  CHECK(chart.runs[1].end == 99 + 1000);
  CHECK(chart.runs[1].samples == 3);
  auto names = [&](const StackChartRun& r) {
    std::vector<std::string> out;
    for (uint32_t n : chart.stacks[r.stack]) out.push_back(chart.names[n]);
    return out;
  };
  CHECK(names(chart.runs[0]) == std::vector<std::string>{"main", "run", "hot"});
  CHECK(names(chart.runs[1]) == std::vector<std::string>{"main", "run", "cold"});
  CHECK_FALSE(chart.truncated);
  // A filter keeps its samples only; past the bound, the first runs.
  FilterSpec spec;
  spec.focus = "^cold$";
  auto f = SampleFilter::Make(c, keys, spec);
  REQUIRE(f.ok());
  chart = ComputeStackChart(c, keys, *f, 100);
  REQUIRE(chart.runs.size() == 1);
  CHECK(chart.runs[0].samples == 3);
  chart = ComputeStackChart(c, keys, SampleFilter(), 1);
  CHECK(chart.runs.size() == 1);
  CHECK(chart.truncated);
  // A timer's samples come a little late or early: a sample after the run
  // by less than half its weight continues it; a longer gap (the thread
  // off CPU) ends it.
  c.samples.time = {100, 1100, 2150, 3100, 6000, 6950, 8000, 9000, 10000, 11000};
  chart = ComputeStackChart(c, keys, SampleFilter(), 100);
  REQUIRE(chart.runs.size() == 3);
  CHECK(chart.runs[0].start == 90);
  CHECK(chart.runs[0].end == 4090);  // 100 .. 3100 (+1000): 50 ns late, then 50 early
  CHECK(chart.runs[0].samples == 4);
  CHECK(chart.runs[1].start == 5990);  // after 1.9 us without a sample
  CHECK(chart.runs[1].end == 8990);    // where cold's first sample begins
  CHECK(chart.runs[1].samples == 3);
  CHECK(chart.runs[2].start == 8990);
  CHECK(chart.runs[2].end == 11990);
  c.samples.time = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109};
  // Samples next to each other but of the other metric's units last until
  // the next one.
  c.settings.unit = "events";
  chart = ComputeStackChart(c, keys, SampleFilter(), 100);
  REQUIRE(chart.runs.size() == 2);
  CHECK(chart.runs[0].end == 97);
  CHECK(chart.runs[1].end == 100);
}

TEST_CASE("Neighbors: a function's callers and callees with the cost of the samples they share") {
  auto c = TestCapture();  // main > run > {hot x7, cold x3}, 1000 ns each
  FunctionKeys keys(c);
  auto run = ComputeNeighbors(c, keys, SampleFilter(), "run", 10);
  REQUIRE(run);
  CHECK(run->self.samples == 0);
  CHECK(run->total.samples == 10);
  CHECK(run->total.value == 10000);
  REQUIRE(run->callers.size() == 1);
  CHECK(run->callers[0].name == "main");
  CHECK(run->callers[0].cost.samples == 10);
  REQUIRE(run->callees.size() == 2);
  CHECK(run->callees[0].name == "hot");
  CHECK(run->callees[0].cost.samples == 7);
  CHECK(run->callees[1].name == "cold");
  CHECK(run->callees[1].cost.samples == 3);
  auto hot = ComputeNeighbors(c, keys, SampleFilter(), "hot", 1);
  REQUIRE(hot);
  CHECK(hot->self.samples == 7);
  CHECK(hot->callees.empty());
  run = ComputeNeighbors(c, keys, SampleFilter(), "run", 1);  // the first one only
  CHECK(run->callees.size() == 1);
  CHECK(run->more_callees == 1);
  CHECK_FALSE(ComputeNeighbors(c, keys, SampleFilter(), "nowhere", 10));
  // A function calling itself: each sample counts once, its own calls are
  // neither its callers nor its callees.
  c.stacks.parent.push_back(2);  // 5: main>run>hot>run
  c.stacks.frame.push_back(1);
  c.samples.stack[0] = 5;
  run = ComputeNeighbors(c, keys, SampleFilter(), "run", 10);
  CHECK(run->total.samples == 10);
  CHECK(run->self.samples == 1);
  REQUIRE(run->callers.size() == 2);  // main (10) and hot (1)
  CHECK(run->callers[0].cost.samples == 10);
  CHECK(run->callers[1].name == "hot");
  CHECK(run->callees[0].name == "hot");
  CHECK(run->callees[0].cost.samples == 7);
}

TEST_CASE("Markers: zones by depth, marks, labels, counters and time off CPU, over time") {
  auto c = testing::MakeProbeCapture();  // start 10: times below are after it
  Markers m = ComputeMarkers(c, SampleFilter(), 100);
  std::map<std::string, int> kinds;
  for (const Marker& r : m.rows) ++kinds[MarkerKindName(r.kind)];
  CHECK(kinds == std::map<std::string, int>{
                     {"zone", 5}, {"mark", 1}, {"label", 1}, {"counter", 1}, {"off-cpu", 4}});
  CHECK(m.total == 12);  // an end without its begin has no place
  CHECK(m.left_out == 0);
  auto find = [&](MarkerKind kind, const std::string& name, uint64_t start) -> const Marker* {
    for (const Marker& r : m.rows) {
      if (r.kind == kind && r.name == name && r.start == start) return &r;
    }
    return nullptr;
  };
  const Marker* parse = find(MarkerKind::kZone, "parse", 85);  // [95,104) inside request
  REQUIRE(parse != nullptr);
  CHECK(parse->end == 94);
  CHECK(parse->depth == 1);
  CHECK(parse->tid == 100);
  const Marker* open = find(MarkerKind::kZone, "parse", 200);  // never ended: to its thread's end
  REQUIRE(open != nullptr);
  CHECK(open->end == 990);
  CHECK(open->detail == "still open at its thread's end");
  const Marker* route = find(MarkerKind::kLabel, "route", 50);
  REQUIRE(route != nullptr);
  CHECK(route->end == 220);
  CHECK(route->detail == "/a");
  const Marker* depth = find(MarkerKind::kCounter, "depth", 185);
  REQUIRE(depth != nullptr);
  CHECK(depth->detail == "3.5");
  const Marker* woken = find(MarkerKind::kOffCpu, "off CPU", 10);  // [20,90) app
  REQUIRE(woken != nullptr);
  CHECK(woken->detail == "sleeping, woken by worker (101)");
  for (size_t i = 1; i < m.rows.size(); ++i) CHECK(m.rows[i - 1].start <= m.rows[i].start);
  // The worker's only, and those overlapping a range.
  FunctionKeys keys(c);
  FilterSpec spec;
  spec.thread = "worker";
  auto f = SampleFilter::Make(c, keys, spec);
  REQUIRE(f.ok());
  m = ComputeMarkers(c, *f, 100);
  for (const Marker& r : m.rows) CHECK(r.tid == 101);
  CHECK(m.rows.size() == 4);  // gen, request, two intervals off CPU
  spec = {};
  spec.from_ns = 300;  // after the start: 310 and on
  f = SampleFilter::Make(c, keys, spec);
  REQUIRE(f.ok());
  m = ComputeMarkers(c, *f, 100);
  // parse (open), [10,400) and [200,500) and [600,900) off CPU overlap it.
  CHECK(m.rows.size() == 4);
  // Past the bound, the longest.
  m = ComputeMarkers(c, SampleFilter(), 3);
  CHECK(m.total == 12);
  CHECK(m.left_out == 9);
  REQUIRE(m.rows.size() == 3);
  for (const Marker& r : m.rows) CHECK(r.end - r.start >= 300);
}
