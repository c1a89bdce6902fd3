#include "capture/window.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "capture/columns.h"
#include "capture/id_maps.h"
#include "capture/row_order.h"
#include "capture/stack_interner.h"
#include "capture/string_table.h"

namespace microscope::capture {
namespace {

using namespace ids;  // NOLINT: the renumbering helpers (id_maps.h)

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

template <typename Times>
std::vector<char> Before(const Times& times, uint64_t before) {
  std::vector<char> fate(times.size(), kKeep);
  for (size_t i = 0; i < fate.size(); ++i) fate[i] = times[i] < before ? kMove : kKeep;
  return fate;
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

// Appends the rows of `part` to `out`, column by column (an optional
// column one side lacks filled with its default).
template <typename Table>
void AppendTable(Table& out, const Table& part) {
  const size_t out_rows = out.size(), part_rows = part.size();
  Table::ForEachColumnPair(out, &part, [&](const ColumnInfo& info, auto& to, const auto* from) {
    using T = std::remove_cvref_t<decltype(to[0])>;
    AppendColumn(to, out_rows, *from, part_rows, T(info.fill));
  });
}

// Appends row `i` of `from` to `out` (tables without optional columns).
template <typename Table>
void AppendRow(Table& out, const Table& from, size_t i) {
  Table::ForEachColumnPair(out, &from, [&](const ColumnInfo&, auto& to, const auto* column) {
    to.push_back((*column)[i]);
  });
}

void AppendEventRows(Capture* out, const Capture& p, SpanIndex* spans) {
  AppendTable(out->samples, p.samples);
  AppendTable(out->syscalls, p.syscalls);
  AppendTable(out->off_cpu, p.off_cpu);
  AppendTable(out->probe_records, p.probe_records);
  AppendTable(out->readings, p.readings);
  // Short counts: one row per thread and state, summed over the parts.
  OffCpuShort& sh = out->off_cpu_short;
  for (size_t i = 0; i < p.off_cpu_short.size(); ++i) {
    size_t row = 0;
    while (row < sh.size() && (sh.thread[row] != p.off_cpu_short.thread[i] ||
                               sh.state[row] != p.off_cpu_short.state[i]))
      ++row;
    if (row == sh.size()) {
      AppendRow(sh, p.off_cpu_short, i);
      continue;
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
    AppendRow(l, p.labels, i);
  }
}

}  // namespace

std::vector<uint32_t> TakeEventRows(Capture* live, const TimeCut& cut, Capture* taken) {
  const uint64_t before = cut.before;
  // Each table's fate of its rows first, from its time columns; then every
  // column split alike (TableColumns lists them).
  auto split = [](auto& table, auto* into, const std::vector<char>& fate) {
    std::remove_reference_t<decltype(table)>::ForEachColumnPair(
        table, into,
        [&](const ColumnInfo&, auto& column, auto* to) { SplitColumn(column, fate, to); });
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
  split(live->readings, taken ? &taken->readings : nullptr, Before(live->readings.time, before));
  // Gaps as intervals: a window keeps one that reaches into it.
  std::vector<Gap> kept;
  for (Gap& g : live->gaps) {
    if ((cut.intervals_by_end ? g.end : g.begin) < before) {
      if (taken != nullptr) taken->gaps.push_back(g);
    } else {
      kept.push_back(g);
    }
  }
  live->gaps = std::move(kept);
  return label_index;
}

void SortGaps(std::vector<Gap>* gaps) {
  std::stable_sort(gaps->begin(), gaps->end(),
                   [](const Gap& a, const Gap& b) { return a.begin < b.begin; });
}

void NormalizeEventRows(Capture* c) {
  SortTableBy(c->samples, c->samples.time);
  Syscalls& y = c->syscalls;
  if (std::all_of(y.stack.begin(), y.stack.end(), [](StackId n) { return n == kNone; })) {
    y.stack.clear();
  }
  SortTableBy(y, y.time);
  SortTableBy(c->off_cpu, c->off_cpu.start);
  SortTableBy(c->labels, c->labels.start);
  ProbeRecords& r = c->probe_records;
  if (std::none_of(r.op.begin(), r.op.end(), [](ProbeOp op) { return op == ProbeOp::kCounter; }))
    r.value.clear();
  if (std::none_of(r.op.begin(), r.op.end(), [](ProbeOp op) { return op == ProbeOp::kLabel; }))
    r.text.clear();
  SortTableBy(r, r.time);
  SortTableBy(c->readings, c->readings.time);
}

namespace {

// Merges parts into one capture: each part's dictionaries into the
// merged ones (a row met again is the same row), then its event rows,
// problems and settings in merged terms.
class Merger {
 public:
  explicit Merger(const Settings& first) : strings_(&out_.strings), stacks_(&out_.stacks) {
    out_.settings = first;
    Settings& s = out_.settings;
    s.lost_records = s.lost_samples = 0;
    s.throttles = s.unthrottles = 0;
    s.lost_task_records.reset();
    s.ring_lost_records.reset();
    s.kernel_lost_records.reset();
    s.notes.clear();
  }

  void Add(Capture& p, bool first) {
    IdMaps m;
    for (const std::string& s : p.strings) m.strings.push_back(strings_.Intern(s));
    AddEntities(p, m);
    AddCode(p, m);
    MapEventRefs(&p, m);
    AddProbeSites(p);
    AppendEventRows(&out_, p, &spans_);
    // Imported traces are whole in themselves (no capture ids to renumber).
    for (Trace& t : p.traces) out_.traces.push_back(std::move(t));
    // Gaps name processes by pid: as they are, once each (a snapshot's
    // parts may both hold one that spans their cut).
    for (const Gap& g : p.gaps) {
      if (std::find(out_.gaps.begin(), out_.gaps.end(), g) == out_.gaps.end())
        out_.gaps.push_back(g);
    }
    for (const Problem& pr : p.problems) {
      auto [it, fresh] = problems_.try_emplace(pr.kind, out_.problems.size());
      if (fresh) {
        out_.problems.push_back(pr);
      } else {
        out_.problems[it->second].count += pr.count;
      }
    }
    AddSettings(p.settings, first);
  }

  Capture Take() {
    NormalizeEventRows(&out_);
    SortGaps(&out_.gaps);
    return std::move(out_);
  }

 private:
  // Modules, processes, threads and mappings.
  void AddEntities(const Capture& p, IdMaps& m) {
    for (const Module& mod : p.modules) {
      Module r = Mapped(mod, m);
      auto [it, fresh] = modules_.try_emplace({r.path, r.build_id, uint8_t(r.kind)},
                                              ModuleId(out_.modules.size()));
      if (fresh) out_.modules.push_back(std::move(r));
      m.modules.push_back(it->second);
    }
    for (const Process& proc : p.processes) {
      Process r = Mapped(proc, m);
      auto [it, fresh] = processes_.try_emplace({r.pid, r.start_time}, out_.processes.size());
      if (fresh) {
        out_.processes.push_back(r);
      } else {
        Process& have = out_.processes[it->second];
        have.end_time = std::max(have.end_time, r.end_time);
        if (r.exit_status != -1) have.exit_status = r.exit_status;
        if (have.command == kNone) have.command = r.command;
      }
      m.processes.push_back(it->second);
    }
    for (const Thread& t : p.threads) {
      Thread r = Mapped(t, m);
      auto [it, fresh] =
          threads_.try_emplace({r.tid, r.process, r.start_time}, out_.threads.size());
      if (fresh) {
        out_.threads.push_back(r);
      } else {
        Thread& have = out_.threads[it->second];
        have.end_time = std::max(have.end_time, r.end_time);
        if (r.name != kNone) have.name = r.name;  // the latest name
      }
      m.threads.push_back(it->second);
    }
    for (const Mapping& mapping : p.mappings) {
      Mapping r = Mapped(mapping, m);
      auto [it, fresh] = mappings_.try_emplace(
          {r.process, r.module, r.start, r.end, r.file_offset, r.time_start}, out_.mappings.size());
      if (fresh) {
        out_.mappings.push_back(r);
      } else {
        uint64_t& end = out_.mappings[it->second].time_end;
        end = std::max(end, r.time_end);
      }
    }
  }

  // Functions, frames and stacks.
  void AddCode(const Capture& p, IdMaps& m) {
    for (const Function& f : p.functions) {
      Function r = Mapped(f, m);
      auto [it, fresh] =
          functions_.try_emplace({r.name, r.module, r.raw_name}, out_.functions.size());
      if (fresh) out_.functions.push_back(r);
      m.functions.push_back(it->second);
    }
    for (const Frame& f : p.frames) {
      Frame r = Mapped(f, m);
      auto [it, fresh] = frames_.try_emplace(
          {uint8_t(r.kind), r.module, r.address, r.function, r.file, r.line}, out_.frames.size());
      if (fresh) out_.frames.push_back(r);
      m.frames.push_back(it->second);
    }
    for (size_t i = 0; i < p.stacks.size(); ++i) {
      m.stacks.push_back(
          stacks_.Intern(Map(m.stacks, p.stacks.parent[i]), m.frames[p.stacks.frame[i]]));
    }
  }

  // Probe sites, in merged terms already (MapEventRefs); the records follow them.
  void AddProbeSites(Capture& p) {
    std::vector<uint32_t> site_index;
    const ProbeSites& ps = p.probe_sites;
    for (size_t i = 0; i < ps.size(); ++i) {
      auto [it, fresh] = sites_.try_emplace(
          {uint8_t(ps.kind[i]), ps.name[i], ps.file[i], ps.line[i], ps.module[i]},
          ProbeSiteId(out_.probe_sites.size()));
      if (fresh) AppendRow(out_.probe_sites, ps, i);
      site_index.push_back(it->second);
    }
    MapColumn(p.probe_records.site, site_index);
  }

  void AddSettings(const Settings& s, bool first) {
    Settings& o = out_.settings;
    auto add_optional = [](std::optional<uint64_t>& to, const std::optional<uint64_t>& v) {
      if (v) to = to.value_or(0) + *v;
    };
    o.start_time = std::min(o.start_time, s.start_time);
    o.end_time = std::max(o.end_time, s.end_time);
    o.lost_records += s.lost_records;
    o.lost_samples += s.lost_samples;
    o.throttles += s.throttles;
    o.unthrottles += s.unthrottles;
    add_optional(o.lost_task_records, s.lost_task_records);
    add_optional(o.ring_lost_records, s.ring_lost_records);
    add_optional(o.kernel_lost_records, s.kernel_lost_records);
    for (const std::string& note : s.notes) {
      if (notes_.insert(note).second) o.notes.push_back(note);
    }
    if (first) return;
    for (const BudgetStep& step : s.budget_steps) {
      if (std::find(o.budget_steps.begin(), o.budget_steps.end(), step) == o.budget_steps.end())
        o.budget_steps.push_back(step);
    }
  }

  Capture out_;
  StringTable strings_;
  StackInterner stacks_;
  std::map<std::tuple<uint32_t, std::vector<uint8_t>, uint8_t>, ModuleId> modules_;
  std::map<std::pair<int32_t, uint64_t>, ProcessId> processes_;
  std::map<std::tuple<int32_t, ProcessId, uint64_t>, ThreadId> threads_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, FunctionId> functions_;
  std::map<std::tuple<uint8_t, uint32_t, uint64_t, uint32_t, uint32_t, uint32_t>, FrameId> frames_;
  std::map<std::tuple<ProcessId, ModuleId, uint64_t, uint64_t, uint64_t, uint64_t>, size_t>
      mappings_;
  std::map<std::tuple<uint8_t, uint32_t, uint32_t, uint32_t, uint32_t>, ProbeSiteId> sites_;
  std::map<StringId, size_t> problems_;  // by kind
  SpanIndex spans_;
  std::set<std::string> notes_;
};

}  // namespace

Capture MergeCaptures(std::vector<Capture>&& parts) {
  if (parts.empty()) return Capture();
  Merger merger(parts.front().settings);
  for (Capture& p : parts) {
    merger.Add(p, &p == &parts.front());
    p = Capture();  // each part's memory goes as soon as it is merged
  }
  return merger.Take();
}

}  // namespace microscope::capture
