// compact.h: a part's dictionaries cut down to the rows it needs, and a live
// capture's entities that ended before a cut dropped.
#include "capture/compact.h"

#include "capture/columns.h"
#include "capture/id_maps.h"

namespace microscope::capture {
namespace {

using ids::IdMaps;
using ids::Map;
using ids::Needed;

// The stacks needed mark their parents and frames, the frames their
// modules, functions and files, the functions their names and modules.
void MarkCode(const Capture& cap, Needed& n) {
  const Capture* c = &cap;
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
}

// Processes, threads, mappings (returned: which are kept) and modules
// needed, and the strings they name.
std::vector<char> MarkEntities(const Capture& cap, uint64_t from, uint64_t to, Needed& n) {
  const Capture* c = &cap;
  // Processes and threads that lived in [from, to] stay too, with no row
  // of theirs: a short-lived process still shows with its exit status. (A
  // whole recording keeps every one.)
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
    mappings[i] = n.processes[m.process] && (m.time_end == 0 || m.time_end >= from);
    if (mappings[i]) Needed::Mark(n.modules, m.module);
  }
  for (size_t i = 0; i < c->modules.size(); ++i) {
    if (n.modules[i]) Needed::Mark(n.strings, c->modules[i].path);
  }
  return mappings;
}

// Keeps in place the rows of `rows` marked in `marks`, each rewritten by
// `rewrite`.
template <typename Rows, typename Rewrite>
void KeepInPlace(Rows& rows, const std::vector<char>& marks, Rewrite rewrite) {
  size_t next = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!marks[i]) continue;
    rows[next] = rows[i];
    rewrite(rows[next]);
    ++next;
  }
  rows.resize(next);
}

// Marks what the event tables (probe sites among them) and problems of
// `rows` reference, as ids of `dicts`.
void MarkEventRefs(const Capture& rows, Needed& n) {
  for (Ref ref : ids::kDictionaryRefs) {
    std::vector<char>& needed = *n.Of(ref);
    ForEachRefColumn(rows, ref, [&](const char*, const ColumnInfo&, const auto& column) {
      Needed::MarkAll(needed, column);
    });
  }
  for (const Problem& p : rows.problems) {
    Needed::Mark(n.strings, p.kind);
    Needed::Mark(n.strings, p.example);
  }
}

// The rows of `from` marked in `keep`, rewritten through `m`.
template <typename Row>
std::vector<Row> CopyRows(const std::vector<Row>& from, const std::vector<char>& keep,
                          const IdMaps& m) {
  std::vector<Row> kept;
  for (size_t i = 0; i < from.size(); ++i) {
    if (keep[i]) kept.push_back(ids::Mapped(from[i], m));
  }
  return kept;
}

// Gives `out` the rows of `dicts`' dictionaries marked in `n` and `mappings`,
// renumbered in their order, and rewrites the references of `out`'s event
// rows and problems to them. `out` may be `dicts` itself.
void KeepMarked(const Capture& dicts, const Needed& n, const std::vector<char>& mappings,
                Capture* out) {
  IdMaps m{ids::Renumber(n.strings), ids::Renumber(n.modules),   ids::Renumber(n.processes),
           ids::Renumber(n.threads), ids::Renumber(n.functions), ids::Renumber(n.frames),
           ids::Renumber(n.stacks)};
  std::vector<std::string> strings;
  for (size_t i = 0; i < dicts.strings.size(); ++i) {
    // In place (out is dicts), the kept strings move rather than copy.
    if (n.strings[i])
      strings.push_back(&dicts == out ? std::move(out->strings[i]) : dicts.strings[i]);
  }
  std::vector<Module> modules = CopyRows(dicts.modules, n.modules, m);
  std::vector<Mapping> kept_mappings = CopyRows(dicts.mappings, mappings, m);
  std::vector<Process> processes = CopyRows(dicts.processes, n.processes, m);
  std::vector<Thread> threads = CopyRows(dicts.threads, n.threads, m);
  std::vector<Function> functions = CopyRows(dicts.functions, n.functions, m);
  std::vector<Frame> frames = CopyRows(dicts.frames, n.frames, m);
  Stacks stacks;
  for (size_t i = 0; i < dicts.stacks.size(); ++i) {
    if (!n.stacks[i]) continue;
    stacks.parent.push_back(Map(m.stacks, dicts.stacks.parent[i]));
    stacks.frame.push_back(Map(m.frames, dicts.stacks.frame[i]));
  }
  out->strings = std::move(strings);
  out->modules = std::move(modules);
  out->mappings = std::move(kept_mappings);
  out->processes = std::move(processes);
  out->threads = std::move(threads);
  out->functions = std::move(functions);
  out->frames = std::move(frames);
  out->stacks = std::move(stacks);
  ids::MapEventRefs(out, m);
}

}  // namespace

void CompactDictionaries(Capture* c) {
  Needed n(*c);
  MarkEventRefs(*c, n);
  MarkCode(*c, n);
  const std::vector<char> mappings =
      MarkEntities(*c, c->settings.start_time, c->settings.end_time, n);
  KeepMarked(*c, n, mappings, c);
}

void CopyNeededDictionaries(const Capture& dicts, uint64_t from, uint64_t to, Capture* part) {
  Needed n(dicts);
  MarkEventRefs(*part, n);
  MarkCode(dicts, n);
  const std::vector<char> mappings = MarkEntities(dicts, from, to, n);
  KeepMarked(dicts, n, mappings, part);
}

EntityRenumbering DropEndedEntities(Capture* live, uint64_t before, const EntityPins& pins) {
  auto ended = [before](uint64_t end) { return end != 0 && end < before; };
  auto pinned = [](const std::vector<char>& marks, size_t i) {
    return i < marks.size() && marks[i] != 0;
  };
  std::vector<char> threads(live->threads.size()), processes(live->processes.size()),
      mappings(live->mappings.size());
  ForEachRefColumn(*live, Ref::kThread, [&](const char*, const ColumnInfo&, const auto& column) {
    Needed::MarkAll(threads, column);
  });
  for (size_t i = 0; i < threads.size(); ++i) {
    const Thread& t = live->threads[i];
    if (threads[i] || !ended(t.end_time) || pinned(pins.threads, i)) {
      threads[i] = 1;
      Needed::Mark(processes, t.process);
    }
  }
  for (size_t i = 0; i < mappings.size(); ++i) {
    const Mapping& m = live->mappings[i];
    if (!ended(m.time_end) || pinned(pins.mappings, i)) {
      mappings[i] = 1;
      Needed::Mark(processes, m.process);
    }
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    if (!ended(live->processes[i].end_time) || pinned(pins.processes, i)) processes[i] = 1;
  }
  // Dropped processes had no kept thread or mapping; code dictionaries stay.
  IdMaps m;
  m.processes = ids::Renumber(processes);
  m.threads = ids::Renumber(threads);
  KeepInPlace(live->threads, threads, [&](Thread& t) { t.process = Map(m.processes, t.process); });
  KeepInPlace(live->mappings, mappings,
              [&](Mapping& r) { r.process = Map(m.processes, r.process); });
  KeepInPlace(live->processes, processes, [](Process&) {});
  ForEachRefColumn(*live, Ref::kThread, [&](const char*, const ColumnInfo&, auto& column) {
    ids::MapColumn(column, m.threads);
  });
  return {std::move(m.processes), std::move(m.threads), ids::Renumber(mappings)};
}

CodeRenumbering DropUnusedCode(Capture* live) {
  Needed n(*live);
  ForEachRefColumn(*live, Ref::kStack, [&](const char*, const ColumnInfo&, const auto& column) {
    Needed::MarkAll(n.stacks, column);
  });
  MarkCode(*live, n);
  CodeRenumbering r{ids::Renumber(n.functions), ids::Renumber(n.frames), ids::Renumber(n.stacks)};
  KeepInPlace(live->functions, n.functions, [](Function&) {});
  KeepInPlace(live->frames, n.frames, [&](Frame& f) { f.function = Map(r.functions, f.function); });
  Stacks& st = live->stacks;
  size_t next = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    if (!n.stacks[i]) continue;
    st.parent[next] = Map(r.stacks, st.parent[i]);
    st.frame[next] = Map(r.frames, st.frame[i]);
    ++next;
  }
  st.parent.resize(next);
  st.frame.resize(next);
  ForEachRefColumn(*live, Ref::kStack, [&](const char*, const ColumnInfo&, auto& column) {
    ids::MapColumn(column, r.stacks);
  });
  return r;
}

}  // namespace microscope::capture
