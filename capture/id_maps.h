// Renumbering a capture's dictionaries: old index -> new index per
// dictionary, the rewriting of rows through it, and the marks of what kept
// rows need. Shared by the cuts, compaction and merging of parts
// (window.cc, compact.cc); not a public interface.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/capture.h"
#include "capture/columns.h"

namespace microscope::capture::ids {

// Old index -> new index for every dictionary; kNone: dropped (Compact) or
// not yet placed.
struct IdMaps {
  std::vector<uint32_t> strings, modules, processes, threads, functions, frames, stacks;
};

inline uint32_t Map(const std::vector<uint32_t>& m, uint32_t id) {
  return id == kNone ? kNone : m[id];
}

template <typename Col>
void MapColumn(Col& c, const std::vector<uint32_t>& m) {
  for (size_t i = 0; i < c.size(); ++i) c[i] = Map(m, c[i]);
}

// The map of the dictionary that `ref` columns index; null: none changes.
inline const std::vector<uint32_t>* RefMap(const IdMaps& m, Ref ref) {
  switch (ref) {
    case Ref::kString:
      return &m.strings;
    case Ref::kModule:
      return &m.modules;
    case Ref::kThread:
      return &m.threads;
    case Ref::kStack:
      return &m.stacks;
    case Ref::kNone:
    case Ref::kProbeSite:  // sites are renumbered with their records (MergeCaptures)
      break;
  }
  return nullptr;
}

constexpr Ref kDictionaryRefs[] = {Ref::kString, Ref::kModule, Ref::kThread, Ref::kStack};

// Rewrites every reference held by the event tables and problems of `c`
// through `m`.
inline void MapEventRefs(Capture* c, const IdMaps& m) {
  for (Ref ref : kDictionaryRefs) {
    const std::vector<uint32_t>& map = *RefMap(m, ref);
    ForEachRefColumn(*c, ref,
                     [&](const char*, const ColumnInfo&, auto& column) { MapColumn(column, map); });
  }
  for (Problem& p : c->problems) {
    p.kind = Map(m.strings, p.kind);
    p.example = Map(m.strings, p.example);
  }
}

// A dictionary row with its references rewritten through `m`.
inline Module Mapped(Module r, const IdMaps& m) {
  r.path = Map(m.strings, r.path);
  return r;
}
inline Mapping Mapped(Mapping r, const IdMaps& m) {
  r.process = Map(m.processes, r.process);
  r.module = Map(m.modules, r.module);
  return r;
}
inline Process Mapped(Process r, const IdMaps& m) {
  r.command = Map(m.strings, r.command);
  return r;
}
inline Thread Mapped(Thread r, const IdMaps& m) {
  r.process = Map(m.processes, r.process);
  r.name = Map(m.strings, r.name);
  return r;
}
inline Function Mapped(Function r, const IdMaps& m) {
  r.name = Map(m.strings, r.name);
  r.raw_name = Map(m.strings, r.raw_name);
  r.module = Map(m.modules, r.module);
  return r;
}
inline Frame Mapped(Frame r, const IdMaps& m) {
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
  std::vector<char>* Of(Ref ref) {
    switch (ref) {
      case Ref::kString:
        return &strings;
      case Ref::kModule:
        return &modules;
      case Ref::kThread:
        return &threads;
      case Ref::kStack:
        return &stacks;
      case Ref::kNone:
      case Ref::kProbeSite:
        break;
    }
    return nullptr;
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

inline std::vector<uint32_t> Renumber(const std::vector<char>& keep) {
  std::vector<uint32_t> index(keep.size(), kNone);
  uint32_t next = 0;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i]) index[i] = next++;
  }
  return index;
}

}  // namespace microscope::capture::ids
