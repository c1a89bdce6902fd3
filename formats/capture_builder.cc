#include "formats/capture_builder.h"

namespace microscope::formats {

using capture::kNone;

CaptureBuilder::CaptureBuilder() : strings_(&capture_.strings) {}

capture::ModuleId CaptureBuilder::Module(std::string_view path,
                                         const std::vector<uint8_t>& build_id) {
  auto key = std::make_pair(std::string(path), build_id);
  auto it = modules_.find(key);
  if (it != modules_.end()) return it->second;
  capture::Module m;
  m.path = strings_.Intern(path);
  m.build_id = build_id;
  m.kind = path.starts_with("[kernel") ? capture::ModuleKind::kKernel
           : path == "[vdso]"          ? capture::ModuleKind::kVdso
                                       : capture::ModuleKind::kFile;
  capture_.modules.push_back(std::move(m));
  capture::ModuleId id = capture::ModuleId(capture_.modules.size() - 1);
  modules_.emplace(std::move(key), id);
  return id;
}

capture::FunctionId CaptureBuilder::Function(std::string_view name, capture::ModuleId module) {
  auto key = std::make_pair(std::string(name), module);
  auto it = functions_.find(key);
  if (it != functions_.end()) return it->second;
  capture_.functions.push_back({strings_.Intern(name), module});
  capture::FunctionId id = capture::FunctionId(capture_.functions.size() - 1);
  functions_.emplace(std::move(key), id);
  return id;
}

capture::FrameId CaptureBuilder::Frame(capture::FrameKind kind, capture::ModuleId module,
                                       uint64_t address, capture::FunctionId function) {
  auto key = std::make_tuple(uint8_t(kind), module, address, function, size_t(0));
  auto it = frames_.find(key);
  if (it != frames_.end()) return it->second;
  capture_.frames.push_back({kind, module, address, function});
  capture::FrameId id = capture::FrameId(capture_.frames.size() - 1);
  frames_.emplace(key, id);
  return id;
}

capture::FrameId CaptureBuilder::NamedFrame(capture::FunctionId function, std::string_view file,
                                            uint32_t line) {
  // Keyed by line too, so that samples on different lines stay apart.
  size_t slot = (size_t(strings_.Intern(file)) << 32) | line;
  auto key = std::make_tuple(uint8_t(capture::FrameKind::kNamed), capture::kNone, uint64_t(0),
                             function, slot);
  auto it = frames_.find(key);
  if (it != frames_.end()) return it->second;
  capture_.frames.push_back({capture::FrameKind::kNamed, capture::kNone, 0, function});
  capture::FrameId id = capture::FrameId(capture_.frames.size() - 1);
  frames_.emplace(key, id);
  return id;
}

capture::FrameId CaptureBuilder::InlineFrame(capture::ModuleId module, uint64_t address,
                                             capture::FunctionId function, size_t depth) {
  auto key =
      std::make_tuple(uint8_t(capture::FrameKind::kInline), module, address, function, depth);
  auto it = frames_.find(key);
  if (it != frames_.end()) return it->second;
  capture_.frames.push_back({capture::FrameKind::kInline, module, address, function});
  capture::FrameId id = capture::FrameId(capture_.frames.size() - 1);
  frames_.emplace(key, id);
  return id;
}

void CaptureBuilder::SetLine(capture::FrameId frame, std::string_view file, uint32_t line) {
  capture::Frame& f = capture_.frames[frame];
  if (f.line != 0) return;
  f.file = file.empty() ? capture::kNone : strings_.Intern(file);
  f.line = line;
}

capture::ThreadId CaptureBuilder::Thread(int32_t pid, int32_t tid, std::string_view name) {
  auto key = std::make_tuple(pid, tid, std::string(name));
  auto it = threads_.find(key);
  if (it != threads_.end()) return it->second;
  auto p = processes_.find(pid);
  if (p == processes_.end()) {
    capture::Process proc;
    proc.pid = pid;
    proc.command = strings_.Intern(name);
    capture_.processes.push_back(proc);
    p = processes_.emplace(pid, capture::ProcessId(capture_.processes.size() - 1)).first;
  }
  capture_.threads.push_back({tid, p->second, strings_.Intern(name), 0, 0});
  capture::ThreadId id = capture::ThreadId(capture_.threads.size() - 1);
  threads_.emplace(std::move(key), id);
  return id;
}

capture::StackId CaptureBuilder::Stack(const std::vector<capture::FrameId>& frames) {
  return stacks_.InternLeafFirst(frames);
}

void CaptureBuilder::Sample(uint64_t time, capture::ThreadId thread, capture::StackId stack,
                            uint64_t weight, uint32_t count) {
  capture::Samples& s = capture_.samples;
  s.time.push_back(time);
  s.thread.push_back(thread);
  s.stack.push_back(stack);
  s.weight.push_back(weight);
  s.end.push_back(capture::StackEnd::kComplete);
  s.count.push_back(count);
}

}  // namespace microscope::formats
