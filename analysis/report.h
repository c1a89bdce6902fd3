// The report as a model: what `microscope report` shows, built once from a
// capture and a typed query, for every renderer (the terminal text in
// src/cli, the JSON in formats/report_json, a browser view). Every number,
// name, pruning decision and order a renderer shows is decided here; a
// renderer only lays the model out. Pure: no I/O, no clock.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/cancel.h"
#include "analysis/diff.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "analysis/lanes.h"
#include "analysis/markers.h"
#include "analysis/neighbors.h"
#include "analysis/profile.h"
#include "analysis/stack_chart.h"
#include "analysis/summary.h"
#include "analysis/traces.h"
#include "analysis/zones.h"
#include "base/status.h"
#include "capture/capture.h"

namespace microscope::analysis {

// Which views a report asks for. With none of them (and no diff), a report
// shows the flat tables.
struct ReportViews {
  bool flat = false;
  bool tree = false;
  bool inverted = false;
  bool threads = false;
  bool lanes = false;
  bool syscalls = false;
  bool by_state = false;     // off-CPU time per state and thread, and who woke each thread
  bool zones = false;        // the program's zones (probes): statistics per zone
  bool spans = false;        // imported traces' spans by name (microscope import)
  bool stack_chart = false;  // the busiest kept thread's samples in time order (serve's page)
  bool markers = false;      // zones, marks, labels, counters, off-CPU, calls, gaps over time
};

struct ReportQuery {
  std::optional<Metric> metric;  // none: DefaultMetric of the capture
  Granularity granularity = Granularity::kFunction;
  bool collapse_recursion = false;
  FilterSpec filter;
  // The filter as the user wrote it ("thread worker-a, focus /re/"), shown
  // with what it kept; empty when none.
  std::string filter_text;
  ReportViews views;
  double min_percent = 0.5;  // tree nodes below this share of the total are pruned
  size_t top = 20;           // rows per table
  size_t lane_width = 60;    // columns of the lanes timeline
  // Inlined calls as frames of their own (as pprof shows them), or folded
  // into the function that holds them (as perf report does).
  bool inlines = true;
  // Which frames of mixed Python and native stacks the views show.
  Look look = Look::kMixed;
  // Functions merged into their callers and modules collapsed to one frame
  // (analysis::Transformed), after the look.
  std::vector<std::string> merge, collapse;
  // A function whose source lines to cost (report --source); empty: none.
  std::string source;
  // A function whose machine code to cost by address (report --asm); empty: none.
  std::string assembly;
  // A function whose callers and callees to cost (serve's sidebar); empty: none.
  std::string neighbors;
  // How errors name the capture and the diff's other capture ("FILE: ...").
  std::string capture_name;
  std::string other_name;
  // Bounds for a query from someone untrusted (serve): set from another
  // thread, `cancel` makes BuildReport end with kCancelled; a call tree of
  // more than `max_tree_nodes` (built or shown; 0: no bound) is
  // kTooLarge.
  Cancel cancel;
  size_t max_tree_nodes = 0;
};

// Samples and value, and the value's share of its view's total in percent.
struct ReportCost {
  uint64_t samples = 0;
  uint64_t value = 0;
  double percent = 0;
};

// `c` with its value's share of `all`.
ReportCost Share(const Cost& c, uint64_t all);

struct ReportFunction {
  std::string name;
  std::string module;  // module file's base name, [unmapped], or empty for named frames
  ReportCost self;
  ReportCost total;
  std::string_view kind = "native";  // FunctionKeys::KindName
};

// All functions the filter kept, and the rows each flat table shows.
struct ReportFlat {
  ReportCost all;
  std::vector<ReportFunction> rows;  // by self value desc, then total, then name
  // Rows (indexes into `rows`) of the table by self: the top ones, up to
  // the first without self samples.
  std::vector<uint32_t> by_self;
  // Of the table by total: by total value desc (ties as in `rows`), the top
  // ones, up to the first without samples.
  std::vector<uint32_t> by_total;
};

// A call tree with the nodes under min_percent of the total pruned (and
// their subtrees with them).
struct ReportTreeNode {
  ReportFunction function;
  std::vector<uint32_t> children;  // by total value desc, then name
  bool pruned = false;             // the roots under min_percent, as one (kPrunedNode)
};

// The name of the root that stands for the roots pruning left out (last
// of the roots), so that the roots add up to the whole.
inline constexpr std::string_view kPrunedNode = "other (pruned)";

struct ReportTree {
  bool inverted = false;
  std::vector<ReportTreeNode> nodes;
  std::vector<uint32_t> roots;  // by total value desc, then name
};

struct ReportThread {
  int32_t tid;
  int32_t pid;
  std::string name;
  ReportCost cost;  // percent of the flat total
  // Samples walked in Python (labeled python.gil), and those holding the GIL.
  uint64_t gil_labeled = 0;
  uint64_t gil_held = 0;
  std::string isolate;  // V8's, numbered per process ("" when none)
  double GilHeldPercent() const {
    return gil_labeled > 0 ? 100.0 * double(gil_held) / double(gil_labeled) : 0;
  }
};

struct ReportLane {
  int32_t tid;
  int32_t pid = 0;  // its process's
  std::string name;
  uint64_t total = 0;  // samples
  std::vector<uint32_t> buckets;
  std::array<std::vector<uint64_t>, capture::kOffCpuStateCount> off_cpu;  // see analysis::Lane
  uint64_t off_cpu_ns = 0;
  std::vector<LaneCell> cells;  // what each column shows (CellOf)
  // The program's probes per column (empty when the capture has none):
  // the letter of the zone that held most of it ('a' is zone_names[0]; ' '
  // none; '+' past z), and '|' a mark, '*' a label set, '#' both (' ' none).
  std::string zones;
  std::string events;
  // Per column, a gap of this thread or its process (GapLetter; ' ' none).
  std::string gaps;
};

// A gap's letter in the lanes: L lost records, T throttled, B budget,
// W walker not yet on, S segment missing.
char GapLetter(capture::GapCause cause);

struct ReportLanes {
  size_t shown = 0;  // lanes a timeline draws: the first `top`
  uint64_t start = 0;
  uint64_t bucket_ns = 1;
  size_t bucket_count = 0;
  uint32_t peak = 1;         // the most samples in one bucket of any lane, at least 1
  bool any_off_cpu = false;  // some lane has off-CPU time
  std::vector<ReportLane> lanes;
  // With several processes, one per process (pid and tid its pid, name its command):
  // the samples of all its threads per column, in the order of its busiest
  // thread. Empty with one.
  std::vector<ReportLane> processes;
  std::vector<std::string> zone_names;  // the zones the lanes' letters stand for
  // Imported traces' tracks on the same columns (those placed on the
  // capture's clock), and the paths of those kept on their own axis.
  std::vector<TraceLane> trace_lanes;
  std::vector<std::string> own_axis_traces;
  // Gaps of every process (a CPU's lost records, the budget, a missing
  // segment) per column (GapLetter; ' ' none; empty when there are none),
  // and every gap as recorded, for views that draw them exactly.
  std::string gaps;
  std::vector<capture::Gap> gap_rows;
};

struct ReportOffCpuTotal {
  uint64_t intervals = 0;
  uint64_t shorts = 0;
  uint64_t total_ns = 0;
  double percent = 0;  // of all off-CPU time
};
// Whether a view lists state `s` with total `t`: the switch's states always,
// the 2.11 totals' only where the capture has them (capture.h).
inline bool ShownOffCpuState(uint8_t s, const ReportOffCpuTotal& t) {
  return s < capture::kOffCpuSwitchStates || t.intervals != 0 || t.shorts != 0 || t.total_ns != 0;
}

struct ReportOffCpuThread {
  int32_t tid;
  std::string name;
  capture::OffCpuState state;
  ReportOffCpuTotal total;
};

struct ReportWakers {
  int32_t tid;
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  std::vector<Waker> wakers;  // at most `top`
};

// Off-CPU time (OffCpuSummary) with its threads named and its shares.
struct ReportOffCpu {
  OffCpuSummary totals;  // counts only: by_thread_state and wakers are below, named
  std::array<ReportOffCpuTotal, capture::kOffCpuStateCount> states;
  std::vector<ReportOffCpuThread> threads;  // by total desc, then tid, then state
  std::vector<ReportWakers> wakers;         // by time woken desc, then tid
  size_t shown_threads = 0;                 // rows of `threads` a table shows (top)
  size_t shown_wakers = 0;                  // likewise of `wakers`
};

struct ReportFrame {
  std::string name;
  std::string module;
};

struct ReportSyscallRow {
  uint32_t nr = 0;
  std::string name;
  uint64_t calls = 0;
  uint64_t errors = 0;
  uint64_t total_ns = 0;
  uint64_t mean_ns = 0;
  uint64_t max_ns = 0;
  double percent = 0;  // of the time in all calls
};

struct ReportSlowCall {
  std::string name;
  int32_t tid;
  std::string thread_name;
  uint64_t time = 0;
  uint64_t since_start_ns = 0;  // time after the recording's start
  uint64_t duration_ns = 0;
  int64_t ret = 0;
  std::string errno_name;          // empty: not an error
  std::vector<ReportFrame> stack;  // innermost first
};

struct ReportSyscalls {
  uint64_t calls = 0;
  uint64_t errors = 0;
  uint64_t total_ns = 0;
  std::vector<ReportSyscallRow> rows;   // by total time, longest first
  std::vector<ReportSlowCall> slowest;  // longest first, at most `top`
};

// One table of a diff: every row, and how many a table shows (the top
// ones, up to the first whose change rounds to 0.00%).
struct ReportDiffTable {
  std::vector<DiffRow> rows;  // by |delta| desc, then name
  size_t shown = 0;
};

struct ReportDiff {
  std::string metric;
  std::string unit;
  uint64_t base_total = 0;
  uint64_t other_total = 0;
  ReportDiffTable self;
  ReportDiffTable total;
  ReportDiffTable paths;           // the kept nodes of `tree`, each as its call path
  std::vector<DiffTreeNode> tree;  // both call trees merged, pruned at min_percent
  std::vector<uint32_t> roots;
  size_t pruned = 0;  // merged nodes left out
};

// The header's facts beyond the capture's summary.
struct ReportHeader {
  Summary summary;  // of the capture whose samples are the metric
  Metric metric = Metric::kCpu;
  ReportOffCpu off_cpu;       // unfiltered
  bool show_off_cpu = false;  // the capture traced off-CPU time, or tried to
  bool show_metric = false;   // off-CPU time to choose from, or a metric other than cpu
  double named_percent = 0;   // samples (intervals) with fully named stacks
  // Stacks that ended before their outermost frame (neither complete nor
  // at the end of a frame pointer chain), and the complete ones' share.
  uint64_t ended_early = 0;
  double complete_percent = 0;
  // Rows of summary.processes the header line names (at most a few): the
  // target process first, then by samples desc, then pid.
  std::vector<uint32_t> shown_processes;
  // Whether the stacks hold kernel frames: "on" or "off" as recorded; an
  // imported file does not say, so "in the imported stacks" when some frame
  // is a kernel one (kernel kind, or folded's "_[k]" mark), else "unknown
  // (imported)".
  std::string kernel_frames;
  std::string syscalls;  // the syscalls source's state: how system calls were traced
  uint64_t syscall_stack_min = 0;
  std::string filter_text;  // empty: no filter
};

// What the tables' rows and counts are, for their titles and headings.
struct ReportNouns {
  std::string row = "function";  // a row's key at the granularity: function, line, address
  std::string rows = "functions";
  // What a table's counts (self, total, a thread's) count: "samples" of
  // CPU, off-CPU "intervals" (--metric offcpu), or "samples and intervals"
  // (wall).
  std::string counts = "samples";
};

// One source line of a function and what it cost: self, samples whose
// innermost frame is the function at that line; total, samples with a
// frame of the function at that line anywhere on their stack (once each).
struct ReportSourceLine {
  uint32_t line = 0;
  ReportCost self;
  ReportCost total;
};

struct ReportSourceFile {
  std::string path;                     // as the capture names it
  std::vector<ReportSourceLine> lines;  // by line
  ReportCost total;                     // samples with the function at a line of this file
  // The file's lines around the costed ones, read where the report is
  // shown (formats/source_text: analysis reads no file): text[0] is line
  // `first`; empty, with `unreadable` saying why, when the file is not
  // there to read.
  uint32_t first = 0;
  std::vector<std::string> text;
  std::string unreadable;
};

// Where in its source a function's time went (report --source).
struct ReportSource {
  std::string function;
  ReportCost total;                     // samples with the function on their stack
  ReportCost without_lines;             // ... of which its frame had no source line
  std::vector<ReportSourceFile> files;  // by total, most first
};

// One address of a function's machine code and what it cost there: self,
// samples whose leaf frame was at it; total, samples with a frame at it
// (a caller's frame is at its call instruction).
struct ReportAddressCost {
  uint64_t offset = 0;  // in the module's file
  ReportCost self;
  ReportCost total;
};

// One machine instruction of the function, with its costs.
struct ReportInstruction {
  uint64_t address = 0;  // link-time (the module's own addresses, as objdump -d shows)
  uint32_t size = 0;
  std::string text;    // mnemonic and operands (AT&T syntax on x86-64, as objdump)
  std::string target;  // a direct call's or jump's target symbol, when the module names it
  ReportCost self;
  ReportCost total;
};

// One symbol's code holding costed addresses of the function (the
// function itself, or a part the compiler split off, as `f.cold`).
struct ReportAssemblyRange {
  std::string symbol;  // as the file names it, demangled
  uint64_t start = 0;  // its link-time address
  uint64_t size = 0;
  std::vector<ReportInstruction> instructions;
  uint64_t bytes_left_out = 0;  // past kMaxAssemblyBytes
};

// The function's code in one module.
struct ReportAssemblyModule {
  std::string path;      // as the capture names it
  std::string build_id;  // hex; empty when the capture has none
  ReportCost total;      // samples with the function of this module on their stack
  std::vector<ReportAddressCost> addresses;  // by offset
  // Read where the report is shown (formats/assembly_text): the symbols
  // holding the costed addresses, by address, or none with `unreadable`
  // saying why.
  std::vector<ReportAssemblyRange> ranges;
  // Costed addresses no range holds (no symbol there, or past the bytes
  // shown).
  ReportCost outside;
  std::string unreadable;
};

// Where in its machine code a function's time went (report --asm).
struct ReportAssembly {
  std::string function;
  ReportCost total;       // samples with the function on their stack
  ReportCost not_native;  // ... of which its frame was no module's machine code (kernel, inlined,
                          // interpreted)
  std::vector<ReportAssemblyModule> modules;  // by total, most first
};

struct ReportModel {
  ReportHeader header;
  ReportNouns nouns;
  bool show_flat = false;  // the flat tables are one of the views shown
  ReportFlat flat;         // always: the header's filter line and the JSON use it
  std::optional<ReportOffCpu> by_state;
  std::optional<ReportSyscalls> syscalls;
  std::optional<ReportZones> zones;
  // Imported traces (capture::Trace): always when the capture has some
  // (the header names them); their spans table with views.spans.
  std::optional<ReportTraces> traces;
  bool show_spans = false;
  std::optional<ReportTree> tree;
  std::optional<ReportTree> inverted;
  std::optional<std::vector<ReportThread>> threads;  // every thread; a table shows the first `top`
  size_t shown_threads = 0;
  std::optional<ReportLanes> lanes;
  std::optional<ReportDiff> diff;
  std::optional<ReportSource> source;
  std::optional<ReportAssembly> assembly;
  std::optional<StackChart> stack_chart;
  std::optional<Neighbors> neighbors;
  std::optional<Markers> markers;
  double min_percent = 0.5;  // the trees' pruning, for their titles
};

// The report of `capture` for `query`; with `other`, its diff against it
// (both captures measured in the same metric and filtered alike). Errors:
// a metric the capture cannot give, a filter that matches no thread or a
// bad regex, captures of different quantities.
Result<ReportModel> BuildReport(const capture::Capture& capture, const ReportQuery& query,
                                const capture::Capture* other = nullptr);

}  // namespace microscope::analysis
