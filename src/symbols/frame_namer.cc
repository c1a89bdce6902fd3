#include "src/symbols/frame_namer.h"

namespace microscope::symbols {
namespace {

using capture::FrameId;
using capture::FrameKind;
using capture::kNone;
using capture::ModuleId;

// Which frames already have inlined calls below them, by frame id.
std::vector<char> FramesWithInlines(const capture::Capture& c) {
  std::vector<char> had_inlines(c.frames.size(), 0);
  for (size_t n = 0; n < c.stacks.size(); ++n) {
    if (c.frames[c.stacks.frame[n]].kind != FrameKind::kInline) continue;
    capture::StackId p = c.stacks.parent[n];
    while (p != kNone && c.frames[c.stacks.frame[p]].kind == FrameKind::kInline) {
      p = c.stacks.parent[p];
    }
    if (p != kNone) had_inlines[c.stacks.frame[p]] = 1;
  }
  return had_inlines;
}

// Counts a frame, as it is now, into its module's summary.
void CountFrame(const capture::Frame& now, const ModuleFiles& files, ModuleSummary* sum) {
  ++sum->frames;
  if (now.function != kNone) {
    ++sum->named;
  } else {
    const char* why = files.image == nullptr && !files.kernel           ? files.reason
                      : files.kernel || files.image->symbols.size() > 0 ? kOutsideSymbols
                                                                        : kNoSymbols;
    ++sum->unnamed[why];
  }
  if (now.line != 0) ++sum->with_lines;
}

}  // namespace

FrameNamer::FrameNamer(capture::Capture* c, Namer* namer)
    : c_(c), namer_(namer), had_inlines_(FramesWithInlines(*c)) {
  edits_.replaced.assign(c->frames.size(), 0);
  edits_.inlined.resize(c->frames.size());
}

uint64_t FrameNamer::NameFrames(ModuleId m, const ModuleFiles& files,
                                const std::vector<FrameId>& frames, ModuleSummary* sum) {
  // The recorded segments when there are some: a debug file's have no
  // file offsets.
  std::vector<LoadSegment> segments;
  for (const capture::Segment& s : c_->modules[m].segments)
    segments.push_back({s.offset, s.vaddr, s.size, s.size});
  uint64_t changed = 0;
  for (FrameId f : frames) {
    const capture::Frame old = c_->frames[f];
    FrameInfo info = LookUp(files, segments, old.address);
    bool had_name = old.function != kNone;
    bool gains = (!info.function.empty() && !had_name) || (info.line != 0 && old.line == 0) ||
                 (!info.inlined.empty() && !had_inlines_[f]);
    if (gains && !info.function.empty()) {
      Rename(m, f, info, files.lines.get(), sum);
      ++changed;
      if (!had_name) ++sum->newly_named;
    }
    CountFrame(c_->frames[f], files, sum);
  }
  return changed;
}

InlineEdits FrameNamer::TakeEdits() {
  edits_.replaced.resize(c_->frames.size(), 0);
  edits_.inlined.resize(c_->frames.size());
  return std::move(edits_);
}

FrameNamer::FrameInfo FrameNamer::LookUp(const ModuleFiles& files,
                                         const std::vector<LoadSegment>& segments,
                                         uint64_t address) {
  FrameInfo info;
  uint64_t vaddr = address;
  bool mapped = true;
  bool exported = false;  // the symbol table names it as the program exports it
  auto from_symbols = [&](uint64_t at) {
    SymbolTable::Match m = files.image->symbols.Find(at);
    exported = m.exported;
    return std::string(m.name);
  };
  if (files.kernel) {
    info.function = std::string(files.kernel->Lookup(address));
  } else if (!segments.empty()) {
    mapped = OffsetToVaddr(segments, address, &vaddr);
    if (mapped && files.image != nullptr) info.function = from_symbols(vaddr);
  } else if (files.image != nullptr) {
    mapped = !files.layout.empty() && OffsetToVaddr(files.layout, address, &vaddr);
    if (mapped) info.function = from_symbols(vaddr);
  }
  if (!mapped || files.lines == nullptr) return info;
  files.lines->Lookup(vaddr, &source_);
  if (source_.empty()) return info;
  const SourceFrame& outer = source_.back();
  // A function the module exports is named as it exports it, as perf and
  // gdb do: malloc, not the DWARF's __GI___libc_malloc (the name users type
  // in --focus). Otherwise the DWARF names the function holding the code,
  // as addr2line and pprof do: msort_with_tmp for its .part.0 piece; the
  // symbol table names code the DWARF does not cover.
  if (outer.function != kNoName && !exported) info.function = files.lines->String(outer.function);
  info.file = files.lines->String(outer.file);
  info.line = outer.line;
  info.inlined.assign(source_.begin(), source_.end() - 1);
  return info;
}

void FrameNamer::Rename(ModuleId m, FrameId f, const FrameInfo& info, const LineTable* lines,
                        ModuleSummary* sum) {
  capture::Frame& frame = c_->frames[f];
  const uint64_t address = frame.address;
  frame.function = namer_->Function(m, info.function);
  if (info.line != 0) {
    frame.file = namer_->String(info.file);
    frame.line = info.line;
  }
  if (!had_inlines_[f] && info.inlined.empty()) return;
  edits_.replaced[f] = 1;
  // Frames are added from here on: `frame` may move and is not used again.
  for (const SourceFrame& s : info.inlined) {
    capture::Frame in;
    in.kind = FrameKind::kInline;
    in.module = m;
    in.address = address;
    std::string name(lines->String(s.function));
    in.function = namer_->Function(m, name.empty() ? "?" : name);
    in.file = namer_->String(lines->String(s.file));
    in.line = s.line;
    c_->frames.push_back(in);
    edits_.inlined[f].push_back(FrameId(c_->frames.size() - 1));
  }
  sum->inline_frames += info.inlined.size();
}

}  // namespace microscope::symbols
