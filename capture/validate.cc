// ValidateCapture (reader.h): every count, index, range, enum value and
// cross-reference of a capture checked before anyone reads a row, whether
// it came from a file or was made in memory; the event tables by their
// column declarations (columns.h), the dictionaries here.
#include <cmath>
#include <string>

#include "capture/columns.h"
#include "capture/reader.h"
#include "capture/stack_interner.h"

namespace microscope::capture {
namespace {

// Checks that `id` indexes a table of `count` rows (or is kNone when allowed).
Status CheckRef(uint32_t id, size_t count, bool allow_none, const char* table, size_t row,
                const char* field, const char* target) {
  if (id == kNone && allow_none) return OkStatus();
  if (id < count) return OkStatus();
  return Status::Error(Where(table, row, field) + " = " + std::to_string(id) +
                       " is out of range (" + std::to_string(count) + " " + target + ")");
}

// Probe records (2.8), beyond what their columns declare: each record's
// operation one its site's kind records, a counter's value a number, a
// label's value present.
Status ValidateProbes(const Capture& c) {
  const ProbeSites& ps = c.probe_sites;
  const ProbeRecords& r = c.probe_records;
  for (size_t i = 0; i < r.size(); ++i) {
    if (ProbeOpKind(r.op[i]) != ps.kind[r.site[i]]) {
      return Status::Error(Where("probe_records", i, "op") + " is not one a " +
                           ProbeKindName(ps.kind[r.site[i]]) + " site records");
    }
    if (r.op[i] == ProbeOp::kCounter && !std::isfinite(r.ValueAt(i))) {
      return Status::Error(Where("probe_records", i, "value") + " is not a finite number");
    }
    if (r.op[i] == ProbeOp::kLabel && r.TextAt(i) == kNone) {
      return Status::Error(Where("probe_records", i, "text") + " is missing (a label's value)");
    }
  }
  return OkStatus();
}

// Reads column `index` of a verified table (its field at vtable slot 4 + 2
// index, as flatc numbers the fields of tables.h's lists): viewed in place
// for a Column, copied into a vector; absent, empty.

}  // namespace

size_t RefRows(const Capture& c, Ref ref) {
  switch (ref) {
    case Ref::kString:
      return c.strings.size();
    case Ref::kModule:
      return c.modules.size();
    case Ref::kThread:
      return c.threads.size();
    case Ref::kStack:
      return c.stacks.size();
    case Ref::kProbeSite:
      return c.probe_sites.size();
    case Ref::kNone:
      break;
  }
  return 0;
}

const char* RefTable(Ref ref) {
  switch (ref) {
    case Ref::kString:
      return "strings";
    case Ref::kModule:
      return "modules";
    case Ref::kThread:
      return "threads";
    case Ref::kStack:
      return "stacks";
    case Ref::kProbeSite:
      return "probe_sites";
    case Ref::kNone:
      break;
  }
  return "";
}

namespace {

// Modules, mappings, processes, threads, functions and frames: their
// references and kinds.
Status ValidateDictionaries(const Capture& c) {
  const size_t ns = c.strings.size();
  for (size_t i = 0; i < c.modules.size(); ++i) {
    const Module& m = c.modules[i];
    RETURN_IF_ERROR(CheckRef(m.path, ns, false, "modules", i, "path", "strings"));
    if (uint8_t(m.kind) > uint8_t(ModuleKind::kAnonymous)) {
      return Status::Error(Where("modules", i, "kind") + " has unknown value " +
                           std::to_string(int(m.kind)));
    }
    if (m.segments.size() > 256) {
      return Status::Error(Where("modules", i, "segments") + " has " +
                           std::to_string(m.segments.size()) + " rows (at most 256)");
    }
    if (m.build_id.size() > 64) {
      return Status::Error(Where("modules", i, "build_id") + " is " +
                           std::to_string(m.build_id.size()) + " bytes (at most 64)");
    }
  }
  for (size_t i = 0; i < c.mappings.size(); ++i) {
    const Mapping& m = c.mappings[i];
    RETURN_IF_ERROR(
        CheckRef(m.process, c.processes.size(), false, "mappings", i, "process", "processes"));
    RETURN_IF_ERROR(
        CheckRef(m.module, c.modules.size(), false, "mappings", i, "module", "modules"));
    if (m.start >= m.end) {
      return Status::Error(Where("mappings", i, "start") + " is not below its end");
    }
  }
  for (size_t i = 0; i < c.processes.size(); ++i) {
    RETURN_IF_ERROR(
        CheckRef(c.processes[i].command, ns, true, "processes", i, "command", "strings"));
  }
  for (size_t i = 0; i < c.threads.size(); ++i) {
    const Thread& t = c.threads[i];
    RETURN_IF_ERROR(
        CheckRef(t.process, c.processes.size(), false, "threads", i, "process", "processes"));
    RETURN_IF_ERROR(CheckRef(t.name, ns, true, "threads", i, "name", "strings"));
  }
  for (size_t i = 0; i < c.functions.size(); ++i) {
    const Function& f = c.functions[i];
    RETURN_IF_ERROR(CheckRef(f.name, ns, false, "functions", i, "name", "strings"));
    RETURN_IF_ERROR(CheckRef(f.raw_name, ns, true, "functions", i, "raw_name", "strings"));
    RETURN_IF_ERROR(
        CheckRef(f.module, c.modules.size(), true, "functions", i, "module", "modules"));
  }
  for (size_t i = 0; i < c.frames.size(); ++i) {
    const Frame& f = c.frames[i];
    if (uint8_t(f.kind) > uint8_t(FrameKind::kInterpreted)) {
      return Status::Error(Where("frames", i, "kind") + " has unknown value " +
                           std::to_string(int(f.kind)));
    }
    if (f.kind == FrameKind::kInterpreted && (f.function == kNone || f.module != kNone)) {
      return Status::Error(Where("frames", i, "function") +
                           ": an interpreted frame is known by its function, not a module");
    }
    RETURN_IF_ERROR(CheckRef(f.module, c.modules.size(), true, "frames", i, "module", "modules"));
    RETURN_IF_ERROR(
        CheckRef(f.function, c.functions.size(), true, "frames", i, "function", "functions"));
    RETURN_IF_ERROR(CheckRef(f.file, ns, true, "frames", i, "file", "strings"));
  }
  return OkStatus();
}

// Every node's parent is an earlier node, its frame a frame, and no stack
// deeper than kMaxStackDepth.
Status ValidateStacks(const Capture& c) {
  if (c.stacks.parent.size() != c.stacks.frame.size()) {
    return Status::Error("stacks: parent has " + std::to_string(c.stacks.parent.size()) +
                         " rows but frame has " + std::to_string(c.stacks.frame.size()));
  }
  std::vector<uint32_t> depth(c.stacks.size());
  for (size_t i = 0; i < c.stacks.size(); ++i) {
    uint32_t p = c.stacks.parent[i];
    if (p != kNone && p >= i) {
      return Status::Error(Where("stacks", i, "parent") + " = " + std::to_string(p) +
                           " is not an earlier node (a cycle or forward reference)");
    }
    depth[i] = p == kNone ? 1 : depth[p] + 1;
    if (depth[i] > kMaxStackDepth) {
      return Status::Error(Where("stacks", i, "parent") + ": the stack is deeper than " +
                           std::to_string(kMaxStackDepth) + " frames");
    }
    RETURN_IF_ERROR(
        CheckRef(c.stacks.frame[i], c.frames.size(), false, "stacks", i, "frame", "frames"));
  }
  return OkStatus();
}

// (2.11) An imported trace: its columns by their declarations, its
// references into its own strings, tracks and events, kinds known, spans
// ending before the clock wraps, counter values numbers.
Status ValidateTrace(const Capture& c, size_t index) {
  const Trace& t = c.traces[index];
  const std::string at = "traces[" + std::to_string(index) + "]";
  RETURN_IF_ERROR(ValidateTable(c, (at + ".events").c_str(), t.events));
  RETURN_IF_ERROR(ValidateTable(c, (at + ".flows").c_str(), t.flows));
  const size_t ns = t.strings.size();
  const std::string tracks = at + ".tracks";
  for (size_t i = 0; i < t.tracks.size(); ++i) {
    if (uint8_t(t.tracks[i].kind) >= kTraceTrackKindCount) {
      return Status::Error(Where(tracks.c_str(), i, "kind") + " has unknown value " +
                           std::to_string(int(t.tracks[i].kind)));
    }
  }
  const TraceEvents& e = t.events;
  const std::string events = at + ".events";
  const char* en = events.c_str();
  for (size_t i = 0; i < e.size(); ++i) {
    RETURN_IF_ERROR(CheckRef(e.track[i], t.tracks.size(), false, en, i, "track", "tracks"));
    RETURN_IF_ERROR(CheckRef(e.name[i], ns, false, en, i, "name", "strings"));
    RETURN_IF_ERROR(CheckRef(e.CategoryAt(i), ns, true, en, i, "category", "strings"));
    RETURN_IF_ERROR(CheckRef(e.ArgsAt(i), ns, true, en, i, "args", "strings"));
    if (e.start[i] + e.duration[i] < e.start[i]) {
      return Status::Error(Where(en, i, "duration") + " runs past the end of the clock");
    }
    if (e.kind[i] == TraceEventKind::kCounter && !std::isfinite(e.ValueAt(i))) {
      return Status::Error(Where(en, i, "value") + " is not a finite number");
    }
    if (e.DepthAt(i) > kMaxStackDepth) {
      return Status::Error(Where(en, i, "depth") + " is deeper than " +
                           std::to_string(kMaxStackDepth));
    }
  }
  const TraceFlows& f = t.flows;
  const std::string flows = at + ".flows";
  const char* fn = flows.c_str();
  for (size_t i = 0; i < f.size(); ++i) {
    RETURN_IF_ERROR(CheckRef(f.from[i], e.size(), false, fn, i, "from", "events"));
    RETURN_IF_ERROR(CheckRef(f.to[i], e.size(), false, fn, i, "to", "events"));
    RETURN_IF_ERROR(CheckRef(f.name[i], ns, false, fn, i, "name", "strings"));
  }
  return OkStatus();
}

}  // namespace

Status ValidateCapture(const Capture& c) {
  const size_t ns = c.strings.size();
  RETURN_IF_ERROR(ValidateDictionaries(c));
  RETURN_IF_ERROR(ValidateStacks(c));
  // The event tables, each by its columns' declarations (tables.h).
  Status tables = OkStatus();
  ForEachEventTable(c, [&](const char* name, const auto& table) {
    if (tables.ok()) tables = ValidateTable(c, name, table);
  });
  RETURN_IF_ERROR(tables);
  RETURN_IF_ERROR(ValidateProbes(c));
  for (size_t i = 0; i < c.traces.size(); ++i) RETURN_IF_ERROR(ValidateTrace(c, i));
  for (size_t i = 0; i < c.gaps.size(); ++i) {
    const Gap& g = c.gaps[i];
    if (g.cause < GapCause::kLostRecords || g.cause > kLastGapCause)
      return Status::Error(Where("gaps", i, "cause") + " = " + std::to_string(int(g.cause)) +
                           " is not a known cause");
    if (g.end < g.begin) return Status::Error(Where("gaps", i, "end") + " is before its begin");
    if (g.cpu < -1) return Status::Error(Where("gaps", i, "cpu") + " is negative");
    if (g.tid != 0 && g.pid == 0)
      return Status::Error(Where("gaps", i, "tid") + " names a thread of no process");
  }
  for (size_t i = 0; i < c.problems.size(); ++i) {
    RETURN_IF_ERROR(CheckRef(c.problems[i].kind, ns, false, "problems", i, "kind", "strings"));
    RETURN_IF_ERROR(CheckRef(c.problems[i].example, ns, true, "problems", i, "example", "strings"));
  }
  return OkStatus();
}

}  // namespace microscope::capture
