// A capture's dictionaries (strings, modules, mappings, processes, threads,
// functions, frames, stacks) cut down to what its rows need: a part made to
// stand alone, and a live recording's generations, whose dictionaries lose
// at each cut the threads, processes and mappings that ended before it.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/capture.h"

namespace microscope::capture {

// Drops every dictionary row (string, module, mapping, process, thread,
// function, frame, stack node) that no event row, problem or probe site
// needs, and renumbers the rest in their order. Processes and threads that
// lived in [settings.start_time, settings.end_time] stay, and a mapping
// stays while its process does and it was mapped at some time in the span.
void CompactDictionaries(Capture* c);

// Gives `part`, whose event rows, probe sites and problems reference the
// dictionaries of `dicts`, copies of only the dictionary rows they need
// (and the processes, threads and mappings that lived in [from, to], as
// CompactDictionaries keeps), renumbered, its references rewritten: a cut
// reads the live dictionaries and copies no row it does not need.
void CopyNeededDictionaries(const Capture& dicts, uint64_t from, uint64_t to, Capture* part);

// Old row -> new row (kNone: dropped) of the tables DropEndedEntities cuts.
struct EntityRenumbering {
  std::vector<uint32_t> processes, threads, mappings;
};

// Rows a caller still points at, which stay (by row; shorter: not pinned).
struct EntityPins {
  std::vector<char> processes, threads, mappings;
};

// Ends a generation of a live capture at a cut: drops the threads,
// processes and mappings that ended before `before` and that no event row
// left in `live`, kept thread or kept mapping references, nor `pins`,
// renumbers the rest in their order and rewrites every reference to them.
// The code dictionaries and strings stay: they grow with the program's
// code, not with its tasks.
EntityRenumbering DropEndedEntities(Capture* live, uint64_t before, const EntityPins& pins);

// Old row -> new row (kNone: dropped) of the tables DropUnusedCode cuts.
struct CodeRenumbering {
  std::vector<uint32_t> functions, frames, stacks;
};

// `id` renumbered by `ids` (kNone stays kNone).
inline uint32_t Renumbered(const std::vector<uint32_t>& ids, uint32_t id) {
  return id == kNone ? kNone : ids[id];
}

// A cache whose values are rows renumbered by `ids`: the values rewritten,
// the entries whose row was dropped erased.
template <typename Map>
void RenumberValues(Map& cache, const std::vector<uint32_t>& ids) {
  for (auto it = cache.begin(); it != cache.end();) {
    if (ids[it->second] == kNone) {
      it = cache.erase(it);
    } else {
      it->second = ids[it->second];
      ++it;
    }
  }
}

// The rest of a generation's end: drops the stack nodes, frames and
// functions that no event row left in `live` needs, renumbers the rest in
// their order and rewrites every reference to them. Strings and modules
// stay (strings are text met again; a module is one per file).
CodeRenumbering DropUnusedCode(Capture* live);

}  // namespace microscope::capture
