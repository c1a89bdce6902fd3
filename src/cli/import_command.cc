// microscope import TRACE... --into CAPTURE: other tools' traces (Chrome
// trace JSON, PyTorch's Kineto) onto a capture's timeline, as tracks of
// their own beside the rows microscope measured.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/presentation.h"
#include "base/clock.h"
#include "base/duration.h"
#include "base/open_file.h"
#include "base/plural.h"
#include "base/sha256.h"
#include "capture/reader.h"
#include "capture/segments.h"
#include "capture/writer.h"
#include "formats/trace_json.h"
#include "formats/trace_place.h"
#include "src/cli/commands.h"

namespace microscope::cli {
namespace {

struct ImportOptions {
  std::vector<std::string> traces;
  std::string into;
  std::string output;
  std::string anchor;
  std::string offset;
  std::string clock;
  std::vector<std::string> maps;
  std::string max_inflate = "4G";
};

// --offset TIME, which may be negative: "-250ms".
bool ParseOffset(const std::string& text, int64_t* out) {
  const bool negative = !text.empty() && text[0] == '-';
  Result<uint64_t> ns = ParseDuration(negative ? text.substr(1) : text);
  if (!ns.ok() || *ns > uint64_t(INT64_MAX)) {
    PrintError("--offset " + text + ": " +
               (ns.ok() ? std::string("too large") : ns.status().message()));
    return false;
  }
  *out = negative ? -int64_t(*ns) : int64_t(*ns);
  return true;
}

std::string Summary(const capture::Trace& t) {
  std::string s =
      std::to_string(t.events.size()) + " events on " + Counted(t.tracks.size(), "track");
  if (t.flows.size() > 0) s += ", " + Counted(t.flows.size(), "flow");
  s += "; " + t.clock_note;
  if (t.uncertainty) s += " (within " + analysis::Duration(*t.uncertainty) + ")";
  size_t mapped = 0;
  for (const capture::TraceTrack& k : t.tracks) mapped += k.pid != 0;
  if (mapped > 0) s += "; " + Counted(mapped, "track") + " on the capture's processes";
  return s;
}

int RunImport(const ImportOptions& o) {
  uint64_t max_inflate = 0;
  if (!ParseSizeOption("--max-inflate", o.max_inflate, &max_inflate)) return 2;
  formats::PlaceOptions place;
  place.anchor = o.anchor;
  place.clock = o.clock;
  if (!o.offset.empty()) {
    int64_t offset = 0;
    if (!ParseOffset(o.offset, &offset)) return 2;
    place.offset = offset;
  }
  for (const std::string& m : o.maps) {
    Result<formats::TraceMap> map = formats::ParseTraceMap(m);
    if (!map.ok()) {
      PrintError(map.status().message());
      return 2;
    }
    place.maps.push_back(*map);
  }
  if (capture::IsDirectory(o.into)) {
    PrintError(o.into + ": a directory of segments; import into one capture file (convert " +
               "merges a directory into one)");
    return 2;
  }
  Result<capture::Capture> cap = capture::ReadCapture(o.into);
  if (!cap.ok()) {
    PrintError(cap.status().WithContext(o.into).message());
    return 1;
  }
  formats::TraceJsonLimits limits;
  limits.max_bytes = max_inflate;
  for (const std::string& path : o.traces) {
    Result<std::vector<uint8_t>> bytes = ReadRegularFile(path, uint64_t(1) << 34);
    if (!bytes.ok()) {
      PrintError(bytes.status().WithContext(path).message());
      return 1;
    }
    if (!formats::LooksLikeTraceJson(*bytes)) {
      PrintError(path + ": not a trace this command reads (Chrome trace JSON, as Chrome, " +
                 "Perfetto and PyTorch's profiler write it; gzipped or not)");
      return 1;
    }
    Result<formats::ParsedTrace> parsed = formats::ReadTraceJson(*bytes, limits);
    if (!parsed.ok()) {
      PrintError(parsed.status().WithContext(path).message());
      return 1;
    }
    place.path = path;
    place.digest = Sha256Hex(*bytes);
    place.imported_at = RealtimeNowNs();
    Result<capture::Trace> trace = formats::PlaceTrace(*cap, std::move(parsed).value(), place);
    if (!trace.ok()) {
      PrintError(trace.status().WithContext(path).message());
      return trace.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    fprintf(stderr, "microscope: %s: %s\n", path.c_str(), Summary(*trace).c_str());
    for (const std::string& note : trace->notes)
      fprintf(stderr, "microscope: %s: note: %s\n", path.c_str(), note.c_str());
    cap->traces.push_back(std::move(trace).value());
  }
  Status valid = capture::ValidateCapture(*cap);
  if (!valid.ok()) {
    PrintError("the capture with the traces fails its own checks: " + valid.message());
    return 1;
  }
  const std::string& out = o.output.empty() ? o.into : o.output;
  Status written = capture::WriteCapture(*cap, out);
  if (!written.ok()) {
    PrintError(written.WithContext(out).message());
    return 1;
  }
  return 0;
}

}  // namespace

Runner AddImportCommand(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Put other tools' traces (Chrome trace JSON, PyTorch's profiler) on a capture's timeline.");
  cmd->footer(
      "Each trace becomes tracks of its own (spans, instants, counters, flows), kept apart\n"
      "from what microscope measured, with its file's path and SHA-256; a trace already in\n"
      "the capture is refused. Its times are placed by the first that applies:\n"
      "  --anchor NAME   an event of the trace and a probes mark (or zone) of the capture\n"
      "                  with that name (the program marks when it starts its profiler)\n"
      "  --offset TIME   the trace's zero this long after the recording's start\n"
      "  --clock C       its times are CLOCK_MONOTONIC (Chrome, Node) or realtime\n"
      "  baseTimeNanoseconds, when the trace states it (PyTorch's Kineto)\n"
      "else it stays on its own axis, and says so. Tracks whose pid and tid the capture\n"
      "has are its processes' and threads'; --map names others.");
  cmd->add_option("trace", o->traces, "Chrome trace JSON files (.json, .json.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--into", o->into, "the capture (.mscap) to add them to")->required();
  cmd->add_option("-o,--output", o->output,
                  "write the capture with them here (default: replace --into, atomically)");
  cmd->add_option("--anchor", o->anchor,
                  "place the trace by an event name it shares with a probes mark of the capture");
  cmd->add_option("--offset", o->offset,
                  "place the trace's zero this long after the recording's start (may be "
                  "negative: -20ms)");
  cmd->add_option("--clock", o->clock, "the trace's times are this clock's")
      ->check(CLI::IsMember({"monotonic", "realtime", "own-axis"}));
  cmd->add_option("--map", o->maps,
                  "NAME=PID[:TID]: the trace's process NAME (its pid as the trace spells it; "
                  "NAME/TID for one thread) is the capture's process PID (thread TID)");
  cmd->add_option("--max-inflate", o->max_inflate,
                  "largest JSON text read (a gzipped trace: inflated)");
  return [o] { return RunImport(*o); };
}

}  // namespace microscope::cli
