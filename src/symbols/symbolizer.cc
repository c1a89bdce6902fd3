#include "src/symbols/symbolizer.h"

#include <algorithm>

#include "base/hex.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/frame_namer.h"
#include "src/symbols/module_resolver.h"
#include "src/symbols/namer.h"
#include "src/symbols/stack_rebuild.h"

namespace microscope::symbols {
namespace {

using capture::FrameId;
using capture::FrameKind;
using capture::kNone;
using capture::ModuleId;
using capture::ModuleKind;

// The native and kernel frames of each module, by module id.
std::vector<std::vector<FrameId>> FramesByModule(const capture::Capture& c) {
  std::vector<std::vector<FrameId>> by_module(c.modules.size());
  for (FrameId f = 0; f < c.frames.size(); ++f) {
    const capture::Frame& frame = c.frames[f];
    if (frame.module == kNone || frame.module >= c.modules.size()) continue;
    if (frame.kind == FrameKind::kNative || frame.kind == FrameKind::kKernel) {
      by_module[frame.module].push_back(f);
    }
  }
  return by_module;
}

void CountProblem(capture::Capture* c, Namer* namer, const std::string& kind,
                  const std::string& example) {
  capture::StringId k = namer->String(kind);
  for (capture::Problem& p : c->problems) {
    if (p.kind == k) {
      ++p.count;
      return;
    }
  }
  c->problems.push_back({k, 1, namer->String(example)});
}

// A module whose file was not found leaves a problem in the capture too.
void CountUnfound(capture::Capture* c, Namer* namer, const ModuleSummary& sum) {
  if (!sum.unnamed.count(kNoFile) && !sum.unnamed.count(kMismatch)) return;
  CountProblem(c, namer,
               sum.unnamed.count(kMismatch) ? "build ID mismatch, frames unnamed"
                                            : "module file not found, frames unnamed",
               sum.path + " (build ID " + sum.build_id + ")");
}

std::vector<capture::Segment> ToSegments(const std::vector<LoadSegment>& loads) {
  std::vector<capture::Segment> out;
  for (const LoadSegment& l : loads) out.push_back({l.offset, l.vaddr, l.filesz});
  return out;
}

}  // namespace

std::string DebuginfodUrlsValue(const std::vector<std::string>& urls) {
  std::string value;
  for (const std::string& u : urls) value += (value.empty() ? "" : " ") + u;
  return value;
}

void AddModuleLayouts(capture::Capture* capture,
                      const std::vector<std::vector<std::string>>& target_paths) {
  for (size_t m = 0; m < capture->modules.size(); ++m) {
    capture::Module& mod = capture->modules[m];
    if (!mod.segments.empty()) continue;
    if (mod.kind == ModuleKind::kVdso) {
      auto own = OwnVdsoImage();
      if (own.empty()) continue;
      auto image = LoadElfImageFromMemory(own);
      if (image.ok() && (*image)->build_id == mod.build_id)
        mod.segments = ToSegments((*image)->loads);
      continue;
    }
    if (mod.kind != ModuleKind::kFile || mod.path >= capture->strings.size()) continue;
    // The targets' views of the file first; the recorded path on this host
    // only when proved by build ID, or when no target sees it elsewhere.
    std::vector<std::string> files;
    if (m < target_paths.size()) files = target_paths[m];
    if (files.empty() || !mod.build_id.empty()) files.push_back(capture->strings[mod.path]);
    for (const std::string& file : files) {
      auto layout = ReadElfLayout(file);
      if (!layout.ok() || (!mod.build_id.empty() && layout->build_id != mod.build_id)) continue;
      mod.segments = ToSegments(layout->loads);
      break;
    }
    if (mod.segments.size() > 256) mod.segments.clear();  // what readers accept
  }
}

Result<SymbolizeSummary> Symbolize(capture::Capture* capture, const SymbolizeOptions& options) {
  capture::Capture& c = *capture;
  std::vector<std::vector<FrameId>> by_module = FramesByModule(c);
  Namer namer(capture);
  FrameNamer frames(capture, &namer);
  Resolver resolver(options, c.settings.boot_id);
  SymbolizeSummary summary;
  for (ModuleId m = 0; m < c.modules.size(); ++m) {
    if (by_module[m].empty()) continue;
    const capture::Module& mod = c.modules[m];
    ModuleSummary sum;
    sum.module = m;
    sum.path = mod.path < c.strings.size() ? c.strings[mod.path] : "";
    sum.build_id = HexBytes(mod.build_id);
    ModuleFiles files = resolver.Resolve(mod, sum.path, &sum);
    for (const std::string& p : sum.problems) {
      CountProblem(&c, &namer, "debug file unusable (symbolize)", p);
    }
    summary.changed += frames.NameFrames(m, files, by_module[m], &sum);
    CountUnfound(&c, &namer, sum);
    summary.frames += sum.frames;
    summary.named += sum.named;
    summary.modules.push_back(std::move(sum));
  }
  InlineEdits edits = frames.TakeEdits();
  if (std::find(edits.replaced.begin(), edits.replaced.end(), 1) != edits.replaced.end()) {
    uint64_t dropped = RebuildStacks(&c, edits);
    if (dropped > 0) {
      CountProblem(&c, &namer, "inline frames left out of stacks near the depth limit",
                   std::to_string(dropped) + " chains");
    }
  }
  return summary;
}

}  // namespace microscope::symbols
