#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "analysis/filter.h"
#include "analysis/keys.h"
#include "capture/container.h"
#include "capture/reader.h"
#include "capture/writer.h"
#include "formats/chrome.h"
#include "formats/folded.h"
#include "formats/gzip.h"
#include "formats/pprof.h"
#include "formats/speedscope.h"
#include "src/cli/commands.h"
#include "src/cli/filter_options.h"

namespace microscope::cli {
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string to;
  bool per_thread = false;
  FilterOptions filter;
};

Result<std::vector<uint8_t>> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(std::string("cannot open: ") + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return bytes;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The export format from --to, or from the output's name.
std::string ExportFormat(const ConvertOptions& o) {
  if (!o.to.empty()) return o.to;
  if (EndsWith(o.output, ".pb.gz") || EndsWith(o.output, ".pb")) return "pprof";
  if (EndsWith(o.output, ".speedscope.json")) return "speedscope";
  if (EndsWith(o.output, ".json")) return "chrome";
  if (EndsWith(o.output, ".folded") || EndsWith(o.output, ".txt")) return "folded";
  return "";
}

Status Export(const ConvertOptions& o, const capture::Capture& cap) {
  std::string format = ExportFormat(o);
  if (format.empty()) {
    return Status::Error("say which format to write: --to pprof|chrome|folded|speedscope");
  }
  if (format == "mscap") {
    if (!o.filter.spec.empty()) {
      return Status::Error(
          "filters apply to exports, not to an imported capture (filter it in report)");
    }
    return capture::WriteCapture(cap, o.output);
  }
  analysis::FunctionKeys keys(cap);
  ASSIGN_OR_RETURN(analysis::SampleFilter filter,
                   analysis::SampleFilter::Make(cap, keys, o.filter.spec));
  if (format == "chrome" || format == "speedscope") {
    // Large outputs: streamed into the temporary file.
    ASSIGN_OR_RETURN(std::unique_ptr<capture::AtomicFile> file,
                     capture::AtomicFile::Create(o.output));
    if (format == "chrome") {
      formats::WriteChromeTrace(file->stream(), cap, keys, filter);
    } else {
      formats::WriteSpeedscope(file->stream(), cap, keys, filter);
    }
    return file->Commit();
  }
  std::vector<uint8_t> bytes;
  if (format == "pprof") {
    bytes = formats::WritePprof(cap, filter);
  } else {
    std::string text = formats::WriteFolded(cap, keys, filter, o.per_thread);
    bytes.assign(text.begin(), text.end());
  }
  return capture::WriteFileAtomically(o.output, bytes);
}

int RunConvert(ConvertOptions& o) {
  Status resolved = o.filter.Resolve();
  if (!resolved.ok()) {
    PrintError(resolved.message());
    return 2;
  }
  auto bytes = Slurp(o.input);
  if (!bytes.ok()) {
    PrintError(bytes.status().WithContext(o.input).message());
    return 1;
  }
  const std::vector<uint8_t>& in = *bytes;
  bool is_capture = in.size() >= sizeof(capture::kMagic) &&
                    std::memcmp(in.data(), capture::kMagic, sizeof(capture::kMagic)) == 0;
  // Folded stacks are text; a raw (not gzipped) pprof Profile is binary.
  auto looks_like_text = [&]() {
    for (size_t i = 0; i < in.size() && i < 4096; ++i) {
      uint8_t b = in[i];
      if (b < 0x20 && b != '\n' && b != '\r' && b != '\t') return false;
    }
    return true;
  };
  Result<capture::Capture> cap = Status::Error("");
  if (is_capture) {
    auto payload = capture::DecodeContainer(in);  // the bytes already read, not the path again
    cap = payload.ok() ? capture::ParseCapturePayload(std::move(payload).value())
                       : Result<capture::Capture>(payload.status());
  } else if (formats::IsGzip(in) || !looks_like_text()) {
    cap = formats::ReadPprof(in);
  } else {
    cap =
        formats::ReadFolded(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
  }
  if (!cap.ok()) {
    PrintError(cap.status().WithContext(o.input).message());
    return 1;
  }
  if (!is_capture) {
    // An import: the result is a capture unless another format is asked for.
    cap->settings.command = {o.input};
    if (o.to.empty() && ExportFormat(o).empty()) o.to = "mscap";
  }
  Status written = Export(o, *cap);
  if (!written.ok()) {
    PrintError(written.WithContext(o.output).message());
    return 1;
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
      "Imports keep what the input has: stacks, functions, values, and for pprof the\n"
      "mappings and pid/tid/thread labels; folded input has one thread and counts.");
  cmd->add_option("input", o->input, "a .mscap capture, a pprof profile, or folded stacks")
      ->required();
  cmd->add_option("-o,--output", o->output, "file to write")->required();
  cmd->add_option("--to", o->to,
                  "pprof, chrome, folded, speedscope, or mscap (default: by -o's name)")
      ->check(CLI::IsMember({"pprof", "chrome", "folded", "speedscope", "mscap"}));
  cmd->add_flag("--per-thread", o->per_thread, "folded: one stack per thread (the thread first)");
  o->filter.Register(cmd);
  return [o]() { return RunConvert(*o); };
}

}  // namespace microscope::cli
