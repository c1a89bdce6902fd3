#include "analysis/keys.h"

#include <cstdio>
#include <map>
#include <tuple>

#include "base/hex.h"

namespace microscope::analysis {

using capture::kNone;

namespace {

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string UnnamedFrameName(const capture::Capture& capture, const capture::Frame& frame) {
  if (frame.module == kNone) return HexAddress(frame.address);
  return BaseName(capture.str(capture.modules[frame.module].path)) + "+" +
         HexAddress(frame.address);
}

FunctionKeys::FunctionKeys(const capture::Capture& capture, Granularity granularity)
    : capture_(capture), granularity_(granularity) {
  frame_key_.resize(capture.frames.size());
  // An interpreted frame neither its file nor its name places (a V8
  // builtin's) is of the recording's one runtime, where it has one.
  bool python = false, javascript = false;
  for (const capture::Module& m : capture.modules) {
    python |= m.runtime == capture::Runtime::kCPython;
    javascript |= m.runtime == capture::Runtime::kV8;
  }
  if (python != javascript) interpreted_kind_ = python ? "python" : "javascript";
  // Function keys first (one per function), then one per unnamed frame (or,
  // at address granularity, per frame).
  std::vector<KeyId> function_key(capture.functions.size(), kNone);
  std::map<std::tuple<capture::FunctionId, capture::StringId, uint32_t>, KeyId> line_key;
  for (size_t i = 0; i < capture.frames.size(); ++i) {
    const capture::Frame& f = capture.frames[i];
    KeyId key;
    if (f.function != kNone && granularity == Granularity::kLine && f.line != 0) {
      auto [it, inserted] =
          line_key.try_emplace({f.function, f.file, f.line}, KeyId(names_.size()));
      if (inserted) {
        names_.push_back(capture.str(capture.functions[f.function].name) + " " +
                         BaseName(capture.str(f.file)) + ":" + std::to_string(f.line));
        key_frame_.push_back(capture::FrameId(i));
      }
      key = it->second;
    } else if (f.function != kNone && granularity != Granularity::kAddress) {
      if (function_key[f.function] == kNone) {
        function_key[f.function] = KeyId(names_.size());
        names_.push_back(capture.str(capture.functions[f.function].name));
        key_frame_.push_back(capture::FrameId(i));
      }
      key = function_key[f.function];
    } else {
      key = KeyId(names_.size());
      std::string name;
      if (f.kind == capture::FrameKind::kNamed) {
        name = f.function != kNone ? capture.str(capture.functions[f.function].name) : "?";
      } else if (f.function != kNone) {
        name = capture.str(capture.functions[f.function].name) + " @" + HexAddress(f.address);
      } else {
        name = UnnamedFrameName(capture, f);
      }
      names_.push_back(std::move(name));
      key_frame_.push_back(capture::FrameId(i));
    }
    frame_key_[i] = key;
  }
}

const capture::Module* FunctionKeys::ModuleOf(const capture::Frame& f) const {
  capture::ModuleId m = f.module;
  if (m == kNone && f.function != kNone) m = capture_.functions[f.function].module;
  return m < capture_.modules.size() ? &capture_.modules[m] : nullptr;
}

std::string FunctionKeys::ModuleName(KeyId key) const {
  const capture::Frame& f = capture_.frames[key_frame_[key]];
  // An interpreted frame's place is its source file.
  if (f.kind == capture::FrameKind::kInterpreted) return capture_.str(f.file);
  const capture::Module* module = ModuleOf(f);
  if (module == nullptr) return f.kind == capture::FrameKind::kNamed ? "" : "[unmapped]";
  return BaseName(capture_.str(module->path));
}

std::string_view FunctionKeys::KindName(KeyId key) const {
  const capture::Frame& f = capture_.frames[key_frame_[key]];
  const capture::Module* module = ModuleOf(f);
  switch (f.kind) {
    case capture::FrameKind::kKernel:
      return "kernel";
    case capture::FrameKind::kInline:
      return "inline";
    case capture::FrameKind::kUnmapped:
      return "jit";
    case capture::FrameKind::kInterpreted: {
      if (module != nullptr && module->runtime == capture::Runtime::kCPython) return "python";
      if (module != nullptr && module->runtime == capture::Runtime::kV8) return "javascript";
      // By its file as each runtime names it (CPython: a path or
      // "<string>", "<frozen ...>"; V8: a script's path or URL, "node:..."),
      // and the walkers' own names for what they could not name.
      std::string_view file;
      if (f.file != kNone) file = capture_.str(f.file);
      const std::string_view name = names_[key];
      if (name.starts_with("[unknown Python") || file.ends_with(".py") || file.ends_with(".pyw") ||
          file.starts_with("<"))
        return "python";
      if (name.starts_with("[unknown JavaScript") || file.ends_with(".js") ||
          file.ends_with(".mjs") || file.ends_with(".cjs") || file.starts_with("node:") ||
          file.find("://") != std::string_view::npos)
        return "javascript";
      return interpreted_kind_;
    }
    case capture::FrameKind::kNamed:
    case capture::FrameKind::kNative:
      break;
  }
  if (module == nullptr) return f.kind == capture::FrameKind::kNamed ? "other" : "native";
  if (module->kind == capture::ModuleKind::kKernel) return "kernel";
  if (module->kind == capture::ModuleKind::kAnonymous) return "jit";
  return "native";
}

uint32_t FunctionKeys::FirstLine(KeyId key) const {
  const capture::Frame& f = capture_.frames[key_frame_[key]];
  // An interpreted frame keeps its function's first line in `address`.
  if (f.kind != capture::FrameKind::kInterpreted || f.address > UINT32_MAX) return 0;
  return uint32_t(f.address);
}

}  // namespace microscope::analysis
