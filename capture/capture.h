// The in-memory capture: the tables of schema.fbs as plain vectors.
// The recorder fills one and hands it to WriteCapture; ReadCapture returns
// one only after every index and cross-reference has been checked, so code
// above capture/ may index these tables without further checks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/column.h"
#include "capture/tables.h"

namespace microscope::capture {

// Dense row indexes. kNone marks an absent reference.
using StringId = uint32_t;
using ModuleId = uint32_t;
using ProcessId = uint32_t;
using ThreadId = uint32_t;
using FunctionId = uint32_t;
using FrameId = uint32_t;
using StackId = uint32_t;
inline constexpr uint32_t kNone = 0xFFFFFFFFu;
// Deeper stacks are refused by the reader (and never written): readers may
// walk a stack recursively.
inline constexpr uint32_t kMaxStackDepth = 4096;

enum class ModuleKind : uint8_t { kFile = 0, kKernel = 1, kVdso = 2, kAnonymous = 3 };
// The runtime whose interpreter a module is (Module.runtime). A value this
// reader does not know still marks an interpreter.
enum class Runtime : uint8_t { kNone = 0, kCPython = 1, kV8 = 2 };
// schema.fbs says what each kind's fields hold; kInterpreted frames keep
// the function's first line in `address`.
enum class FrameKind : uint8_t {
  kNative = 0,
  kKernel = 1,
  kUnmapped = 2,
  kNamed = 3,
  kInline = 4,
  kInterpreted = 5,
};
// Why a stack stops where it does (schema.fbs documents each value).
enum class StackEnd : uint8_t {
  kFramePointerEnd = 0,
  kKernelOnly = 1,
  kMaxDepth = 2,
  kEmpty = 3,
  kComplete = 4,
  kNoUnwindInfo = 5,
  kStackCopyExhausted = 6,
  kCfaOutsideCopy = 7,
  kBadReturnAddress = 8,
  kUnmappedPc = 9,
  kUnsupportedCfi = 10,
  kInExec = 11,  // (2.5) inside execve: the replaced program's pc, no stack
};
inline constexpr uint8_t kStackEndCount = 12;

const char* StackEndName(StackEnd end);

struct Segment {
  uint64_t offset = 0;  // file offset
  uint64_t vaddr = 0;   // link-time address of `offset`
  uint64_t size = 0;    // bytes in the file
};

struct Module {
  StringId path = kNone;
  std::vector<uint8_t> build_id;
  uint64_t size = 0;
  ModuleKind kind = ModuleKind::kFile;
  std::vector<Segment> segments;     // PT_LOAD, when the file was read at record time
  Runtime runtime = Runtime::kNone;  // (2.6) a runtime's interpreter: its frames are its own
};

struct Mapping {
  ProcessId process = kNone;
  ModuleId module = kNone;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  uint64_t time_start = 0;
  uint64_t time_end = 0;
};

struct Process {
  int32_t pid = 0;
  int32_t parent_pid = 0;
  StringId command = kNone;
  int32_t exit_status = -1;  // wait status as the shell shows it; -1 unknown
  uint64_t start_time = 0;
  uint64_t end_time = 0;
};

struct Thread {
  int32_t tid = 0;
  ProcessId process = kNone;
  StringId name = kNone;
  uint64_t start_time = 0;
  uint64_t end_time = 0;
};

struct Function {
  StringId name = kNone;  // demangled
  ModuleId module = kNone;
  StringId raw_name = kNone;  // the symbol as the file spells it, when it differs
};

struct Frame {
  FrameKind kind = FrameKind::kNative;
  ModuleId module = kNone;
  uint64_t address = 0;  // file offset (native), virtual address (kernel, unmapped)
  FunctionId function = kNone;
  StringId file = kNone;  // source file of the address, when DWARF lines were found
  uint32_t line = 0;
};

// Prefix tree of call stacks: node i is frames[i] called from node parent[i].
struct Stacks {
  std::vector<StackId> parent;
  std::vector<FrameId> frame;
  size_t size() const { return frame.size(); }
};

// The big table: its columns view the decompressed file when read.
// Columns (tables.h): time; thread; stack (kNone for a sample without
// frames); weight (in settings.unit: CPU nanoseconds for a recording); end;
// count (samples per row; empty: 1 each); cpu (the CPU it was taken on;
// empty: not known, as in older captures and imports).
struct Samples {
  MICROSCOPE_SAMPLES_COLUMNS(MICROSCOPE_VIEW_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_SAMPLES_COLUMNS)
  size_t size() const { return time.size(); }
  uint32_t CountAt(size_t i) const { return count.empty() ? 1 : count[i]; }
  uint32_t CpuAt(size_t i) const { return cpu.empty() ? kNone : cpu[i]; }
};

// System calls traced by BPF (syscalls.bpf.c), in start order. Columns
// (tables.h): time (entry, on the capture's clock); duration; thread; nr
// (the x86-64 system call number); ret (-errno on failure); arg0..arg2;
// stack (slow calls' stacks, kNone: none; empty: none at all).
struct Syscalls {
  MICROSCOPE_SYSCALLS_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_SYSCALLS_COLUMNS)
  size_t size() const { return time.size(); }
  StackId StackAt(size_t i) const { return stack.empty() ? kNone : stack[i]; }
};

// Why a thread was off CPU: its state at switch-out.
enum class OffCpuState : uint8_t {
  kSleeping = 0,         // S: waiting for an event (sleep, lock, I/O readiness)
  kUninterruptible = 1,  // D: waiting in the kernel (disk, page fault)
  kPreempted = 2,        // R: runnable, but the CPU went to another task
  kOther = 3,            // stopped, traced, ...
  // (2.11) Totals from the scheduler's own counts (record --level 0), not
  // from each switch: asleep or in an uninterruptible wait, not told
  // apart; and runnable, waiting on a run queue for a CPU (after a wakeup
  // or a preemption alike).
  kBlocked = 4,
  kRunnable = 5,
};
inline constexpr uint8_t kOffCpuStateCount = 6;
// The states every capture may have: views list these always, and the
// 2.11 totals' states (kBlocked, kRunnable) only where a capture has them,
// so that an earlier capture reads as it did.
inline constexpr uint8_t kOffCpuSwitchStates = 4;
const char* OffCpuStateName(OffCpuState state);

// OffCpu::flags bits.
inline constexpr uint8_t kOffCpuCutAtStart = 1;  // off CPU before the recording began
inline constexpr uint8_t kOffCpuCutAtEnd = 2;    // still off CPU at the end, or switch-in lost
inline constexpr uint8_t kOffCpuNoUserStack = 4;
inline constexpr uint8_t kOffCpuFlagsMask = 7;

// Intervals a target thread spent off CPU, in start order. Columns
// (tables.h): start; end; thread; stack (kNone: no frames); stack_end;
// state; waker_tid (0: unknown); waker_name; flags (kOffCpu* bits).
struct OffCpu {
  MICROSCOPE_OFF_CPU_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_OFF_CPU_COLUMNS)
  size_t size() const { return start.size(); }
};

// Intervals shorter than the off-cpu source's min_ns, counted per thread and
// state. Columns (tables.h): thread; state; count; total (ns).
struct OffCpuShort {
  MICROSCOPE_OFF_CPU_SHORT_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_OFF_CPU_SHORT_COLUMNS)
  size_t size() const { return thread.size(); }
};

// (2.6) Spans of a thread's samples that carried one value of a label.
// Columns (tables.h): thread; key; value; start (the first sample's time);
// end (the last sample's).
struct LabelSpans {
  MICROSCOPE_LABEL_SPANS_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_LABEL_SPANS_COLUMNS)
  size_t size() const { return thread.size(); }
};
// The label CPython's walker puts on each sample of a Python thread: whether
// it held its interpreter's GIL ("held") or not ("waiting" for it or
// running without it, "released").
inline constexpr std::string_view kGilLabel = "python.gil";
// The label the V8 walker puts on each walked sample: the number of the
// isolate the thread ran (1, 2, ... in the order a process's isolates were
// first seen; a worker thread runs its own).
inline constexpr std::string_view kV8IsolateLabel = "v8.isolate";

// (2.8) The program's own instrumentation (sdk/; schema.fbs says more).
using ProbeSiteId = uint32_t;
enum class ProbeKind : uint8_t { kZone = 1, kMark = 2, kLabel = 3, kCounter = 4 };
enum class ProbeOp : uint8_t {
  kBegin = 1,
  kEnd = 2,
  kMark = 3,
  kCounter = 4,
  kLabel = 5,
  kLabelClear = 6,
};
const char* ProbeKindName(ProbeKind kind);  // "zone", "mark", "label", "counter"
// The kind of site that records `op`.
ProbeKind ProbeOpKind(ProbeOp op);

// Columns (tables.h): kind; name; file (or kNone); line (0: unknown);
// module (or kNone: defined at run time).
struct ProbeSites {
  MICROSCOPE_PROBE_SITES_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_PROBE_SITES_COLUMNS)
  size_t size() const { return kind.size(); }
};

// Columns (tables.h): time; thread; site; op; value (a counter's; empty
// when no record is a counter); text (a label's value or kNone; empty when
// no record is a label).
struct ProbeRecords {
  MICROSCOPE_PROBE_RECORDS_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_PROBE_RECORDS_COLUMNS)
  size_t size() const { return time.size(); }
  double ValueAt(size_t i) const { return value.empty() ? 0.0 : value[i]; }
  StringId TextAt(size_t i) const { return text.empty() ? kNone : text[i]; }
};

// (2.10) The targets' own counters read as the recording ran (record
// --readings). Columns (tables.h): time; thread (kNone: not a thread's);
// scope (a cgroup's path, "system", or kNone for a thread's); key (the
// counter: kReading* below); value (as the kernel counts it, in the unit
// its key ends with).
struct Readings {
  MICROSCOPE_READINGS_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_READINGS_COLUMNS)
  size_t size() const { return time.size(); }
};
// A thread's /proc/PID/task/TID/schedstat: time on CPU, time waiting on a
// run queue (runnable, not running: other tasks, or its cgroup throttled),
// and how many times it was given a CPU; cumulative since it started.
inline constexpr std::string_view kReadingOnCpu = "sched.on_cpu_ns";
inline constexpr std::string_view kReadingRunDelay = "sched.run_delay_ns";
inline constexpr std::string_view kReadingTimeslices = "sched.timeslices";
// A cgroup's CPU controller (v1 cpu.cfs_*, cpu.stat; v2 cpu.max, cpu.stat):
// its quota and period (quota -1: none), periods elapsed, periods in
// which it was throttled, and the time it was throttled (cumulative).
inline constexpr std::string_view kReadingQuota = "cpu.quota_us";
inline constexpr std::string_view kReadingPeriod = "cpu.period_us";
inline constexpr std::string_view kReadingPeriods = "cpu.periods";
inline constexpr std::string_view kReadingThrottledPeriods = "cpu.throttled_periods";
inline constexpr std::string_view kReadingThrottled = "cpu.throttled_ns";
// Pressure stall information: the time some task (some) or every task
// (full) of the scope stalled on the resource (cumulative microseconds):
// "psi.cpu.some_us", "psi.memory.full_us", "psi.io.some_us", ...
inline constexpr std::string_view kReadingPressurePrefix = "psi.";

// (2.11) Another tool's trace imported onto the capture's timeline
// (schema.fbs says each field). Whole in itself: its strings and tracks are
// its own, and it names the capture's processes and threads by pid and tid.
enum class TraceEventKind : uint8_t { kSpan = 0, kInstant = 1, kCounter = 2 };
inline constexpr uint8_t kTraceEventKindCount = 3;
const char* TraceEventKindName(TraceEventKind kind);  // "span", "instant", "counter"
enum class TraceTrackKind : uint8_t {
  kThread = 0,   // a thread's spans and instants
  kDevice = 1,   // a device's stream (a GPU's kernels and copies)
  kAsync = 2,    // async spans, which need not nest on any thread
  kCounter = 3,  // one counter's values
  kProcess = 4,  // a process's own instants
};
inline constexpr uint8_t kTraceTrackKindCount = 5;
const char* TraceTrackKindName(TraceTrackKind kind);  // "thread", "device", ...

struct TraceTrack {
  std::string name;
  std::string group;
  TraceTrackKind kind = TraceTrackKind::kThread;
  std::string trace_pid;
  std::string trace_tid;
  int32_t pid = 0;  // the capture's process (0: none)
  int32_t tid = 0;  // and thread (0: none)
  std::string mapped_by;
  int32_t sort_index = 0;
  bool operator==(const TraceTrack&) const = default;
};

struct TraceEvents {
  MICROSCOPE_TRACE_EVENTS_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_TRACE_EVENTS_COLUMNS)
  size_t size() const { return start.size(); }
  uint32_t CategoryAt(size_t i) const { return category.empty() ? kNone : category[i]; }
  double ValueAt(size_t i) const { return value.empty() ? 0.0 : value[i]; }
  uint32_t ArgsAt(size_t i) const { return args.empty() ? kNone : args[i]; }
  uint32_t DepthAt(size_t i) const { return depth.empty() ? 0 : depth[i]; }
  uint64_t EndAt(size_t i) const { return start[i] + duration[i]; }
};

struct TraceFlows {
  MICROSCOPE_TRACE_FLOWS_COLUMNS(MICROSCOPE_VECTOR_MEMBER)
  MICROSCOPE_TABLE_VISITOR(MICROSCOPE_TRACE_FLOWS_COLUMNS)
  size_t size() const { return from.size(); }
};

// The clocks a trace's times can be placed by (Trace::clock).
inline constexpr std::string_view kTraceClockOwnAxis = "own-axis";

struct Trace {
  std::string path;
  std::string digest;
  std::string format;
  std::string tool;
  std::string clock;
  std::string clock_note;
  int64_t offset = 0;
  std::optional<uint64_t> uncertainty;
  uint64_t imported_at = 0;
  std::vector<std::string> notes;
  std::string device_properties;
  std::vector<std::string> strings;
  std::vector<TraceTrack> tracks;
  TraceEvents events;
  TraceFlows flows;
  uint64_t skipped = 0;

  bool OwnAxis() const { return clock == kTraceClockOwnAxis; }
  const std::string& str(uint32_t id) const {
    static const std::string kEmpty;
    return id == kNone ? kEmpty : strings[id];
  }
};

struct Problem {
  StringId kind = kNone;
  uint64_t count = 0;
  StringId example = kNone;
};

// (2.11) Why the recording does not know what happened in a window.
enum class GapCause : uint8_t {
  kLostRecords = 1,     // the kernel's ring was full: count records lost
  kThrottled = 2,       // the kernel throttled the sampling event
  kBudget = 3,          // the budget kept one sample in count
  kWalkerNotOn = 4,     // a runtime's walker was not yet on the process
  kSegmentMissing = 5,  // a continuous recording's segment is not there
  kNotAttached = 6,     // an attached process not yet sampled: its events not yet on
};
inline constexpr GapCause kLastGapCause = GapCause::kNotAttached;
// The cause in words, for every view.
inline std::string_view GapCauseName(GapCause cause) {
  switch (cause) {
    case GapCause::kLostRecords:
      return "lost records";
    case GapCause::kThrottled:
      return "throttled";
    case GapCause::kBudget:
      return "budget";
    case GapCause::kWalkerNotOn:
      return "walker not yet on";
    case GapCause::kSegmentMissing:
      return "segment missing";
    case GapCause::kNotAttached:
      return "not yet attached";
  }
  return "unknown";
}

struct Gap {
  uint64_t begin = 0, end = 0;
  uint32_t pid = 0;  // 0: every process
  uint32_t tid = 0;  // 0: every thread of pid
  int32_t cpu = -1;  // -1: every CPU
  GapCause cause = GapCause::kLostRecords;
  uint64_t count = 0;
  bool operator==(const Gap&) const = default;
};

// An event source the recording asked for (off-CPU time, system calls,
// a runtime walker): whether it ran, and its own settings. A new source
// needs no field here.
struct SourceSetting {
  std::string name;   // "off-cpu", "syscalls", ...
  std::string state;  // "on", or "off: why" (refused; the recording went on)
  std::vector<std::pair<std::string, uint64_t>> values;  // e.g. {"min_ns", 20000}
  uint64_t Value(std::string_view key) const {
    for (const auto& [k, v] : values) {
      if (k == key) return v;
    }
    return 0;
  }
};

// (2.9) A change the budget controller made (schema.fbs says each field).
struct BudgetStep {
  uint64_t time = 0;
  uint32_t level = 0;
  uint32_t frequency = 0;
  uint32_t stack_copy = 0;
  uint32_t measured_ppm = 0;
  std::string reason;
  bool operator==(const BudgetStep&) const = default;
};

struct Settings {
  std::string mode;  // "launch" or "attach"
  std::vector<std::string> command;
  int32_t target_pid = 0;
  uint32_t frequency = 0;
  std::string call_graph;
  uint32_t stack_copy = 0;
  bool kernel_frames = false;
  std::string host;
  std::string kernel_release;
  std::string clock;
  std::string recorder;
  uint64_t start_time = 0;
  uint64_t end_time = 0;
  uint64_t lost_records = 0;
  uint64_t lost_samples = 0;
  // Of lost_records, those of mappings, processes and threads (2.5; older
  // captures: not known).
  std::optional<uint64_t> lost_task_records;
  std::optional<uint64_t> ring_lost_records;  // (2.7) of lost_records, the perf rings' LOST records
  std::optional<uint64_t> kernel_lost_records;  // (2.7) the kernel's count of those
  uint64_t throttles = 0;
  uint64_t unthrottles = 0;
  std::vector<std::string> notes;
  std::string metric = "cpu";
  std::string unit = "nanoseconds";
  std::string symbols;                 // "now", "later" or "symbolize"; empty in older captures
  std::string boot_id;                 // the recording's boot: KASLR moves the kernel at each boot
  std::vector<SourceSetting> sources;  // in the order they started
  // (2.9) Wall-clock time at start_time (ns since the epoch); absent: not known.
  std::optional<uint64_t> realtime_start;
  // (2.9) "" the whole recording, "segment" (index from 1), "snapshot" or
  // "window" (a rolling recording's last).
  std::string part;
  uint64_t part_index = 0;
  std::string recording_id;  // shared by the parts of one recording
  // (2.9) --budget in millionths of one CPU (0: none), and its changes.
  uint32_t budget_ppm = 0;
  std::vector<BudgetStep> budget_steps;

  // The source named `name`, or null when the recording did not ask for it.
  const SourceSetting* Source(std::string_view name) const {
    for (const SourceSetting& s : sources) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
  // "" (not asked for), "on", or "off: why".
  std::string SourceState(std::string_view name) const {
    const SourceSetting* s = Source(name);
    return s != nullptr ? s->state : "";
  }
  // Adds the source, or replaces what was said of it.
  SourceSetting& SetSource(std::string name, std::string state) {
    for (SourceSetting& s : sources) {
      if (s.name == name) {
        s.state = std::move(state);
        return s;
      }
    }
    sources.push_back({std::move(name), std::move(state), {}});
    return sources.back();
  }
};

// The sources this recorder has, by the names their settings use.
inline constexpr std::string_view kOffCpuSource = "off-cpu";    // values: min_ns
inline constexpr std::string_view kSyscallSource = "syscalls";  // values: stack_min_ns
inline constexpr std::string_view kExitSource = "exits";        // every process's exit status
// Each runtime's source is named as the runtime (src/runtimes/runtime.h:
// "python", "node"); values: stacks (with interpreter frames),
// stacks_all_named, walks, frames, unknown_frames, walks_lost.
// values: modules (read), sites, records, dropped (2.8)
inline constexpr std::string_view kProbeSource = "probes";
// values: budget_ppm, kept, dropped (samples), and the recorder's own cost
// measured from its first period to its end: wall_ns, cpu_ns, bpf_ns,
// share_ppm; and from its fourth period on (once the controller had time to
// act): steady_share_ppm (2.9)
inline constexpr std::string_view kBudgetSource = "budget";

struct Capture {
  std::vector<std::string> strings;
  std::vector<Module> modules;
  std::vector<Mapping> mappings;
  std::vector<Process> processes;
  std::vector<Thread> threads;
  std::vector<Function> functions;
  std::vector<Frame> frames;
  Stacks stacks;
  Samples samples;
  Syscalls syscalls;
  OffCpu off_cpu;
  OffCpuShort off_cpu_short;
  LabelSpans labels;
  ProbeSites probe_sites;
  ProbeRecords probe_records;
  Readings readings;
  std::vector<Trace> traces;  // (2.11) other tools' traces, in the order imported
  std::vector<Gap> gaps;      // (2.11) in the order of their begin
  std::vector<Problem> problems;
  Settings settings;
  // The decompressed file that viewed columns point into (null when built).
  std::shared_ptr<const std::vector<uint8_t>> backing;

  const std::string& str(StringId id) const {
    static const std::string kEmpty;
    return id == kNone ? kEmpty : strings[id];
  }
};

}  // namespace microscope::capture
