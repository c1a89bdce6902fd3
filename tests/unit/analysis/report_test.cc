#include <doctest.h>

#include "analysis/report.h"
#include "capture/reader.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::analysis;

namespace {

ReportModel Build(const capture::Capture& c, const ReportQuery& q,
                  const capture::Capture* other = nullptr) {
  Result<ReportModel> m = BuildReport(c, q, other);
  REQUIRE(m.ok());
  return std::move(m).value();
}

std::vector<std::string> Names(const ReportFlat& flat, const std::vector<uint32_t>& shown) {
  std::vector<std::string> out;
  for (uint32_t i : shown) out.push_back(flat.rows[i].name);
  return out;
}

// Pre-order "name@depth" of a pruned tree.
void Walk(const ReportTree& t, uint32_t n, int depth, std::vector<std::string>* out) {
  out->push_back(t.nodes[n].function.name + "@" + std::to_string(depth));
  for (uint32_t c : t.nodes[n].children) Walk(t, c, depth + 1, out);
}
std::vector<std::string> Walk(const ReportTree& t) {
  std::vector<std::string> out;
  for (uint32_t r : t.roots) Walk(t, r, 0, &out);
  return out;
}

}  // namespace

// main > run > {hot x7, cold x3}: flat rows hot 7/7, cold 3/3, main 0/10, run 0/10.
TEST_CASE("Report: flat tables show the top rows by self and by total, up to empty ones") {
  auto c = testing::MakeTestCapture();
  ReportModel m = Build(c, {});
  REQUIRE(m.flat.rows.size() == 4);
  CHECK(m.flat.all.samples == 10);
  CHECK(m.flat.all.percent == doctest::Approx(100));
  CHECK(m.flat.rows[0].name == "hot");
  CHECK(m.flat.rows[0].module == "app");
  CHECK(m.flat.rows[0].self.percent == doctest::Approx(70));
  // By self: main and run have no self samples, so the table stops at cold.
  CHECK(Names(m.flat, m.flat.by_self) == std::vector<std::string>{"hot", "cold"});
  // By total: ties keep the by-self order (main before run, by name).
  CHECK(Names(m.flat, m.flat.by_total) == std::vector<std::string>{"main", "run", "hot", "cold"});
  ReportQuery q;
  q.top = 3;
  m = Build(c, q);
  CHECK(m.flat.rows.size() == 4);  // every row is in the model; the tables show the top
  CHECK(Names(m.flat, m.flat.by_total) == std::vector<std::string>{"main", "run", "hot"});
}

TEST_CASE("Report: trees drop nodes under min-percent with their subtrees") {
  auto c = testing::MakeTestCapture();
  ReportQuery q;
  q.views.tree = true;
  q.views.inverted = true;
  q.min_percent = 50;
  ReportModel m = Build(c, q);
  REQUIRE(m.tree);
  REQUIRE(m.inverted);
  CHECK_FALSE(m.tree->inverted);
  CHECK(m.inverted->inverted);
  CHECK(m.min_percent == 50);
  CHECK(Walk(*m.tree) == std::vector<std::string>{"main@0", "run@1", "hot@2"});
  // The inverted tree's roots still add up to the whole: cold's 30% is one
  // root for what pruning left out.
  CHECK(Walk(*m.inverted) ==
        std::vector<std::string>{"hot@0", "run@1", "main@2", std::string(kPrunedNode) + "@0"});
  double roots = 0;
  for (uint32_t r : m.inverted->roots) roots += m.inverted->nodes[r].function.total.percent;
  CHECK(roots == doctest::Approx(100));
  const ReportTreeNode& other = m.inverted->nodes[m.inverted->roots.back()];
  CHECK(other.pruned);
  CHECK(other.function.self.percent == doctest::Approx(30));
  CHECK(m.tree->roots.size() == 1);  // nothing left out of the caller tree's roots
  q.min_percent = 0;                 // nothing pruned (a stack no sample ended in makes no node)
  m = Build(c, q);
  CHECK(Walk(*m.tree) == std::vector<std::string>{"main@0", "run@1", "hot@2", "cold@2"});
  const ReportFunction& run = m.tree->nodes[m.tree->nodes[m.tree->roots[0]].children[0]].function;
  CHECK(run.total.percent == doctest::Approx(100));
  CHECK(run.self.percent == 0);
}

TEST_CASE("Report: the metric is chosen, defaulted and refused with the capture's name") {
  auto c = testing::MakeOffCpuCapture();
  ReportQuery q;
  CHECK(Build(c, q).header.metric == Metric::kCpu);
  CHECK(Build(c, q).flat.all.value == 10000);
  CHECK(Build(c, q).header.show_metric);  // off-CPU time to choose from
  q.metric = Metric::kOffCpu;
  ReportModel off = Build(c, q);
  CHECK(off.header.summary.metric == "offcpu");
  // Every off-CPU nanosecond: intervals 390 + 70 + 300 + 300, short 50 + 8.
  CHECK(off.flat.all.value == 1118);
  q.metric = Metric::kWall;
  CHECK(Build(c, q).flat.all.value == 10000 + 1118);
  auto samples_only = testing::MakeTestCapture();
  CHECK_FALSE(Build(samples_only, {}).header.show_metric);
  c.samples = {};
  CHECK(Build(c, {}).header.metric == Metric::kOffCpu);
  q.metric = Metric::kOffCpu;
  q.capture_name = "run.mscap";
  auto refused = BuildReport(samples_only, q);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().rfind("run.mscap: --metric offcpu: ", 0) == 0);
}

TEST_CASE("Report: the views asked for; the flat tables when none, or a syscall-only capture") {
  auto c = testing::MakeTestCapture();
  ReportModel m = Build(c, {});
  CHECK(m.show_flat);
  CHECK_FALSE(m.tree);
  CHECK_FALSE(m.threads);
  CHECK_FALSE(m.lanes);
  CHECK_FALSE(m.syscalls);
  ReportQuery q;
  q.views.threads = true;
  m = Build(c, q);
  CHECK_FALSE(m.show_flat);
  REQUIRE(m.threads);
  REQUIRE(m.threads->size() == 1);
  CHECK((*m.threads)[0].name == "app");
  CHECK((*m.threads)[0].cost.percent == doctest::Approx(100));
  q.views.flat = true;
  CHECK(Build(c, q).show_flat);
  q = {};
  q.views.by_state = true;  // a table of its own, beside the flat ones
  CHECK(Build(c, q).show_flat);
  c.samples = {};
  c.syscalls.time = {20};
  c.syscalls.duration = {5};
  c.syscalls.thread = {0};
  c.syscalls.nr = {0};
  c.syscalls.ret = {-2};
  c.syscalls.arg0 = c.syscalls.arg1 = c.syscalls.arg2 = {0};
  c.syscalls.stack = {2};
  m = Build(c, {});
  CHECK_FALSE(m.show_flat);
  REQUIRE(m.syscalls);
  REQUIRE(m.syscalls->slowest.size() == 1);
  const ReportSlowCall& s = m.syscalls->slowest[0];
  CHECK(s.errno_name == "ENOENT");
  CHECK(s.thread_name == "app");
  CHECK(s.since_start_ns == 10);
  REQUIRE(s.stack.size() == 3);
  CHECK(s.stack[0].name == "hot");  // innermost first
  CHECK(s.stack[2].name == "main");
}

TEST_CASE("Report: the filter is described, applied, and its errors name the capture") {
  auto c = testing::MakeTestCapture();
  ReportQuery q;
  q.filter.focus = "^cold$";
  q.filter_text = "focus /^cold$/";
  ReportModel m = Build(c, q);
  CHECK(m.header.filter_text == "focus /^cold$/");
  CHECK(m.flat.all.samples == 3);
  CHECK(m.header.summary.samples == 10);  // the header counts the whole capture
  q.filter = {};
  q.filter.thread = "nope";
  q.capture_name = "run.mscap";
  auto refused = BuildReport(c, q);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "run.mscap: no thread 'nope' in the capture");
}

TEST_CASE("Report: diff tables show the top rows while their change shows") {
  auto base = testing::MakeTestCapture();
  auto other = testing::MakeTestCapture();
  for (size_t i = 0; i < other.samples.size(); ++i) other.samples.stack[i] = 3;  // all cold
  ReportQuery q;
  ReportModel m = Build(base, q, &other);
  REQUIRE(m.diff);
  CHECK_FALSE(m.show_flat);
  // hot -70%, cold +70%; main and run stay at 100%: rows, but not shown.
  CHECK(m.diff->self.rows.size() == 4);
  CHECK(m.diff->self.shown == 2);
  CHECK(m.diff->total.shown == 2);
  q.top = 1;
  CHECK(Build(base, q, &other).diff->self.shown == 1);
  other.settings.unit = "bytes";
  CHECK_FALSE(BuildReport(base, q, &other).ok());
  // The other capture has no off-CPU time to measure: its name says which.
  auto off = testing::MakeOffCpuCapture();
  q.metric = Metric::kOffCpu;
  q.other_name = "before.mscap";
  auto refused = BuildReport(off, q, &base);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().rfind("before.mscap: --metric offcpu", 0) == 0);
}

TEST_CASE("Report: off-CPU by state names threads and shows the top rows") {
  auto c = testing::MakeOffCpuCapture();
  ReportQuery q;
  q.views.by_state = true;
  q.top = 2;
  ReportModel m = Build(c, q);
  REQUIRE(m.by_state);
  const ReportOffCpu& o = *m.by_state;
  CHECK(o.totals.total_ns() == 1118);
  CHECK(o.states[uint8_t(capture::OffCpuState::kSleeping)].total_ns == 390 + 70 + 50);
  // worker sleeping 390, worker preempted 308, app uninterruptible 300, app sleeping 120.
  REQUIRE(o.threads.size() == 4);
  CHECK(o.shown_threads == 2);
  CHECK(o.threads[0].name == "worker");
  CHECK(o.threads[0].tid == 101);
  CHECK(o.threads[0].state == capture::OffCpuState::kSleeping);
  CHECK(o.threads[0].total.percent == doctest::Approx(100.0 * 390 / 1118));
  CHECK(o.threads[1].state == capture::OffCpuState::kPreempted);
  CHECK(o.totals.by_thread_state.empty());  // one copy: the named rows above
  // The header's off-CPU lines are unfiltered and shown for a capture that traced it.
  CHECK(m.header.show_off_cpu);
  CHECK(m.header.off_cpu.totals.intervals == 4);
  CHECK_FALSE(Build(testing::MakeTestCapture(), {}).header.show_off_cpu);
}

TEST_CASE("Report: lanes name their threads, their peak and what each column shows") {
  auto c = testing::MakeOffCpuCapture();
  ReportQuery q;
  q.views.lanes = true;
  q.lane_width = 10;
  ReportModel m = Build(c, q);
  REQUIRE(m.lanes);
  CHECK(m.lanes->any_off_cpu);
  REQUIRE(m.lanes->lanes.size() == 2);
  const ReportLane& app = m.lanes->lanes[0];  // the one with samples first
  CHECK(app.name == "app");
  CHECK(app.total == 10);
  REQUIRE(app.cells.size() == 10);
  // Columns of 99 ns from 10: samples at 100..108 in the first, 109 in the second.
  CHECK(m.lanes->peak == 9);
  CHECK(app.buckets[0] == 9);
  CHECK(app.cells[0] == LaneCell::kSleeping);  // [20,90) off CPU: more than half of it
  CHECK(app.cells[1] == LaneCell::kOnCpu);
  CHECK(m.lanes->lanes[1].name == "worker");
  CHECK(m.lanes->lanes[1].cells[0] == LaneCell::kSleeping);
}

TEST_CASE("Report: -n is rows per table for the threads and lanes too, with every row kept") {
  auto c = testing::MakeOffCpuCapture();
  ReportQuery q;
  q.views.threads = true;
  q.views.lanes = true;
  q.metric = Metric::kOffCpu;  // both threads have off-CPU time
  q.top = 1;
  ReportModel m = Build(c, q);
  REQUIRE(m.threads);
  CHECK(m.threads->size() == 2);  // the JSON lists all
  CHECK(m.shown_threads == 1);
  REQUIRE(m.lanes);
  CHECK(m.lanes->lanes.size() == 2);
  CHECK(m.lanes->shown == 1);
  q.top = 20;
  m = Build(c, q);
  CHECK(m.shown_threads == 2);
  CHECK(m.lanes->shown == 2);
}

TEST_CASE("Report: the header names a few processes, the target first, then by samples") {
  auto c = testing::MakeTestCapture();
  for (int32_t pid = 200; pid < 210; ++pid) c.processes.push_back({pid, 100, 5, 0, 10, 1000});
  REQUIRE(capture::ValidateCapture(c).ok());
  auto shown = [](const ReportModel& m) {
    std::vector<int32_t> pids;
    for (uint32_t i : m.header.shown_processes) pids.push_back(m.header.summary.processes[i].pid);
    return pids;
  };
  // pid 100 has the samples; the others none, in pid order.
  CHECK(shown(Build(c, {})) == std::vector<int32_t>{100, 200, 201, 202, 203});
  c.settings.target_pid = 205;
  CHECK(shown(Build(c, {})) == std::vector<int32_t>{205, 100, 200, 201, 202});
}

TEST_CASE("Report: kernel frames as recorded, or as found in an imported file's stacks") {
  auto c = testing::MakeOffCpuCapture();  // holds a kernel frame (schedule)
  CHECK(Build(c, {}).header.kernel_frames == "off");
  c.settings.kernel_frames = true;
  CHECK(Build(c, {}).header.kernel_frames == "on");
  c.settings.mode = "import";
  CHECK(Build(c, {}).header.kernel_frames == "in the imported stacks");
  auto folded = testing::MakeTestCapture();
  folded.settings.mode = "import";
  CHECK(Build(folded, {}).header.kernel_frames == "unknown (imported)");
  // stackcollapse-perf marks kernel functions "_[k]".
  folded.strings[folded.functions[3].name] = "do_syscall_64_[k]";
  CHECK(Build(folded, {}).header.kernel_frames == "in the imported stacks");
}

TEST_CASE("Report: tables say what their rows are and what their counts count") {
  auto c = testing::MakeOffCpuCapture();
  ReportModel m = Build(c, {});
  CHECK(m.nouns.row == "function");
  CHECK(m.nouns.rows == "functions");
  CHECK(m.nouns.counts == "samples");
  ReportQuery q;
  q.granularity = Granularity::kLine;
  q.metric = Metric::kOffCpu;
  m = Build(c, q);
  CHECK(m.nouns.rows == "lines");
  CHECK(m.nouns.counts == "intervals");
  q.granularity = Granularity::kAddress;
  q.metric = Metric::kWall;
  m = Build(c, q);
  CHECK(m.nouns.row == "address");
  CHECK(m.nouns.rows == "addresses");
  CHECK(m.nouns.counts == "samples and intervals");
}

TEST_CASE("Report: a cancelled query and a tree over its bound are errors, not partial models") {
  auto c = testing::MakeTestCapture();  // main > run > {hot, cold}
  ReportQuery q;
  q.views.tree = true;
  std::atomic<bool> cancel{false};
  q.cancel = Cancel(&cancel);
  q.max_tree_nodes = 4;
  CHECK(Build(c, q).tree->nodes.size() == 4);  // at the bound: answered
  q.max_tree_nodes = 6;
  q.views.inverted = true;
  CHECK(Build(c, q).inverted->nodes.size() == 6);  // hot>run>main, cold>run>main
  q.max_tree_nodes = 5;
  auto over = BuildReport(c, q);
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().code() == StatusCode::kTooLarge);
  CHECK(over.status().message().find("the inverted call tree has more than 5 nodes") == 0);
  // Pruned, the view is smaller: the bound holds for the tree built too.
  q.min_percent = 50;
  CHECK(BuildReport(c, q).status().code() == StatusCode::kTooLarge);
  q = {};
  q.cancel = Cancel(&cancel);
  cancel = true;
  auto cancelled = BuildReport(c, q);
  REQUIRE_FALSE(cancelled.ok());
  CHECK(cancelled.status().code() == StatusCode::kCancelled);
}

TEST_CASE("Cancel: read every kStride iterations") {
  std::atomic<bool> flag{true};
  Cancel cancel(&flag);
  CHECK(cancel());
  CHECK(cancel.At(0));
  CHECK_FALSE(cancel.At(1));
  CHECK(cancel.At(Cancel::kStride));
  CHECK_FALSE(Cancel()());
}
