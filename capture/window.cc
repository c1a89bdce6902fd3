#include "capture/window.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "capture/row_order.h"
#include "capture/stack_interner.h"
#include "capture/string_table.h"

namespace microscope::capture {
namespace {

// What a cut does with a row.
enum Fate : char { kKeep = 0, kMove = 1, kCopy = 2 };

// Splits one column by `fate`: rows moved or copied are appended to `*dst`
// (when there is one), rows kept or copied stay. An absent optional column
// (empty while the table has rows) stays absent.
template <typename Col>
void SplitColumn(Col& src, const std::vector<char>& fate, Col* dst) {
  if (src.empty()) return;
  Col kept;
  for (size_t i = 0; i < fate.size(); ++i) {
    if (fate[i] != kKeep && dst != nullptr) dst->push_back(src[i]);
    if (fate[i] != kMove) kept.push_back(src[i]);
  }
  src = std::move(kept);
}

// Calls fn(column of `a`, the same column of `b` or null) for every column
// of an event table: the one list of each table's columns that a cut walks.
template <typename Fn>
void TableColumns(Samples& a, Samples* b, Fn fn) {
  fn(a.time, b ? &b->time : nullptr);
  fn(a.thread, b ? &b->thread : nullptr);
  fn(a.stack, b ? &b->stack : nullptr);
  fn(a.weight, b ? &b->weight : nullptr);
  fn(a.end, b ? &b->end : nullptr);
  fn(a.count, b ? &b->count : nullptr);
}
template <typename Fn>
void TableColumns(Syscalls& a, Syscalls* b, Fn fn) {
  fn(a.time, b ? &b->time : nullptr);
  fn(a.duration, b ? &b->duration : nullptr);
  fn(a.thread, b ? &b->thread : nullptr);
  fn(a.nr, b ? &b->nr : nullptr);
  fn(a.ret, b ? &b->ret : nullptr);
  fn(a.arg0, b ? &b->arg0 : nullptr);
  fn(a.arg1, b ? &b->arg1 : nullptr);
  fn(a.arg2, b ? &b->arg2 : nullptr);
  fn(a.stack, b ? &b->stack : nullptr);
}
template <typename Fn>
void TableColumns(OffCpu& a, OffCpu* b, Fn fn) {
  fn(a.start, b ? &b->start : nullptr);
  fn(a.end, b ? &b->end : nullptr);
  fn(a.thread, b ? &b->thread : nullptr);
  fn(a.stack, b ? &b->stack : nullptr);
  fn(a.stack_end, b ? &b->stack_end : nullptr);
  fn(a.state, b ? &b->state : nullptr);
  fn(a.waker_tid, b ? &b->waker_tid : nullptr);
  fn(a.waker_name, b ? &b->waker_name : nullptr);
  fn(a.flags, b ? &b->flags : nullptr);
}
template <typename Fn>
void TableColumns(LabelSpans& a, LabelSpans* b, Fn fn) {
  fn(a.thread, b ? &b->thread : nullptr);
  fn(a.key, b ? &b->key : nullptr);
  fn(a.value, b ? &b->value : nullptr);
  fn(a.start, b ? &b->start : nullptr);
  fn(a.end, b ? &b->end : nullptr);
}
template <typename Fn>
void TableColumns(ProbeRecords& a, ProbeRecords* b, Fn fn) {
  fn(a.time, b ? &b->time : nullptr);
  fn(a.thread, b ? &b->thread : nullptr);
  fn(a.site, b ? &b->site : nullptr);
  fn(a.op, b ? &b->op : nullptr);
  fn(a.value, b ? &b->value : nullptr);
  fn(a.text, b ? &b->text : nullptr);
}

template <typename Times>
std::vector<char> Before(const Times& times, uint64_t before) {
  std::vector<char> fate(times.size(), kKeep);
  for (size_t i = 0; i < fate.size(); ++i) fate[i] = times[i] < before ? kMove : kKeep;
  return fate;
}

// Old index -> new index for every dictionary; kNone: dropped (Compact) or
// not yet placed.
struct IdMaps {
  std::vector<uint32_t> strings, modules, processes, threads, functions, frames, stacks;
};

uint32_t Map(const std::vector<uint32_t>& m, uint32_t id) {
  return id == kNone ? kNone : m[id];
}

template <typename Col>
void MapColumn(Col& c, const std::vector<uint32_t>& m) {
  for (size_t i = 0; i < c.size(); ++i) c[i] = Map(m, c[i]);
}

// Rewrites every reference held by the event tables, problems and probe
// sites of `c` through `m`.
void MapEventRefs(Capture* c, const IdMaps& m) {
  MapColumn(c->samples.thread, m.threads);
  MapColumn(c->syscalls.thread, m.threads);
  MapColumn(c->off_cpu.thread, m.threads);
  MapColumn(c->off_cpu.waker_name, m.strings);
  MapColumn(c->off_cpu_short.thread, m.threads);
  MapColumn(c->labels.thread, m.threads);
  MapColumn(c->labels.key, m.strings);
  MapColumn(c->labels.value, m.strings);
  MapColumn(c->probe_records.thread, m.threads);
  MapColumn(c->probe_records.text, m.strings);
  ForEachStackColumn(*c, [&](const char*, auto& column) { MapColumn(column, m.stacks); });
  MapColumn(c->probe_sites.name, m.strings);
  MapColumn(c->probe_sites.file, m.strings);
  MapColumn(c->probe_sites.module, m.modules);
  for (Problem& p : c->problems) {
    p.kind = Map(m.strings, p.kind);
    p.example = Map(m.strings, p.example);
  }
}

// A dictionary row with its references rewritten through `m`.
Module Mapped(Module r, const IdMaps& m) {
  r.path = Map(m.strings, r.path);
  return r;
}
Mapping Mapped(Mapping r, const IdMaps& m) {
  r.process = Map(m.processes, r.process);
  r.module = Map(m.modules, r.module);
  return r;
}
Process Mapped(Process r, const IdMaps& m) {
  r.command = Map(m.strings, r.command);
  return r;
}
Thread Mapped(Thread r, const IdMaps& m) {
  r.process = Map(m.processes, r.process);
  r.name = Map(m.strings, r.name);
  return r;
}
Function Mapped(Function r, const IdMaps& m) {
  r.name = Map(m.strings, r.name);
  r.raw_name = Map(m.strings, r.raw_name);
  r.module = Map(m.modules, r.module);
  return r;
}
Frame Mapped(Frame r, const IdMaps& m) {
  r.module = Map(m.modules, r.module);
  r.function = Map(m.functions, r.function);
  r.file = Map(m.strings, r.file);
  return r;
}

// Marks as needed what the kept rows of `c` point at.
struct Needed {
  explicit Needed(const Capture& c)
      : strings(c.strings.size()),
        modules(c.modules.size()),
        processes(c.processes.size()),
        threads(c.threads.size()),
        functions(c.functions.size()),
        frames(c.frames.size()),
        stacks(c.stacks.size()) {}
  static void Mark(std::vector<char>& v, uint32_t id) {
    if (id != kNone) v[id] = 1;
  }
  template <typename Col>
  static void MarkAll(std::vector<char>& v, const Col& c) {
    for (size_t i = 0; i < c.size(); ++i) Mark(v, c[i]);
  }
  std::vector<char> strings, modules, processes, threads, functions, frames, stacks;
};

// Keeps the rows of `rows` marked in `keep`, rewritten through `m`, and
// says in `index` where each went.
template <typename Row>
void KeepRows(std::vector<Row>* rows, const std::vector<char>& keep, const IdMaps& m) {
  std::vector<Row> kept;
  for (size_t i = 0; i < rows->size(); ++i) {
    if (keep[i]) kept.push_back(Mapped((*rows)[i], m));
  }
  *rows = std::move(kept);
}

std::vector<uint32_t> Renumber(const std::vector<char>& keep) {
  std::vector<uint32_t> index(keep.size(), kNone);
  uint32_t next = 0;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i]) index[i] = next++;
  }
  return index;
}

// Appends the event rows of `part` (already mapped) to `out`, filling an
// optional column one side lacks with its default.
template <typename Col, typename T>
void AppendColumn(Col& out, size_t out_rows, const Col& part, size_t part_rows, T fill) {
  if (out.empty() && part.empty()) return;
  if (out.empty()) {
    for (size_t i = 0; i < out_rows; ++i) out.push_back(fill);
  }
  for (size_t i = 0; i < part_rows; ++i) out.push_back(part.empty() ? fill : part[i]);
}

// Label spans of the parts so far by (thread, key, value, start).
using SpanIndex = std::map<std::tuple<ThreadId, StringId, StringId, uint64_t>, size_t>;

void AppendEventRows(Capture* out, const Capture& p, SpanIndex* spans) {
  Samples& s = out->samples;
  const size_t ns = s.size(), ny = out->syscalls.size(), npr = out->probe_records.size();
  for (size_t i = 0; i < p.samples.size(); ++i) {
    s.time.push_back(p.samples.time[i]);
    s.thread.push_back(p.samples.thread[i]);
    s.stack.push_back(p.samples.stack[i]);
    s.weight.push_back(p.samples.weight[i]);
    s.end.push_back(p.samples.end[i]);
  }
  AppendColumn(s.count, ns, p.samples.count, p.samples.size(), uint32_t(1));
  const Syscalls& py = p.syscalls;
  Syscalls& y = out->syscalls;
  y.time.insert(y.time.end(), py.time.begin(), py.time.end());
  y.duration.insert(y.duration.end(), py.duration.begin(), py.duration.end());
  y.thread.insert(y.thread.end(), py.thread.begin(), py.thread.end());
  y.nr.insert(y.nr.end(), py.nr.begin(), py.nr.end());
  y.ret.insert(y.ret.end(), py.ret.begin(), py.ret.end());
  y.arg0.insert(y.arg0.end(), py.arg0.begin(), py.arg0.end());
  y.arg1.insert(y.arg1.end(), py.arg1.begin(), py.arg1.end());
  y.arg2.insert(y.arg2.end(), py.arg2.begin(), py.arg2.end());
  AppendColumn(y.stack, ny, py.stack, py.size(), kNone);
  const OffCpu& po = p.off_cpu;
  OffCpu& o = out->off_cpu;
  auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(o.start, po.start);
  append(o.end, po.end);
  append(o.thread, po.thread);
  append(o.stack, po.stack);
  append(o.stack_end, po.stack_end);
  append(o.state, po.state);
  append(o.waker_tid, po.waker_tid);
  append(o.waker_name, po.waker_name);
  append(o.flags, po.flags);
  // Short counts: one row per thread and state, summed over the parts.
  OffCpuShort& sh = out->off_cpu_short;
  for (size_t i = 0; i < p.off_cpu_short.size(); ++i) {
    size_t row = 0;
    while (row < sh.size() && (sh.thread[row] != p.off_cpu_short.thread[i] ||
                               sh.state[row] != p.off_cpu_short.state[i]))
      ++row;
    if (row == sh.size()) {
      sh.thread.push_back(p.off_cpu_short.thread[i]);
      sh.state.push_back(p.off_cpu_short.state[i]);
      sh.count.push_back(0);
      sh.total.push_back(0);
    }
    sh.count[row] += p.off_cpu_short.count[i];
    sh.total[row] += p.off_cpu_short.total[i];
  }
  // A label span still growing when a part was cut is in the next part
  // too, from the same start: one span, to its latest end.
  LabelSpans& l = out->labels;
  for (size_t i = 0; i < p.labels.size(); ++i) {
    auto [it, fresh] = spans->try_emplace(
        {p.labels.thread[i], p.labels.key[i], p.labels.value[i], p.labels.start[i]}, l.size());
    if (!fresh) {
      l.end[it->second] = std::max(l.end[it->second], p.labels.end[i]);
      continue;
    }
    l.thread.push_back(p.labels.thread[i]);
    l.key.push_back(p.labels.key[i]);
    l.value.push_back(p.labels.value[i]);
    l.start.push_back(p.labels.start[i]);
    l.end.push_back(p.labels.end[i]);
  }
  const ProbeRecords& pr = p.probe_records;
  ProbeRecords& r = out->probe_records;
  append(r.time, pr.time);
  append(r.thread, pr.thread);
  append(r.site, pr.site);
  append(r.op, pr.op);
  AppendColumn(r.value, npr, pr.value, pr.size(), 0.0);
  AppendColumn(r.text, npr, pr.text, pr.size(), kNone);
}

}  // namespace

std::vector<uint32_t> TakeEventRows(Capture* live, const TimeCut& cut, Capture* taken) {
  const uint64_t before = cut.before;
  // Each table's fate of its rows first, from its time columns; then every
  // column split alike (TableColumns lists them).
  auto split = [](auto& table, auto* into, const std::vector<char>& fate) {
    TableColumns(table, into, [&](auto& column, auto* to) { SplitColumn(column, fate, to); });
  };
  split(live->samples, taken ? &taken->samples : nullptr, Before(live->samples.time, before));
  split(live->syscalls, taken ? &taken->syscalls : nullptr, Before(live->syscalls.time, before));

  OffCpu& o = live->off_cpu;
  std::vector<char> fate(o.size(), kKeep);
  for (size_t i = 0; i < o.size(); ++i) {
    // An interval still open (end 0) reaches past any cut.
    const bool before_cut =
        cut.intervals_by_end ? o.end[i] != 0 && o.end[i] < before : o.start[i] < before;
    fate[i] = before_cut ? kMove : kKeep;
  }
  split(o, taken ? &taken->off_cpu : nullptr, fate);

  if (cut.short_counts) {
    if (taken != nullptr) taken->off_cpu_short = std::move(live->off_cpu_short);
    live->off_cpu_short = {};
  }

  LabelSpans& l = live->labels;
  fate.assign(l.size(), kKeep);
  for (size_t i = 0; i < l.size(); ++i) {
    const bool open =
        cut.open_labels != nullptr && i < cut.open_labels->size() && (*cut.open_labels)[i] != 0;
    const bool before_cut = (cut.intervals_by_end ? l.end[i] : l.start[i]) < before;
    // A span still growing stays; a part cut now holds it as it is so far.
    fate[i] = !before_cut ? kKeep : open ? (cut.intervals_by_end ? kKeep : kCopy) : kMove;
  }
  std::vector<uint32_t> label_index(l.size(), kNone);
  uint32_t next = 0;
  for (size_t i = 0; i < fate.size(); ++i) {
    if (fate[i] != kMove) label_index[i] = next++;
  }
  split(l, taken ? &taken->labels : nullptr, fate);
  split(live->probe_records, taken ? &taken->probe_records : nullptr,
        Before(live->probe_records.time, before));
  return label_index;
}

void CompactDictionaries(Capture* c) {
  Needed n(*c);
  Needed::MarkAll(n.threads, c->samples.thread);
  Needed::MarkAll(n.threads, c->syscalls.thread);
  Needed::MarkAll(n.threads, c->off_cpu.thread);
  Needed::MarkAll(n.threads, c->off_cpu_short.thread);
  Needed::MarkAll(n.threads, c->labels.thread);
  Needed::MarkAll(n.threads, c->probe_records.thread);
  ForEachStackColumn(*c,
                     [&](const char*, const auto& column) { Needed::MarkAll(n.stacks, column); });
  // A node's parent is an earlier node: one pass from the end marks them all.
  for (size_t i = c->stacks.size(); i-- > 0;) {
    if (!n.stacks[i]) continue;
    Needed::Mark(n.stacks, c->stacks.parent[i]);
    Needed::Mark(n.frames, c->stacks.frame[i]);
  }
  for (size_t i = 0; i < c->frames.size(); ++i) {
    if (!n.frames[i]) continue;
    const Frame& f = c->frames[i];
    Needed::Mark(n.modules, f.module);
    Needed::Mark(n.functions, f.function);
    Needed::Mark(n.strings, f.file);
  }
  for (size_t i = 0; i < c->functions.size(); ++i) {
    if (!n.functions[i]) continue;
    const Function& f = c->functions[i];
    Needed::Mark(n.strings, f.name);
    Needed::Mark(n.strings, f.raw_name);
    Needed::Mark(n.modules, f.module);
  }
  // Processes and threads that lived in the capture's span stay too, with
  // no row of theirs: a short-lived process still shows with its exit
  // status. (A whole recording keeps every one.)
  const uint64_t from = c->settings.start_time, to = c->settings.end_time;
  auto lived = [&](uint64_t start, uint64_t end) {
    return start <= to && (end == 0 || end >= from);
  };
  for (size_t i = 0; i < c->threads.size(); ++i) {
    if (lived(c->threads[i].start_time, c->threads[i].end_time)) n.threads[i] = 1;
  }
  for (size_t i = 0; i < c->processes.size(); ++i) {
    if (lived(c->processes[i].start_time, c->processes[i].end_time)) n.processes[i] = 1;
  }
  for (size_t i = 0; i < c->threads.size(); ++i) {
    if (!n.threads[i]) continue;
    Needed::Mark(n.processes, c->threads[i].process);
    Needed::Mark(n.strings, c->threads[i].name);
  }
  for (size_t i = 0; i < c->processes.size(); ++i) {
    if (n.processes[i]) Needed::Mark(n.strings, c->processes[i].command);
  }
  std::vector<char> mappings(c->mappings.size());
  for (size_t i = 0; i < c->mappings.size(); ++i) {
    const Mapping& m = c->mappings[i];
    mappings[i] =
        n.processes[m.process] && (m.time_end == 0 || m.time_end >= c->settings.start_time);
    if (mappings[i]) Needed::Mark(n.modules, m.module);
  }
  Needed::MarkAll(n.modules, c->probe_sites.module);
  Needed::MarkAll(n.strings, c->probe_sites.name);
  Needed::MarkAll(n.strings, c->probe_sites.file);
  for (size_t i = 0; i < c->modules.size(); ++i) {
    if (n.modules[i]) Needed::Mark(n.strings, c->modules[i].path);
  }
  Needed::MarkAll(n.strings, c->off_cpu.waker_name);
  Needed::MarkAll(n.strings, c->labels.key);
  Needed::MarkAll(n.strings, c->labels.value);
  Needed::MarkAll(n.strings, c->probe_records.text);
  for (const Problem& p : c->problems) {
    Needed::Mark(n.strings, p.kind);
    Needed::Mark(n.strings, p.example);
  }

  IdMaps m{Renumber(n.strings),   Renumber(n.modules), Renumber(n.processes), Renumber(n.threads),
           Renumber(n.functions), Renumber(n.frames),  Renumber(n.stacks)};
  std::vector<std::string> strings;
  for (size_t i = 0; i < c->strings.size(); ++i) {
    if (n.strings[i]) strings.push_back(std::move(c->strings[i]));
  }
  c->strings = std::move(strings);
  KeepRows(&c->modules, n.modules, m);
  KeepRows(&c->mappings, mappings, m);
  KeepRows(&c->processes, n.processes, m);
  KeepRows(&c->threads, n.threads, m);
  KeepRows(&c->functions, n.functions, m);
  KeepRows(&c->frames, n.frames, m);
  Stacks stacks;
  for (size_t i = 0; i < c->stacks.size(); ++i) {
    if (!n.stacks[i]) continue;
    stacks.parent.push_back(Map(m.stacks, c->stacks.parent[i]));
    stacks.frame.push_back(Map(m.frames, c->stacks.frame[i]));
  }
  c->stacks = std::move(stacks);
  MapEventRefs(c, m);
}

void NormalizeEventRows(Capture* c) {
  Samples& s = c->samples;
  SortRowsBy(s.time, s.time, s.thread, s.stack, s.weight, s.end, s.count);
  Syscalls& y = c->syscalls;
  if (std::all_of(y.stack.begin(), y.stack.end(), [](StackId n) { return n == kNone; })) {
    y.stack.clear();
  }
  SortRowsBy(y.time, y.time, y.duration, y.arg0, y.arg1, y.arg2, y.thread, y.nr, y.ret, y.stack);
  OffCpu& o = c->off_cpu;
  SortRowsBy(o.start, o.start, o.end, o.thread, o.stack, o.stack_end, o.state, o.waker_tid,
             o.waker_name, o.flags);
  LabelSpans& l = c->labels;
  SortRowsBy(l.start, l.start, l.end, l.thread, l.key, l.value);
  ProbeRecords& r = c->probe_records;
  if (std::none_of(r.op.begin(), r.op.end(), [](ProbeOp op) { return op == ProbeOp::kCounter; }))
    r.value.clear();
  if (std::none_of(r.op.begin(), r.op.end(), [](ProbeOp op) { return op == ProbeOp::kLabel; }))
    r.text.clear();
  SortRowsBy(r.time, r.time, r.thread, r.site, r.op, r.value, r.text);
}

Capture MergeCaptures(std::vector<Capture>&& parts) {
  Capture out;
  if (parts.empty()) return out;
  out.settings = parts.front().settings;
  out.settings.lost_records = out.settings.lost_samples = 0;
  out.settings.throttles = out.settings.unthrottles = 0;
  out.settings.lost_task_records.reset();
  out.settings.ring_lost_records.reset();
  out.settings.kernel_lost_records.reset();
  out.settings.notes.clear();
  StringTable strings(&out.strings);
  StackInterner stacks(&out.stacks);
  std::map<std::tuple<uint32_t, std::vector<uint8_t>, uint8_t>, ModuleId> modules;
  std::map<std::pair<int32_t, uint64_t>, ProcessId> processes;
  std::map<std::tuple<int32_t, ProcessId, uint64_t>, ThreadId> threads;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, FunctionId> functions;
  std::map<std::tuple<uint8_t, uint32_t, uint64_t, uint32_t, uint32_t, uint32_t>, FrameId> frames;
  std::map<std::tuple<ProcessId, ModuleId, uint64_t, uint64_t, uint64_t, uint64_t>, size_t>
      mappings;
  std::map<std::tuple<uint8_t, uint32_t, uint32_t, uint32_t, uint32_t>, ProbeSiteId> sites;
  std::map<StringId, size_t> problems;  // by kind
  SpanIndex spans;
  std::set<std::string> notes;
  auto add_optional = [](std::optional<uint64_t>& to, const std::optional<uint64_t>& v) {
    if (v) to = to.value_or(0) + *v;
  };
  for (Capture& p : parts) {
    IdMaps m;
    for (const std::string& s : p.strings) m.strings.push_back(strings.Intern(s));
    for (const Module& mod : p.modules) {
      Module r = Mapped(mod, m);
      auto [it, fresh] =
          modules.try_emplace({r.path, r.build_id, uint8_t(r.kind)}, ModuleId(out.modules.size()));
      if (fresh) out.modules.push_back(std::move(r));
      m.modules.push_back(it->second);
    }
    for (const Process& proc : p.processes) {
      Process r = Mapped(proc, m);
      auto [it, fresh] = processes.try_emplace({r.pid, r.start_time}, out.processes.size());
      if (fresh) {
        out.processes.push_back(r);
      } else {
        Process& have = out.processes[it->second];
        have.end_time = std::max(have.end_time, r.end_time);
        if (r.exit_status != -1) have.exit_status = r.exit_status;
        if (have.command == kNone) have.command = r.command;
      }
      m.processes.push_back(it->second);
    }
    for (const Thread& t : p.threads) {
      Thread r = Mapped(t, m);
      auto [it, fresh] = threads.try_emplace({r.tid, r.process, r.start_time}, out.threads.size());
      if (fresh) {
        out.threads.push_back(r);
      } else {
        Thread& have = out.threads[it->second];
        have.end_time = std::max(have.end_time, r.end_time);
        if (r.name != kNone) have.name = r.name;  // the latest name
      }
      m.threads.push_back(it->second);
    }
    for (const Mapping& mapping : p.mappings) {
      Mapping r = Mapped(mapping, m);
      auto [it, fresh] = mappings.try_emplace(
          {r.process, r.module, r.start, r.end, r.file_offset, r.time_start}, out.mappings.size());
      if (fresh) {
        out.mappings.push_back(r);
      } else {
        uint64_t& end = out.mappings[it->second].time_end;
        end = std::max(end, r.time_end);
      }
    }
    for (const Function& f : p.functions) {
      Function r = Mapped(f, m);
      auto [it, fresh] =
          functions.try_emplace({r.name, r.module, r.raw_name}, out.functions.size());
      if (fresh) out.functions.push_back(r);
      m.functions.push_back(it->second);
    }
    for (const Frame& f : p.frames) {
      Frame r = Mapped(f, m);
      auto [it, fresh] = frames.try_emplace(
          {uint8_t(r.kind), r.module, r.address, r.function, r.file, r.line}, out.frames.size());
      if (fresh) out.frames.push_back(r);
      m.frames.push_back(it->second);
    }
    for (size_t i = 0; i < p.stacks.size(); ++i) {
      m.stacks.push_back(
          stacks.Intern(Map(m.stacks, p.stacks.parent[i]), m.frames[p.stacks.frame[i]]));
    }
    MapEventRefs(&p, m);
    // Probe sites, now in merged terms; the records follow them.
    std::vector<uint32_t> site_index;
    const ProbeSites& ps = p.probe_sites;
    for (size_t i = 0; i < ps.size(); ++i) {
      auto [it, fresh] =
          sites.try_emplace({uint8_t(ps.kind[i]), ps.name[i], ps.file[i], ps.line[i], ps.module[i]},
                            ProbeSiteId(out.probe_sites.size()));
      if (fresh) {
        out.probe_sites.kind.push_back(ps.kind[i]);
        out.probe_sites.name.push_back(ps.name[i]);
        out.probe_sites.file.push_back(ps.file[i]);
        out.probe_sites.line.push_back(ps.line[i]);
        out.probe_sites.module.push_back(ps.module[i]);
      }
      site_index.push_back(it->second);
    }
    MapColumn(p.probe_records.site, site_index);
    AppendEventRows(&out, p, &spans);
    for (const Problem& pr : p.problems) {
      auto [it, fresh] = problems.try_emplace(pr.kind, out.problems.size());
      if (fresh) {
        out.problems.push_back(pr);
      } else {
        out.problems[it->second].count += pr.count;
      }
    }
    const Settings& s = p.settings;
    out.settings.start_time = std::min(out.settings.start_time, s.start_time);
    out.settings.end_time = std::max(out.settings.end_time, s.end_time);
    out.settings.lost_records += s.lost_records;
    out.settings.lost_samples += s.lost_samples;
    out.settings.throttles += s.throttles;
    out.settings.unthrottles += s.unthrottles;
    add_optional(out.settings.lost_task_records, s.lost_task_records);
    add_optional(out.settings.ring_lost_records, s.ring_lost_records);
    add_optional(out.settings.kernel_lost_records, s.kernel_lost_records);
    for (const std::string& note : s.notes) {
      if (notes.insert(note).second) out.settings.notes.push_back(note);
    }
    if (&p != &parts.front()) {
      for (const BudgetStep& step : s.budget_steps) {
        if (std::find(out.settings.budget_steps.begin(), out.settings.budget_steps.end(), step) ==
            out.settings.budget_steps.end())
          out.settings.budget_steps.push_back(step);
      }
    }
    p = Capture();  // each part's memory goes as soon as it is merged
  }
  NormalizeEventRows(&out);
  return out;
}

}  // namespace microscope::capture
