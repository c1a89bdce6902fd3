#include "sql/tables.h"

#include <array>

#include "analysis/syscalls.h"
#include "base/hex.h"

namespace microscope::sql {

using capture::kNone;

void Out::Hex(uint64_t v) {
  Text(HexAddress(v));
}

namespace {

// A column whose cell is `body`, with `p` (the Part), `c` (its capture),
// `r` (the row) and `o` (the Out) in scope.
#define COL(name, type, unit, doc, ...)                                             \
  ColumnSpec {                                                                      \
    name, type, unit, doc, [](const Part& p, [[maybe_unused]] uint32_t r, Out& o) { \
      [[maybe_unused]] const capture::Capture& c = p.capture;                       \
      __VA_ARGS__;                                                                  \
    }                                                                               \
  }
#define CAPTURE_COL \
  COL("capture", "INTEGER", "", "the capture (captures.capture) the row is from", o.Int(p.index))
#define ID_COL(kind, what) \
  COL("id", "INTEGER", "", what " id, unique across the query's captures", o.Id(p, kind, r))

void Str(const Part& p, capture::StringId id, Out& o) {
  if (id == kNone) return o.Null();
  o.Text(p.capture.strings[id]);
}
void Tid(const Part& p, capture::ThreadId t, Out& o) {
  o.Int(p.capture.threads[t].tid);
}
void Pid(const Part& p, capture::ThreadId t, Out& o) {
  o.Int(p.capture.processes[p.capture.threads[t].process].pid);
}
void Time(uint64_t t, Out& o) {
  if (t == analysis::kUnknownTime) return o.Null();
  o.Int(int64_t(t));
}

const char* ModuleKindName(capture::ModuleKind k) {
  switch (k) {
    case capture::ModuleKind::kFile:
      return "file";
    case capture::ModuleKind::kKernel:
      return "kernel";
    case capture::ModuleKind::kVdso:
      return "vdso";
    case capture::ModuleKind::kAnonymous:
      return "anonymous";
  }
  return "file";
}

const char* FrameKindName(capture::FrameKind k) {
  switch (k) {
    case capture::FrameKind::kNative:
      return "native";
    case capture::FrameKind::kKernel:
      return "kernel";
    case capture::FrameKind::kUnmapped:
      return "unmapped";
    case capture::FrameKind::kNamed:
      return "named";
    case capture::FrameKind::kInline:
      return "inline";
    case capture::FrameKind::kInterpreted:
      return "interpreted";
  }
  return "native";
}

std::string Notes(const capture::Settings& s) {
  std::string out;
  for (const std::string& n : s.notes) out += (out.empty() ? "" : "\n") + n;
  return out;
}

std::string Command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

const analysis::ZoneOccurrence& Zone(const Part& p, uint32_t r) {
  return p.zones.occurrences[r];
}

constexpr ColumnSpec kCaptures[] = {
    CAPTURE_COL,
    COL("path", "TEXT", "", "the file or directory as given", o.Text(p.name)),
    COL("mode", "TEXT", "", "launch, attach, or an importer's name", o.Text(c.settings.mode)),
    COL("command", "TEXT", "", "the recorded command line", o.Text(Command(c.settings.command))),
    COL("target_pid", "INTEGER", "", "the launched or attached process",
        o.Int(c.settings.target_pid)),
    COL("host", "TEXT", "", "the recording host", o.Text(c.settings.host)),
    COL("kernel", "TEXT", "", "its kernel release", o.Text(c.settings.kernel_release)),
    COL("recorder", "TEXT", "", "what recorded it", o.Text(c.settings.recorder)),
    COL("clock", "TEXT", "", "the clock every time column is on", o.Text(c.settings.clock)),
    COL("frequency", "INTEGER", "Hz", "sampling frequency", o.Int(c.settings.frequency)),
    COL("call_graph", "TEXT", "", "how stacks were taken", o.Text(c.settings.call_graph)),
    COL("stack_copy", "INTEGER", "bytes", "user stack bytes copied per sample",
        o.Int(c.settings.stack_copy)),
    COL("kernel_frames", "INTEGER", "", "1: kernel frames were recorded",
        o.Int(c.settings.kernel_frames)),
    COL("start_time", "INTEGER", "ns", "the recording's start",
        o.Int(int64_t(c.settings.start_time))),
    COL("end_time", "INTEGER", "ns", "its end", o.Int(int64_t(c.settings.end_time))),
    COL("duration", "INTEGER", "ns", "end_time - start_time",
        o.Int(int64_t(c.settings.end_time - c.settings.start_time))),
    COL("realtime_start", "INTEGER", "ns", "wall-clock time at start_time (since the epoch)",
        c.settings.realtime_start ? o.Int(int64_t(*c.settings.realtime_start)) : o.Null()),
    COL("metric", "TEXT", "", "what samples measure (cpu)", o.Text(c.settings.metric)),
    COL("unit", "TEXT", "", "the unit of samples.weight", o.Text(c.settings.unit)),
    COL("part", "TEXT", "", "'' (a whole recording), segment, snapshot or window",
        o.Text(c.settings.part)),
    COL("recording_id", "TEXT", "", "shared by the parts of one recording",
        o.Text(c.settings.recording_id)),
    COL("notes", "TEXT", "", "the recording's notes, one per line", o.Text(Notes(c.settings))),
};

constexpr ColumnSpec kModules[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kModule, "the module's"),
    COL("path", "TEXT", "", "the file's path on the recording host", Str(p, c.modules[r].path, o)),
    COL("build_id", "TEXT", "", "GNU build ID, hex; NULL: none",
        c.modules[r].build_id.empty() ? o.Null() : o.Text(HexBytes(c.modules[r].build_id))),
    COL("size", "INTEGER", "bytes", "the file's size", o.Int(int64_t(c.modules[r].size))),
    COL("kind", "TEXT", "", "file, kernel, vdso or anonymous",
        o.Text(ModuleKindName(c.modules[r].kind))),
    COL("runtime", "TEXT", "", "cpython or v8 when the module is a runtime's interpreter",
        c.modules[r].runtime == capture::Runtime::kCPython ? o.Text("cpython")
        : c.modules[r].runtime == capture::Runtime::kV8    ? o.Text("v8")
                                                           : o.Null()),
};

constexpr ColumnSpec kMappings[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kMapping, "the mapping's"),
    COL("process", "INTEGER", "", "processes.id", o.Id(p, IdKind::kProcess, c.mappings[r].process)),
    COL("pid", "INTEGER", "", "the process's pid", o.Int(c.processes[c.mappings[r].process].pid)),
    COL("module", "INTEGER", "", "modules.id", o.Id(p, IdKind::kModule, c.mappings[r].module)),
    COL("start", "TEXT", "", "first address, hex", o.Hex(c.mappings[r].start)),
    COL("end", "TEXT", "", "address past the last, hex", o.Hex(c.mappings[r].end)),
    COL("file_offset", "INTEGER", "bytes", "offset of `start` in the file",
        o.Int(int64_t(c.mappings[r].file_offset))),
    COL("time_start", "INTEGER", "ns", "when it was mapped",
        o.Int(int64_t(c.mappings[r].time_start))),
    COL("time_end", "INTEGER", "ns", "when it was unmapped or the recording ended",
        o.Int(int64_t(c.mappings[r].time_end))),
};

constexpr ColumnSpec kProcesses[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kProcess, "the process's"),
    COL("pid", "INTEGER", "", "process id", o.Int(c.processes[r].pid)),
    COL("parent_pid", "INTEGER", "", "its parent's", o.Int(c.processes[r].parent_pid)),
    COL("command", "TEXT", "", "its command name", Str(p, c.processes[r].command, o)),
    COL("exit_status", "INTEGER", "",
        "as the shell shows it (128+N: killed by signal N); NULL: not known",
        c.processes[r].exit_status < 0 ? o.Null() : o.Int(c.processes[r].exit_status)),
    COL("start_time", "INTEGER", "ns", "first seen", o.Int(int64_t(c.processes[r].start_time))),
    COL("end_time", "INTEGER", "ns", "exit, or the recording's end",
        o.Int(int64_t(c.processes[r].end_time))),
};

constexpr ColumnSpec kThreads[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kThread, "the thread's"),
    COL("tid", "INTEGER", "", "thread id", o.Int(c.threads[r].tid)),
    COL("process", "INTEGER", "", "processes.id", o.Id(p, IdKind::kProcess, c.threads[r].process)),
    COL("pid", "INTEGER", "", "its process's pid", Pid(p, r, o)),
    COL("name", "TEXT", "", "its name (comm, or the runtime's)", Str(p, c.threads[r].name, o)),
    COL("start_time", "INTEGER", "ns", "first seen", o.Int(int64_t(c.threads[r].start_time))),
    COL("end_time", "INTEGER", "ns", "exit, or the recording's end",
        o.Int(int64_t(c.threads[r].end_time))),
};

constexpr ColumnSpec kFunctions[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kFunction, "the function's"),
    COL("name", "TEXT", "", "demangled name", Str(p, c.functions[r].name, o)),
    COL("raw_name", "TEXT", "", "the symbol as the file spells it, when it differs",
        Str(p, c.functions[r].raw_name, o)),
    COL("module", "INTEGER", "", "modules.id; NULL: an interpreted or imported function",
        o.Id(p, IdKind::kModule, c.functions[r].module)),
};

constexpr ColumnSpec kFrames[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kFrame, "the frame's"),
    COL("kind", "TEXT", "", "native, kernel, unmapped, named, inline or interpreted",
        o.Text(FrameKindName(c.frames[r].kind))),
    COL("name", "TEXT", "",
        "what report calls it: its function's name, else module+0xoffset (or its address)",
        o.Text(p.FrameName(r))),
    COL("function", "INTEGER", "", "functions.id; NULL: not named",
        o.Id(p, IdKind::kFunction, c.frames[r].function)),
    COL("module", "INTEGER", "", "modules.id; NULL: none (interpreted frames: see file)",
        o.Id(p, IdKind::kModule, c.frames[r].module)),
    COL("address", "TEXT", "",
        "hex: offset in the module's file (native), address (kernel, unmapped); NULL for "
        "interpreted frames",
        c.frames[r].kind == capture::FrameKind::kInterpreted ? o.Null()
                                                             : o.Hex(c.frames[r].address)),
    COL("file", "TEXT", "", "source file, when known", Str(p, c.frames[r].file, o)),
    COL("line", "INTEGER", "", "source line; NULL: not known",
        c.frames[r].line == 0 ? o.Null() : o.Int(c.frames[r].line)),
    COL("first_line", "INTEGER", "", "an interpreted function's first line",
        c.frames[r].kind == capture::FrameKind::kInterpreted && c.frames[r].address != 0
            ? o.Int(int64_t(c.frames[r].address))
            : o.Null()),
};

constexpr ColumnSpec kStacks[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kStack, "the callsite's"),
    COL("parent", "INTEGER", "", "the caller's callsite (stacks.id); NULL: outermost",
        o.Id(p, IdKind::kStack, c.stacks.parent[r])),
    COL("frame", "INTEGER", "", "frames.id", o.Id(p, IdKind::kFrame, c.stacks.frame[r])),
    COL("depth", "INTEGER", "", "frames above it: 0 for an outermost frame",
        o.Int(p.stack_depth[r])),
};

constexpr ColumnSpec kSamples[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kSample, "the sample's"),
    COL("time", "INTEGER", "ns", "when it was taken", o.Int(int64_t(c.samples.time[r]))),
    COL("thread", "INTEGER", "", "threads.id", o.Id(p, IdKind::kThread, c.samples.thread[r])),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, c.samples.thread[r], o)),
    COL("pid", "INTEGER", "", "its process's id", Pid(p, c.samples.thread[r], o)),
    COL("cpu", "INTEGER", "", "the CPU it was taken on; NULL: not known (imported, older)",
        c.samples.CpuAt(r) == kNone ? o.Null() : o.Int(c.samples.CpuAt(r))),
    COL("stack", "INTEGER", "", "the leaf callsite (stacks.id); NULL: no frames",
        o.Id(p, IdKind::kStack, c.samples.stack[r])),
    COL("weight", "INTEGER", "ns",
        "its value in captures.unit: CPU time for a recording (the sampling period)",
        o.Int(int64_t(c.samples.weight[r]))),
    COL("count", "INTEGER", "", "samples the row stands for (1 unless imported)",
        o.Int(c.samples.CountAt(r))),
    COL("stack_end", "TEXT", "", "why the stack ends where it does (complete, ...)",
        o.Text(capture::StackEndName(c.samples.end[r]))),
};

constexpr ColumnSpec kOffCpu[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kOffCpu, "the interval's"),
    COL("start", "INTEGER", "ns", "switched out", o.Int(int64_t(c.off_cpu.start[r]))),
    COL("end", "INTEGER", "ns", "switched back in", o.Int(int64_t(c.off_cpu.end[r]))),
    COL("duration", "INTEGER", "ns", "end - start",
        o.Int(int64_t(c.off_cpu.end[r] - c.off_cpu.start[r]))),
    COL("thread", "INTEGER", "", "threads.id", o.Id(p, IdKind::kThread, c.off_cpu.thread[r])),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, c.off_cpu.thread[r], o)),
    COL("stack", "INTEGER", "", "where it blocked (stacks.id); NULL: no frames",
        o.Id(p, IdKind::kStack, c.off_cpu.stack[r])),
    COL("stack_end", "TEXT", "", "why that stack ends where it does",
        o.Text(capture::StackEndName(c.off_cpu.stack_end[r]))),
    COL("state", "TEXT", "",
        "sleeping (S: a lock, a sleep, I/O readiness), uninterruptible (D), preempted "
        "(R: runnable, waiting for a CPU) or other",
        o.Text(capture::OffCpuStateName(c.off_cpu.state[r]))),
    COL("waker_tid", "INTEGER", "", "the thread that woke it; NULL: not known",
        c.off_cpu.waker_tid[r] == 0 ? o.Null() : o.Int(c.off_cpu.waker_tid[r])),
    COL("waker_name", "TEXT", "", "the waker's name", Str(p, c.off_cpu.waker_name[r], o)),
    COL("cut_at_start", "INTEGER", "", "1: already off CPU when the recording began",
        o.Int((c.off_cpu.flags[r] & capture::kOffCpuCutAtStart) != 0)),
    COL("cut_at_end", "INTEGER", "", "1: still off CPU at the end (or its switch-in was lost)",
        o.Int((c.off_cpu.flags[r] & capture::kOffCpuCutAtEnd) != 0)),
};

constexpr ColumnSpec kOffCpuShort[] = {
    CAPTURE_COL,
    COL("thread", "INTEGER", "", "threads.id", o.Id(p, IdKind::kThread, c.off_cpu_short.thread[r])),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, c.off_cpu_short.thread[r], o)),
    COL("state", "TEXT", "", "as off_cpu.state",
        o.Text(capture::OffCpuStateName(c.off_cpu_short.state[r]))),
    COL("count", "INTEGER", "", "intervals shorter than the recording's --off-cpu-min",
        o.Int(int64_t(c.off_cpu_short.count[r]))),
    COL("total", "INTEGER", "ns", "their time together", o.Int(int64_t(c.off_cpu_short.total[r]))),
};

constexpr ColumnSpec kSyscalls[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kSyscall, "the call's"),
    COL("time", "INTEGER", "ns", "entry", o.Int(int64_t(c.syscalls.time[r]))),
    COL("duration", "INTEGER", "ns", "entry to exit", o.Int(int64_t(c.syscalls.duration[r]))),
    COL("thread", "INTEGER", "", "threads.id", o.Id(p, IdKind::kThread, c.syscalls.thread[r])),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, c.syscalls.thread[r], o)),
    COL("nr", "INTEGER", "", "the x86-64 system call number", o.Int(c.syscalls.nr[r])),
    COL("name", "TEXT", "", "its name (read, futex, ...)",
        o.Text(analysis::SyscallName(c.syscalls.nr[r]))),
    COL("ret", "INTEGER", "", "return value (-errno on failure)", o.Int(c.syscalls.ret[r])),
    COL("errno", "TEXT", "", "the error's name (EAGAIN, ...); NULL: none",
        analysis::ErrnoName(c.syscalls.ret[r]).empty()
            ? o.Null()
            : o.Text(analysis::ErrnoName(c.syscalls.ret[r]))),
    COL("arg0", "INTEGER", "", "first argument", o.Int(int64_t(c.syscalls.arg0[r]))),
    COL("arg1", "INTEGER", "", "second argument", o.Int(int64_t(c.syscalls.arg1[r]))),
    COL("arg2", "INTEGER", "", "third argument", o.Int(int64_t(c.syscalls.arg2[r]))),
    COL("stack", "INTEGER", "", "stacks.id (slow calls only); NULL: none taken",
        o.Id(p, IdKind::kStack, c.syscalls.StackAt(r))),
};

constexpr ColumnSpec kZones[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kZone, "the occurrence's"),
    COL("name", "TEXT", "", "the zone's name", Str(p, c.probe_sites.name[Zone(p, r).site], o)),
    COL("thread", "INTEGER", "", "threads.id", o.Id(p, IdKind::kThread, Zone(p, r).thread)),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, Zone(p, r).thread, o)),
    COL("begin", "INTEGER", "ns", "its begin; NULL: not recorded", Time(Zone(p, r).begin, o)),
    COL("end", "INTEGER", "ns", "its end; NULL: still open at the end", Time(Zone(p, r).end, o)),
    COL("duration", "INTEGER", "ns", "end - begin; NULL: incomplete",
        Zone(p, r).complete() ? o.Int(int64_t(Zone(p, r).duration())) : o.Null()),
    COL("self", "INTEGER", "ns", "its time outside the zones nested in it",
        Zone(p, r).complete() ? o.Int(int64_t(Zone(p, r).self_ns)) : o.Null()),
    COL("parent", "INTEGER", "", "the occurrence it is proven to nest in (zones.id)",
        o.Id(p, IdKind::kZone, Zone(p, r).parent)),
};

constexpr ColumnSpec kMarks[] = {
    CAPTURE_COL,
    COL("time", "INTEGER", "ns", "when", o.Int(int64_t(c.probe_records.time[p.marks[r]]))),
    COL("thread", "INTEGER", "", "threads.id",
        o.Id(p, IdKind::kThread, c.probe_records.thread[p.marks[r]])),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, c.probe_records.thread[p.marks[r]], o)),
    COL("name", "TEXT", "", "the mark's name",
        Str(p, c.probe_sites.name[c.probe_records.site[p.marks[r]]], o)),
    COL("file", "TEXT", "", "source file of its site",
        Str(p, c.probe_sites.file[c.probe_records.site[p.marks[r]]], o)),
    COL("line", "INTEGER", "", "source line of its site; NULL: not known",
        c.probe_sites.line[c.probe_records.site[p.marks[r]]] == 0
            ? o.Null()
            : o.Int(c.probe_sites.line[c.probe_records.site[p.marks[r]]])),
};

constexpr ColumnSpec kCounters[] = {
    CAPTURE_COL,
    COL("time", "INTEGER", "ns", "when", o.Int(int64_t(c.probe_records.time[p.counters[r]]))),
    COL("thread", "INTEGER", "", "threads.id",
        o.Id(p, IdKind::kThread, c.probe_records.thread[p.counters[r]])),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, c.probe_records.thread[p.counters[r]], o)),
    COL("name", "TEXT", "", "the counter's name",
        Str(p, c.probe_sites.name[c.probe_records.site[p.counters[r]]], o)),
    COL("value", "REAL", "", "the value the program set",
        o.Real(c.probe_records.ValueAt(p.counters[r]))),
};

// Rows: the sampler's label spans (capture labels), then the program's.
bool SamplerLabel(const Part& p, uint32_t r) {
  return r < p.capture.labels.size();
}
const analysis::ProbeLabelSpan& ProbeLabel(const Part& p, uint32_t r) {
  return p.probe_labels[r - p.capture.labels.size()];
}

constexpr ColumnSpec kLabels[] = {
    CAPTURE_COL,
    COL("source", "TEXT", "",
        "sampler (a walker's label on samples: python.gil, v8.isolate) or probe (the "
        "program's)",
        o.Text(SamplerLabel(p, r) ? "sampler" : "probe")),
    COL("thread", "INTEGER", "", "threads.id",
        o.Id(p, IdKind::kThread,
             SamplerLabel(p, r) ? c.labels.thread[r] : ProbeLabel(p, r).thread)),
    COL("tid", "INTEGER", "", "the thread's id",
        Tid(p, SamplerLabel(p, r) ? c.labels.thread[r] : ProbeLabel(p, r).thread, o)),
    COL("key", "TEXT", "", "the label",
        Str(p, SamplerLabel(p, r) ? c.labels.key[r] : ProbeLabel(p, r).key, o)),
    COL("value", "TEXT", "", "its value",
        Str(p, SamplerLabel(p, r) ? c.labels.value[r] : ProbeLabel(p, r).value, o)),
    COL("start", "INTEGER", "ns", "sampler: its first sample; probe: when it was set",
        o.Int(int64_t(SamplerLabel(p, r) ? c.labels.start[r] : ProbeLabel(p, r).begin))),
    COL("end", "INTEGER", "ns", "sampler: its last sample; probe: when it changed; NULL: never",
        Time(SamplerLabel(p, r) ? c.labels.end[r] : ProbeLabel(p, r).end, o)),
};

constexpr ColumnSpec kReadings[] = {
    CAPTURE_COL,
    COL("time", "INTEGER", "ns", "when it was read", o.Int(int64_t(c.readings.time[r]))),
    COL("thread", "INTEGER", "", "threads.id for a thread's reading; NULL otherwise",
        o.Id(p, IdKind::kThread, c.readings.thread[r])),
    COL("tid", "INTEGER", "", "the thread's id; NULL otherwise",
        c.readings.thread[r] == kNone ? o.Null() : Tid(p, c.readings.thread[r], o)),
    COL("scope", "TEXT", "",
        "a cgroup: its path (v2) or cpu:PATH (v1's cpu hierarchy); system; NULL for a thread's",
        Str(p, c.readings.scope[r], o)),
    COL("key", "TEXT", "",
        "sched.on_cpu_ns, sched.run_delay_ns, sched.timeslices; cpu.quota_us (-1: none), "
        "cpu.period_us, cpu.periods, cpu.throttled_periods, cpu.throttled_ns; "
        "psi.RESOURCE.some_us, psi.RESOURCE.full_us",
        Str(p, c.readings.key[r], o)),
    COL("value", "INTEGER", "", "the counter as read (cumulative; its unit ends its key)",
        o.Int(c.readings.value[r])),
};

constexpr ColumnSpec kProblems[] = {
    CAPTURE_COL,
    COL("kind", "TEXT", "", "what went wrong", Str(p, c.problems[r].kind, o)),
    COL("count", "INTEGER", "", "how often", o.Int(int64_t(c.problems[r].count))),
    COL("example", "TEXT", "", "one case of it", Str(p, c.problems[r].example, o)),
};

constexpr ColumnSpec kLosses[] = {
    CAPTURE_COL,
    COL("kind", "TEXT", "",
        "lost_records, lost_samples, throttles, ..., or SOURCE.KEY for a source's own "
        "(python.walks_lost, ...)",
        o.Text(p.losses[r].first)),
    COL("count", "INTEGER", "", "how many", o.Int(int64_t(p.losses[r].second))),
};

const capture::SourceSetting& Source(const Part& p, uint32_t r) {
  return p.capture.settings.sources[p.source_values[r].first];
}
constexpr ColumnSpec kSources[] = {
    CAPTURE_COL,
    COL("name", "TEXT", "", "the source (off-cpu, syscalls, python, node, probes, ...)",
        o.Text(Source(p, r).name)),
    COL("state", "TEXT", "", "on, or off: why", o.Text(Source(p, r).state)),
    COL("key", "TEXT", "", "one of its values' names; NULL: it has none",
        p.source_values[r].second == kNone
            ? o.Null()
            : o.Text(Source(p, r).values[p.source_values[r].second].first)),
    COL("value", "INTEGER", "", "that value",
        p.source_values[r].second == kNone
            ? o.Null()
            : o.Int(int64_t(Source(p, r).values[p.source_values[r].second].second))),
};

constexpr ColumnSpec kBudgetSteps[] = {
    CAPTURE_COL,
    COL("time", "INTEGER", "ns", "when the budget changed the sampling",
        o.Int(int64_t(c.settings.budget_steps[r].time))),
    COL("level", "INTEGER", "", "the step's level", o.Int(c.settings.budget_steps[r].level)),
    COL("frequency", "INTEGER", "Hz", "sampling frequency from then on",
        o.Int(c.settings.budget_steps[r].frequency)),
    COL("stack_copy", "INTEGER", "bytes", "stack bytes copied from then on",
        o.Int(c.settings.budget_steps[r].stack_copy)),
    COL("measured_ppm", "INTEGER", "ppm", "the recorder's measured share of one CPU",
        o.Int(c.settings.budget_steps[r].measured_ppm)),
    COL("reason", "TEXT", "", "why", o.Text(c.settings.budget_steps[r].reason)),
};

// Imported traces (microscope import): their sources, tracks, events and
// flows, each trace's rows after the last's.
const capture::Trace& TraceAt(const Part& p, uint32_t t) {
  return p.capture.traces[t];
}
const capture::TraceTrack& TrackAt(const Part& p, uint32_t r) {
  const auto [t, i] = p.trace_tracks[r];
  return p.capture.traces[t].tracks[i];
}
struct EventRef {
  const capture::Trace& t;
  uint32_t trace;
  uint32_t i;
};
EventRef EventAt(const Part& p, uint32_t r) {
  const auto [t, i] = p.trace_events[r];
  return {p.capture.traces[t], t, i};
}
void TraceText(const capture::Trace& t, uint32_t id, Out& o) {
  if (id == kNone) return o.Null();
  o.Text(t.strings[id]);
}
void NonZero(int64_t v, Out& o) {
  if (v == 0) return o.Null();
  o.Int(v);
}
constexpr ColumnSpec kTraces[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kTrace, "the trace's"),
    COL("path", "TEXT", "", "the file imported", o.Text(TraceAt(p, r).path)),
    COL("digest", "TEXT", "", "its SHA-256", o.Text(TraceAt(p, r).digest)),
    COL("format", "TEXT", "", "chrome-json or kineto", o.Text(TraceAt(p, r).format)),
    COL("tool", "TEXT", "", "what wrote it, as far as the file says",
        TraceAt(p, r).tool.empty() ? o.Null() : o.Text(TraceAt(p, r).tool)),
    COL("clock", "TEXT", "",
        "how its times were placed: base-time, monotonic, realtime, offset, anchor, own-axis",
        o.Text(TraceAt(p, r).clock)),
    COL("clock_note", "TEXT", "", "the placement in words", o.Text(TraceAt(p, r).clock_note)),
    COL("offset", "INTEGER", "ns", "added to the trace's own times", o.Int(TraceAt(p, r).offset)),
    COL("uncertainty", "INTEGER", "ns", "how far off the placement may be; NULL: not bounded",
        TraceAt(p, r).uncertainty ? o.Int(int64_t(*TraceAt(p, r).uncertainty)) : o.Null()),
    COL("imported_at", "INTEGER", "ns", "wall-clock time of the import (since the epoch)",
        o.Int(int64_t(TraceAt(p, r).imported_at))),
    COL("skipped", "INTEGER", "", "events not imported", o.Int(int64_t(TraceAt(p, r).skipped))),
    COL("notes", "TEXT", "", "what the import left out or noticed, one per line",
        [&] {
          std::string s;
          for (const std::string& n : TraceAt(p, r).notes) s += (s.empty() ? "" : "\n") + n;
          o.Text(s);
        }()),
};
constexpr ColumnSpec kTraceTracks[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kTraceTrack, "the track's"),
    COL("trace", "INTEGER", "", "traces.id", o.Id(p, IdKind::kTrace, p.trace_tracks[r].first)),
    COL("kind", "TEXT", "", "thread, device (a GPU's stream), async, counter, process",
        o.Text(capture::TraceTrackKindName(TrackAt(p, r).kind))),
    COL("name", "TEXT", "", "the thread's, stream's, async span's or counter's name",
        o.Text(TrackAt(p, r).name)),
    COL("group", "TEXT", "", "its process's (or device's) name in the trace",
        o.Text(TrackAt(p, r).group)),
    COL("trace_pid", "TEXT", "", "its pid as the trace spells it", o.Text(TrackAt(p, r).trace_pid)),
    COL("trace_tid", "TEXT", "", "its tid as the trace spells it", o.Text(TrackAt(p, r).trace_tid)),
    COL("pid", "INTEGER", "", "the capture's process it is; NULL: none",
        NonZero(TrackAt(p, r).pid, o)),
    COL("tid", "INTEGER", "", "the capture's thread it is; NULL: none",
        NonZero(TrackAt(p, r).tid, o)),
    COL("mapped_by", "TEXT", "", "how: pid, anchor, user; NULL: not mapped",
        TrackAt(p, r).mapped_by.empty() ? o.Null() : o.Text(TrackAt(p, r).mapped_by)),
};
constexpr ColumnSpec kTraceEvents[] = {
    CAPTURE_COL,
    ID_COL(IdKind::kTraceEvent, "the event's"),
    COL("trace", "INTEGER", "", "traces.id", o.Id(p, IdKind::kTrace, p.trace_events[r].first)),
    COL("track", "INTEGER", "", "trace_tracks.id",
        o.Id(p, IdKind::kTraceTrack,
             p.trace_first_track[EventAt(p, r).trace] +
                 EventAt(p, r).t.events.track[EventAt(p, r).i])),
    COL("kind", "TEXT", "", "span, instant or counter",
        o.Text(capture::TraceEventKindName(EventAt(p, r).t.events.kind[EventAt(p, r).i]))),
    COL("name", "TEXT", "", "its name",
        TraceText(EventAt(p, r).t, EventAt(p, r).t.events.name[EventAt(p, r).i], o)),
    COL("category", "TEXT", "", "its category (cat)",
        TraceText(EventAt(p, r).t, EventAt(p, r).t.events.CategoryAt(EventAt(p, r).i), o)),
    COL("start", "INTEGER", "ns",
        "on the capture's clock (as samples.time), or on the trace's own axis (traces.clock)",
        o.Int(int64_t(EventAt(p, r).t.events.start[EventAt(p, r).i]))),
    COL("duration", "INTEGER", "ns", "a span's; 0 otherwise",
        o.Int(int64_t(EventAt(p, r).t.events.duration[EventAt(p, r).i]))),
    COL("end", "INTEGER", "ns", "start + duration",
        o.Int(int64_t(EventAt(p, r).t.events.EndAt(EventAt(p, r).i)))),
    COL("depth", "INTEGER", "", "a span's nesting on its track (0: outermost)",
        o.Int(EventAt(p, r).t.events.DepthAt(EventAt(p, r).i))),
    COL("value", "REAL", "", "a counter's value; NULL otherwise",
        EventAt(p, r).t.events.kind[EventAt(p, r).i] == capture::TraceEventKind::kCounter
            ? o.Real(EventAt(p, r).t.events.ValueAt(EventAt(p, r).i))
            : o.Null()),
    COL("args", "TEXT", "", "its arguments as JSON text; NULL: none",
        TraceText(EventAt(p, r).t, EventAt(p, r).t.events.ArgsAt(EventAt(p, r).i), o)),
};
constexpr ColumnSpec kTraceFlows[] = {
    CAPTURE_COL,
    COL("trace", "INTEGER", "", "traces.id", o.Id(p, IdKind::kTrace, p.trace_flows[r].first)),
    COL("from_event", "INTEGER", "", "trace_events.id it starts at (a CPU launch)",
        o.Id(p, IdKind::kTraceEvent,
             p.trace_first_event[p.trace_flows[r].first] +
                 TraceAt(p, p.trace_flows[r].first).flows.from[p.trace_flows[r].second])),
    COL("to_event", "INTEGER", "", "trace_events.id it ends at (its kernel)",
        o.Id(p, IdKind::kTraceEvent,
             p.trace_first_event[p.trace_flows[r].first] +
                 TraceAt(p, p.trace_flows[r].first).flows.to[p.trace_flows[r].second])),
    COL("name", "TEXT", "", "the flow's name (ac2g, correlation, ...)",
        TraceText(TraceAt(p, p.trace_flows[r].first),
                  TraceAt(p, p.trace_flows[r].first).flows.name[p.trace_flows[r].second], o)),
    COL("flow_id", "INTEGER", "", "its id in the trace (a correlation id)",
        o.Int(int64_t(TraceAt(p, p.trace_flows[r].first).flows.id[p.trace_flows[r].second]))),
};

// sample_frames: the cursor in database.cc fills these by position.
constexpr ColumnSpec kSampleFrames[] = {
    {"capture", "INTEGER", "", "the capture", nullptr},
    {"sample", "INTEGER", "", "samples.id", nullptr},
    {"time", "INTEGER", "ns", "the sample's time", nullptr},
    {"thread", "INTEGER", "", "threads.id", nullptr},
    {"depth", "INTEGER", "", "0 for the leaf (the sampled frame), 1 for its caller, ...", nullptr},
    {"stack", "INTEGER", "", "the callsite at this depth (stacks.id)", nullptr},
    {"frame", "INTEGER", "", "frames.id", nullptr},
    {"function", "INTEGER", "", "functions.id; NULL: not named", nullptr},
    {"name", "TEXT", "", "frames.name", nullptr},
    {"weight", "INTEGER", "ns", "the sample's weight", nullptr},
    {"count", "INTEGER", "", "the sample's count", nullptr},
};

// function_costs: report's flat table with its defaults.
const analysis::ReportFunction& Cost(const Part& p, uint32_t r) {
  return (**p.FunctionCosts({}))[r];
}
constexpr ColumnSpec kFunctionCosts[] = {
    CAPTURE_COL,
    COL("name", "TEXT", "", "the function, as report names it", o.Text(Cost(p, r).name)),
    COL("module", "TEXT", "", "its module's file name, or an interpreted function's file",
        o.Text(Cost(p, r).module)),
    COL("self_samples", "INTEGER", "", "samples whose leaf it is",
        o.Int(int64_t(Cost(p, r).self.samples))),
    COL("self", "INTEGER", "ns", "their weight", o.Int(int64_t(Cost(p, r).self.value))),
    COL("self_percent", "REAL", "%", "self's share of all samples' weight",
        o.Real(Cost(p, r).self.percent)),
    COL("total_samples", "INTEGER", "", "samples with it anywhere on their stack (once each)",
        o.Int(int64_t(Cost(p, r).total.samples))),
    COL("total", "INTEGER", "ns", "their weight", o.Int(int64_t(Cost(p, r).total.value))),
    COL("total_percent", "REAL", "%", "total's share of all samples' weight",
        o.Real(Cost(p, r).total.percent)),
};

const std::pair<uint32_t, uint32_t>& ZoneSample(const Part& p, uint32_t r) {
  return p.ZoneSamples()[r];
}
constexpr ColumnSpec kZoneSamples[] = {
    CAPTURE_COL,
    COL("sample", "INTEGER", "", "samples.id", o.Id(p, IdKind::kSample, ZoneSample(p, r).first)),
    COL("time", "INTEGER", "ns", "the sample's time",
        o.Int(int64_t(c.samples.time[ZoneSample(p, r).first]))),
    COL("thread", "INTEGER", "", "threads.id",
        o.Id(p, IdKind::kThread, c.samples.thread[ZoneSample(p, r).first])),
    COL("zone", "INTEGER", "", "the innermost zone open on its thread then (zones.id)",
        o.Id(p, IdKind::kZone, ZoneSample(p, r).second)),
    COL("zone_name", "TEXT", "", "that zone's name",
        Str(p, c.probe_sites.name[p.zones.occurrences[ZoneSample(p, r).second].site], o)),
    COL("stack", "INTEGER", "", "the sample's stack (stacks.id)",
        o.Id(p, IdKind::kStack, c.samples.stack[ZoneSample(p, r).first])),
    COL("weight", "INTEGER", "ns", "the sample's weight",
        o.Int(int64_t(c.samples.weight[ZoneSample(p, r).first]))),
    COL("count", "INTEGER", "", "the sample's count",
        o.Int(c.samples.CountAt(ZoneSample(p, r).first))),
};

const Part::ThreadWindow& TW(const Part& p, uint32_t r) {
  return p.ThreadWindows()[r];
}
// A thread that did something in the window: it wanted a CPU (ran or
// waited for one) a tenth of the time, or woke ten times a second. Threads
// blocked throughout, or nearly (a runtime's idle helpers, a main thread
// joining its workers), are left out of the shares.
bool Busy(const Part::ThreadWindow& w) {
  const uint64_t life = w.end - w.start;
  const uint64_t wanted =
      uint64_t(std::max<int64_t>(w.on_cpu, 0) + std::max<int64_t>(w.run_delay, 0));
  return life > 0 && (wanted * 10 >= life ||
                      uint64_t(std::max<int64_t>(w.timeslices, 0)) * 100000000ull >= life);
}
constexpr ColumnSpec kThreadWindow[] = {
    CAPTURE_COL,
    COL("thread", "INTEGER", "", "threads.id", o.Id(p, IdKind::kThread, TW(p, r).thread)),
    COL("tid", "INTEGER", "", "the thread's id", Tid(p, TW(p, r).thread, o)),
    COL("pid", "INTEGER", "", "its process's id", Pid(p, TW(p, r).thread, o)),
    COL("name", "TEXT", "", "the thread's name", Str(p, c.threads[TW(p, r).thread].name, o)),
    COL("start", "INTEGER", "ns", "its first reading", o.Int(int64_t(TW(p, r).start))),
    COL("end", "INTEGER", "ns", "its last reading", o.Int(int64_t(TW(p, r).end))),
    COL("life", "INTEGER", "ns", "end - start: the thread's time in the window",
        o.Int(int64_t(TW(p, r).end - TW(p, r).start))),
    COL("on_cpu", "INTEGER", "ns", "time on a CPU (schedstat)", o.Int(TW(p, r).on_cpu)),
    COL("run_delay", "INTEGER", "ns",
        "time runnable but waiting for a CPU (schedstat; includes its cgroup's throttling)",
        o.Int(TW(p, r).run_delay)),
    COL("timeslices", "INTEGER", "", "times it was given a CPU", o.Int(TW(p, r).timeslices)),
    COL("sleeping", "INTEGER", "ns", "off CPU, sleeping (S), in the window (off_cpu)",
        o.Int(int64_t(TW(p, r).off_cpu[size_t(capture::OffCpuState::kSleeping)]))),
    COL("uninterruptible", "INTEGER", "ns", "off CPU, uninterruptible (D), in the window",
        o.Int(int64_t(TW(p, r).off_cpu[size_t(capture::OffCpuState::kUninterruptible)]))),
    COL("preempted", "INTEGER", "ns", "off CPU, preempted (R), in the window",
        o.Int(int64_t(TW(p, r).off_cpu[size_t(capture::OffCpuState::kPreempted)]))),
    COL("busy", "INTEGER", "",
        "1: it did something in the window (wanted a CPU a tenth of it, or woke ten times a "
        "second); 0: blocked throughout, or nearly: left out of triage's shares",
        o.Int(Busy(TW(p, r)))),
};

const Part::ScopeWindow& SW(const Part& p, uint32_t r) {
  return p.ScopeWindows()[r];
}
void ScopeValue(const Part& p, uint32_t r, std::string_view key, bool last, Out& o) {
  std::optional<int64_t> v = SW(p, r).Value(p.capture, key, last);
  v ? o.Int(*v) : o.Null();
}
constexpr ColumnSpec kCgroupWindow[] = {
    CAPTURE_COL,
    COL("scope", "TEXT", "",
        "the cgroup: its path (v2) or cpu:PATH (v1); or system (pressure only)",
        Str(p, SW(p, r).scope, o)),
    COL("start", "INTEGER", "ns", "its first reading", o.Int(int64_t(SW(p, r).start))),
    COL("end", "INTEGER", "ns", "its last reading", o.Int(int64_t(SW(p, r).end))),
    COL("quota_us", "INTEGER", "us", "CPU quota per period at the end (-1: none; NULL: not read)",
        ScopeValue(p, r, capture::kReadingQuota, true, o)),
    COL("period_us", "INTEGER", "us", "the quota's period",
        ScopeValue(p, r, capture::kReadingPeriod, true, o)),
    COL("periods", "INTEGER", "", "periods elapsed in the window",
        ScopeValue(p, r, capture::kReadingPeriods, false, o)),
    COL("throttled_periods", "INTEGER", "", "of them, periods it was throttled in",
        ScopeValue(p, r, capture::kReadingThrottledPeriods, false, o)),
    COL("throttled_ns", "INTEGER", "ns", "time throttled in the window",
        ScopeValue(p, r, capture::kReadingThrottled, false, o)),
    COL("cpu_some_us", "INTEGER", "us", "pressure: time some task stalled waiting for a CPU",
        ScopeValue(p, r, "psi.cpu.some_us", false, o)),
    COL("memory_some_us", "INTEGER", "us", "pressure: time some task stalled on memory",
        ScopeValue(p, r, "psi.memory.some_us", false, o)),
    COL("memory_full_us", "INTEGER", "us", "pressure: time every task stalled on memory",
        ScopeValue(p, r, "psi.memory.full_us", false, o)),
    COL("io_some_us", "INTEGER", "us", "pressure: time some task stalled on I/O",
        ScopeValue(p, r, "psi.io.some_us", false, o)),
};

#undef COL
#undef CAPTURE_COL
#undef ID_COL

size_t Ones(const Part&) {
  return 1;
}

// The SQL of sample_frames over the exported tables (id: their primary key).
constexpr const char* kSampleFramesSql =
    "WITH RECURSIVE w(capture, sample, time, thread, depth, stack, weight, count) AS ("
    "SELECT capture, id, time, thread, 0, stack, weight, count FROM samples WHERE stack IS NOT "
    "NULL "
    "UNION ALL SELECT w.capture, w.sample, w.time, w.thread, w.depth + 1, s.parent, w.weight, "
    "w.count "
    "FROM w JOIN stacks s ON s.id = w.stack WHERE s.parent IS NOT NULL) "
    "SELECT w.capture, w.sample, w.time, w.thread, w.depth, w.stack, s.frame, f.function, f.name, "
    "w.weight, w.count FROM w JOIN stacks s ON s.id = w.stack JOIN frames f ON f.id = s.frame";

#define ROWS(expr) [](const Part& p) -> size_t { return (expr); }

const TableSpec kTables[] = {
    {"captures", "one row per capture the query reads: what recorded it, when, how", kCaptures,
     Ones},
    {"processes", "the processes recorded", kProcesses, ROWS(p.capture.processes.size()), true,
     IdKind::kProcess},
    {"threads", "the threads recorded", kThreads, ROWS(p.capture.threads.size()), true,
     IdKind::kThread},
    {"modules", "the files and kernel images code ran from", kModules,
     ROWS(p.capture.modules.size()), true, IdKind::kModule},
    {"mappings", "where each process mapped each module, and when", kMappings,
     ROWS(p.capture.mappings.size()), true, IdKind::kMapping},
    {"functions", "named functions", kFunctions, ROWS(p.capture.functions.size()), true,
     IdKind::kFunction},
    {"frames", "one row per distinct frame (function and place)", kFrames,
     ROWS(p.capture.frames.size()), true, IdKind::kFrame},
    {"stacks", "callsites: each a frame called from its parent callsite (a prefix tree)", kStacks,
     ROWS(p.capture.stacks.size()), true, IdKind::kStack},
    {"samples", "CPU samples in time order", kSamples, ROWS(p.capture.samples.size()), true,
     IdKind::kSample},
    {"off_cpu", "intervals a thread spent off CPU (record --off-cpu), in start order", kOffCpu,
     ROWS(p.capture.off_cpu.size()), true, IdKind::kOffCpu},
    {"off_cpu_short", "off-CPU intervals too short to keep apart, counted per thread and state",
     kOffCpuShort, ROWS(p.capture.off_cpu_short.size())},
    {"syscalls", "system calls (record --syscalls), in start order", kSyscalls,
     ROWS(p.capture.syscalls.size()), true, IdKind::kSyscall},
    {"zones", "the program's zones (probes), each occurrence", kZones,
     ROWS(p.zones.occurrences.size()), true, IdKind::kZone},
    {"marks", "the program's marks (probes)", kMarks, ROWS(p.marks.size())},
    {"counters", "the program's counter values (probes)", kCounters, ROWS(p.counters.size())},
    {"labels", "label spans: the walkers' on samples, and the program's", kLabels,
     ROWS(p.capture.labels.size() + p.probe_labels.size())},
    {"readings",
     "the targets' own counters read every 100 ms (record --readings): schedstat per thread, "
     "the cgroup's CPU quota and throttling, pressure",
     kReadings, ROWS(p.capture.readings.size())},
    {"problems", "what the recorder or importer could not do, counted, with an example", kProblems,
     ROWS(p.capture.problems.size())},
    {"losses", "what was lost: records, samples, throttling, and each source's own losses", kLosses,
     ROWS(p.losses.size())},
    {"sources", "the event sources the recording asked for, their state and values", kSources,
     ROWS(p.source_values.size())},
    {"budget_steps", "changes the --budget controller made", kBudgetSteps,
     ROWS(p.capture.settings.budget_steps.size())},
    {"traces", "other tools' traces imported into the capture (microscope import)", kTraces,
     ROWS(p.capture.traces.size()), true, IdKind::kTrace},
    {"trace_tracks", "their tracks: threads, devices' streams, async spans, counters", kTraceTracks,
     ROWS(p.trace_tracks.size()), true, IdKind::kTraceTrack},
    {"trace_events", "their spans, instants and counter values, each trace's in start order",
     kTraceEvents, ROWS(p.trace_events.size()), true, IdKind::kTraceEvent},
    {"trace_flows", "their flows: a CPU launch to the kernel it started, ...", kTraceFlows,
     ROWS(p.trace_flows.size())},
    {"sample_frames", "one row per sample and frame of its stack, leaf first (depth 0)",
     kSampleFrames, nullptr, false, IdKind::kModule, true, nullptr, kSampleFramesSql},
    {"function_costs",
     "self and total per function as `report` counts them (its defaults: its metric, inlines "
     "on, the mixed look), in its order",
     kFunctionCosts, ROWS((*p.FunctionCosts({}))->size()), false, IdKind::kModule, true,
     [](const Part& p, analysis::Cancel cancel) { return p.FunctionCosts(cancel).status(); }},
    {"zone_samples", "each sample inside a zone, with the innermost zone open on its thread",
     kZoneSamples, ROWS(p.ZoneSamples().size()), false, IdKind::kModule, true},
    {"thread_window",
     "per thread with readings: its time in the window split as its own counters say (on CPU, "
     "waiting for one, off CPU by state)",
     kThreadWindow, ROWS(p.ThreadWindows().size()), false, IdKind::kModule, true},
    {"cgroup_window",
     "per cgroup (and the system) with readings: its CPU quota, throttling and pressure over "
     "the window",
     kCgroupWindow, ROWS(p.ScopeWindows().size()), false, IdKind::kModule, true},
};

#undef ROWS

}  // namespace

std::span<const TableSpec> Tables() {
  return kTables;
}

const TableSpec* FindTable(std::string_view name) {
  for (const TableSpec& t : kTables) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

std::string CreateStatement(const TableSpec& table, bool primary_key) {
  std::string sql = std::string("CREATE TABLE ") + table.name + "(";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const ColumnSpec& col = table.columns[i];
    if (i > 0) sql += ", ";
    sql += std::string("\"") + col.name + "\" " + col.type;
    if (primary_key && table.has_id && std::string_view(col.name) == "id") sql += " PRIMARY KEY";
  }
  return sql + ")";
}

}  // namespace microscope::sql
