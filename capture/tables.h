// The capture's event tables, each column declared once: its type, its name
// (the field's name in schema.fbs, at the same position) and what its values
// must be. Everything that handles a column walks these lists: the structs
// (capture.h), reading, writing and validation (reader.cc, writer.cc,
// columns.h), cutting parts out of a live capture, merging them and
// compacting the dictionaries (window.cc). Adding a column to a table is one
// line here (with what it means, in schema.fbs) and its field at the end of
// the table in schema.fbs; a column added after its table first shipped is
// `.optional = true`, so that older files, which lack it, still read.
//
// unit capture checks each list against schema.fbs (names, order, element
// sizes) through FlatBuffers' reflection tables.
#pragma once

#include <cstdint>

namespace microscope::capture {

// What a column's values index: the reader checks each is in range, and a
// cut, a merge or a compaction renumbers them.
enum class Ref : uint8_t { kNone, kString, kModule, kThread, kStack, kProbeSite };

struct ColumnInfo {
  const char* name = "";
  Ref ref = Ref::kNone;
  bool nullable = false;     // kNone allowed: a reference that may be absent
  bool optional = false;     // may be empty, every row then having the default
  uint32_t min = 0;          // an enum's values lie in [min, below)
  uint32_t below = 0;        // (0: any value)
  uint32_t mask = 0;         // flags: no bit outside it (0: any bits)
  bool ascending = false;    // the table's order: never less than the row before
  bool after_start = false;  // an interval's end: never before its `start`
  uint64_t fill = 0;         // an optional column's value in the rows it is empty for
};

// X(Type, name, ColumnInfo fields...): one line a column, in schema order.
#define MICROSCOPE_SAMPLES_COLUMNS(X)                     \
  X(uint64_t, time, .ascending = true)                    \
  X(ThreadId, thread, .ref = Ref::kThread)                \
  X(StackId, stack, .ref = Ref::kStack, .nullable = true) \
  X(uint64_t, weight)                                     \
  X(StackEnd, end, .below = kStackEndCount)               \
  X(uint32_t, count, .optional = true, .fill = 1)         \
  X(uint32_t, cpu, .optional = true, .fill = kNone)

#define MICROSCOPE_SYSCALLS_COLUMNS(X)     \
  X(uint64_t, time, .ascending = true)     \
  X(uint64_t, duration)                    \
  X(ThreadId, thread, .ref = Ref::kThread) \
  X(uint32_t, nr)                          \
  X(int64_t, ret)                          \
  X(uint64_t, arg0)                        \
  X(uint64_t, arg1)                        \
  X(uint64_t, arg2)                        \
  X(StackId, stack, .ref = Ref::kStack, .nullable = true, .optional = true, .fill = kNone)

#define MICROSCOPE_OFF_CPU_COLUMNS(X)                            \
  X(uint64_t, start, .ascending = true)                          \
  X(uint64_t, end, .after_start = true)                          \
  X(ThreadId, thread, .ref = Ref::kThread)                       \
  X(StackId, stack, .ref = Ref::kStack, .nullable = true)        \
  X(StackEnd, stack_end, .below = kStackEndCount)                \
  X(OffCpuState, state, .below = kOffCpuStateCount)              \
  X(int32_t, waker_tid)                                          \
  X(StringId, waker_name, .ref = Ref::kString, .nullable = true) \
  X(uint8_t, flags, .mask = kOffCpuFlagsMask)

#define MICROSCOPE_OFF_CPU_SHORT_COLUMNS(X)         \
  X(ThreadId, thread, .ref = Ref::kThread)          \
  X(OffCpuState, state, .below = kOffCpuStateCount) \
  X(uint64_t, count)                                \
  X(uint64_t, total)

#define MICROSCOPE_LABEL_SPANS_COLUMNS(X)  \
  X(ThreadId, thread, .ref = Ref::kThread) \
  X(StringId, key, .ref = Ref::kString)    \
  X(StringId, value, .ref = Ref::kString)  \
  X(uint64_t, start)                       \
  X(uint64_t, end, .after_start = true)

#define MICROSCOPE_PROBE_SITES_COLUMNS(X)                  \
  X(ProbeKind, kind, .min = uint32_t(ProbeKind::kZone),    \
    .below = uint32_t(ProbeKind::kCounter) + 1)            \
  X(StringId, name, .ref = Ref::kString)                   \
  X(StringId, file, .ref = Ref::kString, .nullable = true) \
  X(uint32_t, line)                                        \
  X(ModuleId, module, .ref = Ref::kModule, .nullable = true)

#define MICROSCOPE_PROBE_RECORDS_COLUMNS(X)                                                     \
  X(uint64_t, time, .ascending = true)                                                          \
  X(ThreadId, thread, .ref = Ref::kThread)                                                      \
  X(ProbeSiteId, site, .ref = Ref::kProbeSite)                                                  \
  X(ProbeOp, op, .min = uint32_t(ProbeOp::kBegin), .below = uint32_t(ProbeOp::kLabelClear) + 1) \
  X(double, value, .optional = true)                                                            \
  X(StringId, text, .ref = Ref::kString, .nullable = true, .optional = true, .fill = kNone)

#define MICROSCOPE_READINGS_COLUMNS(X)                       \
  X(uint64_t, time, .ascending = true)                       \
  X(ThreadId, thread, .ref = Ref::kThread, .nullable = true) \
  X(StringId, scope, .ref = Ref::kString, .nullable = true)  \
  X(StringId, key, .ref = Ref::kString)                      \
  X(int64_t, value)

// (2.11) An imported trace's events and flows (capture.h's Trace): their
// references index the trace's own strings and tracks, which validate.cc
// checks, so the columns name no capture table.
#define MICROSCOPE_TRACE_EVENTS_COLUMNS(X)               \
  X(uint32_t, track)                                     \
  X(TraceEventKind, kind, .below = kTraceEventKindCount) \
  X(uint64_t, start, .ascending = true)                  \
  X(uint64_t, duration)                                  \
  X(uint32_t, name)                                      \
  X(uint32_t, category, .optional = true, .fill = kNone) \
  X(double, value, .optional = true)                     \
  X(uint32_t, args, .optional = true, .fill = kNone)     \
  X(uint32_t, depth, .optional = true)

#define MICROSCOPE_TRACE_FLOWS_COLUMNS(X) \
  X(uint32_t, from)                       \
  X(uint32_t, to)                         \
  X(uint32_t, name)                       \
  X(uint64_t, id)

// The event tables: X(Struct, member of Capture, its columns' list).
#define MICROSCOPE_EVENT_TABLES(X)                                 \
  X(Samples, samples, MICROSCOPE_SAMPLES_COLUMNS)                  \
  X(Syscalls, syscalls, MICROSCOPE_SYSCALLS_COLUMNS)               \
  X(OffCpu, off_cpu, MICROSCOPE_OFF_CPU_COLUMNS)                   \
  X(OffCpuShort, off_cpu_short, MICROSCOPE_OFF_CPU_SHORT_COLUMNS)  \
  X(LabelSpans, labels, MICROSCOPE_LABEL_SPANS_COLUMNS)            \
  X(ProbeSites, probe_sites, MICROSCOPE_PROBE_SITES_COLUMNS)       \
  X(ProbeRecords, probe_records, MICROSCOPE_PROBE_RECORDS_COLUMNS) \
  X(Readings, readings, MICROSCOPE_READINGS_COLUMNS)

// A table's members: one std::vector per column, or one Column (which can
// view the file in place: the samples).
#define MICROSCOPE_VECTOR_MEMBER(T, col, ...) std::vector<T> col;
#define MICROSCOPE_VIEW_MEMBER(T, col, ...) Column<T> col;

// A table's ForEachColumn(self, fn): fn(info, column) for each column in
// order, `self` a table or a const one.
#define MICROSCOPE_VISIT_COLUMN(T, col, ...) \
  fn(ColumnInfo{.name = #col __VA_OPT__(, ) __VA_ARGS__}, self.col);
// And ForEachColumnPair(a, b, fn): fn(info, a's column, b's same column or
// null), `a` and `b` tables of one type (either const).
#define MICROSCOPE_VISIT_COLUMN_PAIR(T, col, ...) \
  fn(ColumnInfo{.name = #col __VA_OPT__(, ) __VA_ARGS__}, a.col, b ? &b->col : nullptr);
// And a table's Row (one value of each column) and Append(row), for those
// who make rows one at a time (the recorder's sources): all columns get a
// value, an optional one too (the source drops it if no row needed it).
#define MICROSCOPE_ROW_FIELD(T, col, ...) T col{};
#define MICROSCOPE_APPEND_FIELD(T, col, ...) col.push_back(row.col);
#define MICROSCOPE_TABLE_VISITOR(COLUMNS)              \
  struct Row {                                         \
    COLUMNS(MICROSCOPE_ROW_FIELD)                      \
  };                                                   \
  void Append(const Row& row) {                        \
    COLUMNS(MICROSCOPE_APPEND_FIELD)                   \
  }                                                    \
  template <typename Self, typename Fn>                \
  static void ForEachColumn(Self& self, Fn&& fn) {     \
    COLUMNS(MICROSCOPE_VISIT_COLUMN)                   \
  }                                                    \
  template <typename A, typename B, typename Fn>       \
  static void ForEachColumnPair(A& a, B* b, Fn&& fn) { \
    COLUMNS(MICROSCOPE_VISIT_COLUMN_PAIR)              \
  }

}  // namespace microscope::capture
