#include "formats/convert.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "analysis/keys.h"
#include "capture/container.h"
#include "capture/writer.h"
#include "formats/chrome.h"
#include "formats/cpuprofile.h"
#include "formats/folded.h"
#include "formats/gzip.h"
#include "formats/perf_script.h"
#include "formats/pprof.h"
#include "formats/speedscope.h"

namespace microscope::formats {
namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string ExportFormatFor(const std::string& to, const std::string& output) {
  if (!to.empty()) return to;
  if (EndsWith(output, ".pb.gz") || EndsWith(output, ".pb")) return "pprof";
  if (EndsWith(output, ".speedscope.json")) return "speedscope";
  if (EndsWith(output, ".json")) return "chrome";
  if (EndsWith(output, ".folded") || EndsWith(output, ".txt")) return "folded";
  if (EndsWith(output, ".mscap")) return "mscap";
  return "";
}

std::string_view ExportExtension(std::string_view format) {
  if (format == "pprof") return ".pb.gz";
  if (format == "chrome") return ".json";
  if (format == "speedscope") return ".speedscope.json";
  if (format == "folded") return ".folded";
  return "";
}

namespace {

// What an export writes from: the capture in the look and metric asked
// for, its function keys and its filter. Built in place (the keys hold a
// reference to the capture).
struct Prepared {
  std::optional<capture::Capture> folded, for_metric;
  const capture::Capture* cap = nullptr;
  std::optional<analysis::FunctionKeys> keys;
  std::optional<analysis::SampleFilter> filter;
};

Status Prepare(const capture::Capture& recorded, const std::string& format,
               const ExportOptions& options, Prepared* p) {
  if (format.empty()) {
    return Status::Error("say which format to write: --to pprof|chrome|folded|speedscope");
  }
  if (ExportExtension(format).empty()) return Status::Error("unknown format '" + format + "'");
  ASSIGN_OR_RETURN(p->folded,
                   analysis::AsShown(recorded, {.inlines = options.inlines,
                                                .look = options.look,
                                                .merge = options.merge,
                                                .collapse = options.collapse,
                                                .focus_path = options.filter.focus_path}));
  const capture::Capture& original = p->folded ? *p->folded : recorded;
  RETURN_IF_ERROR(analysis::CheckMetric(original, options.metric));
  // Folded and speedscope write the metric's samples; the others read the
  // capture's own samples and off-CPU tables.
  if (options.metric != analysis::Metric::kCpu && (format == "folded" || format == "speedscope")) {
    p->for_metric = analysis::ForMetric(original, options.metric);
  }
  p->cap = p->for_metric ? &*p->for_metric : &original;
  p->keys.emplace(*p->cap);
  ASSIGN_OR_RETURN(analysis::SampleFilter filter,
                   analysis::SampleFilter::Make(*p->cap, *p->keys, options.filter, options.cancel));
  p->filter.emplace(std::move(filter));
  return OkStatus();
}

// The formats written whole in memory (pprof, folded).
std::vector<uint8_t> WholeBytes(const Prepared& p, const std::string& format,
                                const ExportOptions& options) {
  if (format == "pprof") return WritePprof(*p.cap, *p.filter, options.metric, options.cancel);
  std::string text = WriteFolded(*p.cap, *p.keys, *p.filter, options.per_thread,
                                 p.for_metric ? FoldedValue::kMicroseconds : FoldedValue::kSamples,
                                 options.cancel);
  return std::vector<uint8_t>(text.begin(), text.end());
}

// The formats streamed (chrome, speedscope: large outputs).
void Stream(FILE* out, const Prepared& p, const std::string& format, analysis::Cancel cancel = {}) {
  if (format == "chrome") {
    WriteChromeTrace(out, *p.cap, *p.keys, *p.filter, cancel);
  } else {
    WriteSpeedscope(out, *p.cap, *p.keys, *p.filter, cancel);
  }
}

bool Streamed(const std::string& format) {
  return format == "chrome" || format == "speedscope";
}

}  // namespace

Status Export(const capture::Capture& recorded, const std::string& format,
              const std::string& output, const ExportOptions& options) {
  if (format == "mscap") {
    if (!options.filter.empty()) {
      return Status::Error("filters apply to exports, not to a capture (filter it in report)");
    }
    if (!options.inlines || options.look != analysis::Look::kMixed) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "--inlines off and --look apply to exports, not to a capture (use "
                           "them in report)");
    }
    return capture::WriteCapture(recorded, output);
  }
  Prepared p;
  RETURN_IF_ERROR(Prepare(recorded, format, options, &p));
  if (Streamed(format)) {
    // Large outputs: streamed into the temporary file.
    ASSIGN_OR_RETURN(std::unique_ptr<capture::AtomicFile> file,
                     capture::AtomicFile::Create(output));
    Stream(file->stream(), p, format);
    return file->Commit();
  }
  return capture::WriteFileAtomically(output, WholeBytes(p, format, options));
}

Result<std::string> ExportToMemory(const capture::Capture& recorded, const std::string& format,
                                   const ExportOptions& options, size_t limit) {
  Prepared p;
  const auto cancelled = [] {
    return Status::Error(StatusCode::kCancelled, "the export was cancelled");
  };
  RETURN_IF_ERROR(Prepare(recorded, format, options, &p));
  if (options.cancel()) return cancelled();
  const auto too_large = [&] {
    return Status::Error(StatusCode::kTooLarge, "the export would be more than " +
                                                    std::to_string(limit >> 20) +
                                                    " MiB: narrow it (thread, time, focus)");
  };
  if (!Streamed(format)) {
    // Aggregated (pprof: per stack and thread; folded: per stack): as
    // large as the capture's distinct stacks at most.
    std::vector<uint8_t> bytes = WholeBytes(p, format, options);
    if (options.cancel()) return cancelled();
    if (bytes.size() > limit) return too_large();
    return std::string(bytes.begin(), bytes.end());
  }
  // Streamed into a string that stops growing at `limit`: past it a write
  // fails (the writer's later writes too), and nothing more is kept.
  struct Sink {
    std::string text;
    size_t limit;
    bool over = false;
  } sink{{}, limit};
  cookie_io_functions_t io{};
  io.write = [](void* cookie, const char* data, size_t size) -> ssize_t {
    auto* s = static_cast<Sink*>(cookie);
    if (s->over || size > s->limit - s->text.size()) {
      s->over = true;
      return -1;
    }
    s->text.append(data, size);
    return ssize_t(size);
  };
  FILE* out = fopencookie(&sink, "w", io);
  if (out == nullptr) return Status::Error("no memory for the export");
  Stream(out, p, format, options.cancel);
  const bool written = std::fflush(out) == 0 && !std::ferror(out);
  std::fclose(out);
  if (options.cancel()) return cancelled();
  if (sink.over) return too_large();
  if (!written) return Status::Error("the export could not be written in memory");
  return std::move(sink.text);
}

Result<capture::Capture> ImportProfile(std::span<const uint8_t> in, size_t max_inflated) {
  // Folded stacks are text; a raw (not gzipped) pprof Profile is binary.
  bool text = true;
  for (size_t i = 0; i < in.size() && i < 4096; ++i) {
    uint8_t b = in[i];
    if (b < 0x20 && b != '\n' && b != '\r' && b != '\t') text = false;
  }
  if (IsGzip(in) || !text) return ReadPprof(in, "", max_inflated);
  const std::string_view chars(reinterpret_cast<const char*>(in.data()), in.size());
  if (LooksLikePerfScript(chars)) return ReadPerfScript(chars);
  if (LooksLikeCpuProfile(chars)) return ReadCpuProfile(chars);
  return ReadFolded(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
}

}  // namespace microscope::formats
