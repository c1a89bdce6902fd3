#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "analysis/filter.h"
#include "analysis/profile.h"
#include "base/file_policy.h"
#include "base/open_file.h"
#include "capture/container.h"
#include "capture/reader.h"
#include "capture/segments.h"
#include "formats/convert.h"
#include "src/cli/commands.h"
#include "src/cli/filter_options.h"
#include "src/import/perf_data.h"

namespace microscope::cli {
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string to;
  std::string metric;  // empty: analysis::DefaultMetric
  std::string inlines = "on";
  std::string look = "mixed";
  bool native_leaves = false;
  bool per_thread = false;
  std::string max_inflate = "256M";
  // perf.data: where module files may be found besides their recorded paths.
  std::vector<std::string> debug_dirs;
  std::string sysroot;
  FilterOptions filter;
};

int RunConvert(ConvertOptions& o) {
  Status resolved = o.filter.Resolve();
  if (!resolved.ok()) {
    PrintError(resolved.message());
    return 2;
  }
  uint64_t max_inflate = 0;
  if (!ParseSizeOption("--max-inflate", o.max_inflate, &max_inflate)) return 2;
  const bool directory = o.input != "-" && capture::IsDirectory(o.input);
  // "-": standard input (`perf record -o - | microscope convert - ...`).
  auto bytes = directory        ? Result<std::vector<uint8_t>>(std::vector<uint8_t>())
               : o.input == "-" ? ReadWhole(STDIN_FILENO, uint64_t(1) << 34)
                                : ReadRegularFile(o.input, uint64_t(1) << 34);
  if (!bytes.ok()) {
    PrintError(bytes.status().WithContext(o.input).message());
    return 1;
  }
  const std::vector<uint8_t>& in = *bytes;
  bool is_capture =
      directory || (in.size() >= sizeof(capture::kMagic) &&
                    std::memcmp(in.data(), capture::kMagic, sizeof(capture::kMagic)) == 0);
  Result<capture::Capture> cap = Status::Error("");
  if (directory) {
    cap = capture::ReadCaptureOrSegments(o.input);
  } else if (import::IsPerfData(in)) {
    import::PerfDataOptions how;
    how.debug_dirs = o.debug_dirs;
    // perf's own cache of the files it recorded (perf record copies each
    // module there by build ID), after the recorded path.
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/')
      how.perf_cache = std::string(home) + "/.debug";
    how.sysroot = o.sysroot;
    how.max_inflate = max_inflate;
    cap = import::ReadPerfData(in, o.input == "-" ? "standard input" : o.input, how);
  } else if (is_capture) {
    auto payload = capture::DecodeContainer(in);  // the bytes already read, not the path again
    cap = payload.ok() ? capture::ParseCapturePayload(std::move(payload).value())
                       : Result<capture::Capture>(payload.status());
  } else {
    cap = formats::ImportProfile(in, size_t(max_inflate));
  }
  if (!cap.ok()) {
    PrintError((directory ? cap.status() : cap.status().WithContext(o.input)).message());
    return 1;
  }
  if (!is_capture) {
    // An import: the result is a capture unless another format is asked for.
    if (cap->settings.command.empty()) cap->settings.command = {o.input};
    if (formats::ExportFormatFor(o.to, o.output).empty()) o.to = "mscap";
  }
  formats::ExportOptions how;
  how.filter = o.filter.spec;
  how.per_thread = o.per_thread;
  how.metric = analysis::DefaultMetric(*cap);
  if (!o.metric.empty()) analysis::ParseMetric(o.metric, &how.metric);  // checked by CLI11
  how.inlines = o.inlines == "on";
  analysis::ParseLook(o.look, &how.look, o.native_leaves);  // checked by CLI11
  Status written = formats::Export(*cap, formats::ExportFormatFor(o.to, o.output), o.output, how);
  if (!written.ok()) {
    // The writer's own errors (space, permissions) already name the file.
    const bool named = written.message().starts_with(o.output + ": ");
    PrintError((named ? written : written.WithContext(o.output)).message());
    return written.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace

Runner AddConvertCommand(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert a capture to another profiler's format, or import one.\n"
      "  microscope convert run.mscap --to pprof -o run.pb.gz\n"
      "  microscope convert profile.pb.gz -o imported.mscap      (pprof, gzipped or raw)\n"
      "  microscope convert stacks.folded -o imported.mscap      (folded stacks)\n"
      "  microscope convert perf.data -o imported.mscap          (perf record's file)\n"
      "  perf record -o - ... | microscope convert - -o x.mscap  (perf's pipe mode)\n"
      "  perf script > out.txt; microscope convert out.txt -o x.mscap\n"
      "  microscope convert node.cpuprofile -o x.mscap           (node --cpu-prof)\n"
      "Traces of other tools (Chrome trace JSON, PyTorch's): microscope import.\n"
      "What each format cannot carry:\n"
      "  pprof       sample times (samples are aggregated per stack and thread; pid, tid\n"
      "              and thread name are labels), stack end reasons, lost and throttle\n"
      "              counts, problems, the process tree. Keeps functions, build IDs and\n"
      "              file offsets (one mapping per module), values, period, duration.\n"
      "  chrome      modules, build IDs, addresses and per-sample weights: adjacent\n"
      "              samples sharing frames become nested complete events per thread.\n"
      "  folded      time, threads (unless --per-thread), modules, addresses, units:\n"
      "              one 'caller;...;leaf COUNT' line per distinct stack.\n"
      "  speedscope  modules (kept as each frame's file), build IDs, addresses, sample\n"
      "              times (order kept), stack end reasons.\n"
      "Off-CPU intervals (captures recorded with them): pprof gets an off_cpu sample\n"
      "type (state label; -sample_index=off_cpu), chrome an \"off-CPU (state)\" span per\n"
      "interval on its thread's track (waker, state, incomplete, user frame), folded and\n"
      "speedscope follow --metric (folded then counts microseconds, as offcputime -f).\n"
      "Imports keep what the input has: stacks, functions, values, and for pprof the\n"
      "mappings and pid/tid/thread labels; folded input has one thread and counts.\n"
      "perf.data (by its magic, any name; file or pipe mode, zstd with -z): samples of\n"
      "  its first sampling event with their times, CPUs, threads, processes (fork,\n"
      "  exec, exit), mappings and build IDs, lost and throttle counts. fp callchains\n"
      "  are kept as the kernel gave them; --call-graph dwarf stacks are unwound here\n"
      "  by CFI from files proved by build ID (each --debug-dir's .build-id tree,\n"
      "  the recorded path or under --sysroot, then perf's own ~/.debug cache, then\n"
      "  separate debug files by build ID in those directories); a module\n"
      "  found nowhere ends its stack (no unwind info). Frames are then named as\n"
      "  `symbolize` names them; the kernel's only in the recording's boot. Other\n"
      "  events' samples are counted in a note, not imported; a sampled event with\n"
      "  tracepoint data (RAW), READ groups or branch stacks is refused; AUX data and\n"
      "  the fields after the stack copy (weights, data sources) are not read; a\n"
      "  dwarf file recorded on another architecture keeps its kernel callchains only.\n"
      "perf script text: samples with threads, times, the period (nanoseconds for\n"
      "  cpu-clock and task-clock; other events or no period: counts) and frames by\n"
      "  symbol and DSO as printed. Lost: build IDs, mappings, file offsets (frames\n"
      "  cannot be named again), inlines unless perf printed them, process tree,\n"
      "  lost and throttle counts; symbol offsets (+0x..) are dropped.\n"
      ".cpuprofile (V8's: node --cpu-prof, DevTools): each sample's call path, its time\n"
      "  and the time to the next as its weight; functions named with their script\n"
      "  and first line (V8 keeps no line of a sample's own); one thread, no pid.");
  cmd->add_option("input", o->input,
                  "a .mscap capture, a --continuous directory of segments, a perf.data file "
                  "('-': standard input), perf script text, a pprof profile, folded stacks, or a "
                  "V8 .cpuprofile")
      ->required();
  cmd->add_option("-o,--output", o->output, "file to write")->required();
  cmd->add_option("--to", o->to,
                  "pprof, chrome, folded, speedscope, or mscap (default: by -o's name)")
      ->check(CLI::IsMember({"pprof", "chrome", "folded", "speedscope", "mscap"}));
  cmd->add_option("--max-inflate", o->max_inflate,
                  "a gzipped pprof profile may inflate to at most SIZE bytes, whatever the "
                  "file's size (K, M, G suffixes); a perf record -z file to SIZE or 32 times "
                  "its size (up to 4G), whichever is more")
      ->capture_default_str();
  cmd->add_option("--debug-dir", o->debug_dirs,
                  "perf.data: a directory of module and debug files by build ID, as "
                  "symbolize takes it (repeatable; perf's ~/.debug is looked in last)");
  cmd->add_option("--sysroot", o->sysroot, "perf.data: root of the recording host's files");
  cmd->add_flag("--per-thread", o->per_thread, "folded: one stack per thread (the thread first)");
  AddInlinesOption(cmd, &o->inlines);
  AddLookOption(cmd, &o->look, &o->native_leaves);
  cmd->add_option("--metric", o->metric,
                  "cpu, offcpu or wall, as report --metric (default: cpu, or offcpu for a "
                  "capture with off-CPU intervals and no samples)")
      ->check(CLI::IsMember({"cpu", "offcpu", "wall"}));
  o->filter.Register(cmd);
  return [o]() { return RunConvert(*o); };
}

}  // namespace microscope::cli
