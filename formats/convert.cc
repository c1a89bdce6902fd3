#include "formats/convert.h"

#include <memory>
#include <optional>
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

Status Export(const capture::Capture& recorded, const std::string& format,
              const std::string& output, const ExportOptions& options) {
  const analysis::FilterSpec& spec = options.filter;
  const analysis::Metric metric = options.metric;
  const bool per_thread = options.per_thread;
  if (format.empty()) {
    return Status::Error("say which format to write: --to pprof|chrome|folded|speedscope");
  }
  if (format == "mscap") {
    if (!spec.empty()) {
      return Status::Error("filters apply to exports, not to a capture (filter it in report)");
    }
    if (!options.inlines || options.look != analysis::Look::kMixed) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "--inlines off and --look apply to exports, not to a capture (use "
                           "them in report)");
    }
    return capture::WriteCapture(recorded, output);
  }
  std::optional<capture::Capture> folded;
  if (!options.inlines || options.look != analysis::Look::kMixed) {
    folded = analysis::WithLook(options.inlines ? recorded : analysis::WithoutInlines(recorded),
                                options.look);
  }
  const capture::Capture& original = folded ? *folded : recorded;
  RETURN_IF_ERROR(analysis::CheckMetric(original, metric));
  // Folded and speedscope write the metric's samples; the others read the
  // capture's own samples and off-CPU tables.
  std::optional<capture::Capture> for_metric;
  if (metric != analysis::Metric::kCpu && (format == "folded" || format == "speedscope")) {
    for_metric = analysis::ForMetric(original, metric);
  }
  const capture::Capture& cap = for_metric ? *for_metric : original;
  analysis::FunctionKeys keys(cap);
  ASSIGN_OR_RETURN(analysis::SampleFilter filter, analysis::SampleFilter::Make(cap, keys, spec));
  if (format == "chrome" || format == "speedscope") {
    // Large outputs: streamed into the temporary file.
    ASSIGN_OR_RETURN(std::unique_ptr<capture::AtomicFile> file,
                     capture::AtomicFile::Create(output));
    if (format == "chrome") {
      WriteChromeTrace(file->stream(), cap, keys, filter);
    } else {
      WriteSpeedscope(file->stream(), cap, keys, filter);
    }
    return file->Commit();
  }
  std::vector<uint8_t> bytes;
  if (format == "pprof") {
    bytes = WritePprof(cap, filter, metric);
  } else if (format == "folded") {
    std::string text = WriteFolded(cap, keys, filter, per_thread,
                                   for_metric ? FoldedValue::kMicroseconds : FoldedValue::kSamples);
    bytes.assign(text.begin(), text.end());
  } else {
    return Status::Error("unknown format '" + format + "'");
  }
  return capture::WriteFileAtomically(output, bytes);
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
