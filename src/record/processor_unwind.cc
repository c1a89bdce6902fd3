// Processor: user stacks unwound from copied registers and stack bytes,
// with each module's CFI (loaded once per build ID) and each mapping's
// bias; and the files a module is read from, through its mappers' roots.
#include <algorithm>
#include <cstring>

#include "src/record/jit_namer.h"
#include "src/record/processor.h"

namespace microscope::record {

using capture::ModuleId;
using capture::ModuleKind;
using capture::StackEnd;

void Processor::NoteRoot(uint32_t pid, ProcessState& p, ModuleId module) {
  if (options_.module_files) return;  // an import: its pids are not this host's processes
  if (!p.root_known) {
    p.root = roots_.Open(pid_t(pid));
    p.root_known = true;
  }
  if (p.root == ProcessRoots::kHostRoot) return;
  if (module_roots_.size() <= module) module_roots_.resize(module + 1);
  std::vector<uint32_t>& seen = module_roots_[module];
  if (std::find(seen.begin(), seen.end(), p.root) == seen.end()) seen.push_back(p.root);
}

std::vector<std::string> Processor::PathsInTargetRoots(ModuleId module) const {
  std::vector<std::string> paths;
  if (module >= module_roots_.size()) return paths;
  const std::string& path = capture_.strings[capture_.modules[module].path];
  for (uint32_t root : module_roots_[module]) paths.push_back(roots_.PathIn(root, path));
  return paths;
}

std::vector<std::vector<std::string>> Processor::TargetPaths() const {
  std::vector<std::vector<std::string>> paths(capture_.modules.size());
  for (size_t m = 0; m < paths.size(); ++m) paths[m] = PathsInTargetRoots(ModuleId(m));
  return paths;
}

std::vector<std::string> Processor::ModuleFiles(ModuleId module) const {
  const capture::Module& mod = capture_.modules[module];
  if (options_.module_files) {
    if (mod.build_id.empty()) return {};  // nothing could prove a file
    return options_.module_files(capture_.strings[mod.path], mod.build_id);
  }
  std::vector<std::string> files = PathsInTargetRoots(module);
  // A file the target sees elsewhere is never taken from the host path
  // unless its build ID can prove it.
  if (files.empty() || !mod.build_id.empty()) files.push_back(capture_.strings[mod.path]);
  return files;
}

const record::ModuleCfi* Processor::ModuleUnwindInfo(ModuleId module) {
  if (module_unwind_.size() <= module) module_unwind_.resize(capture_.modules.size());
  ModuleUnwind& mu = module_unwind_[module];
  if (mu.tried) return mu.cfi.get();
  mu.tried = true;
  const capture::Module& mod = capture_.modules[module];
  const std::string& path = capture_.strings[mod.path];
  if (mod.kind == ModuleKind::kAnonymous || mod.kind == ModuleKind::kKernel) return nullptr;
  // Our own vDSO's image: an import's only when its build ID proves it ours.
  std::span<const uint8_t> vdso;
  if (mod.kind == ModuleKind::kVdso) {
    vdso = symbols::OwnVdsoImage();
    if (options_.module_files &&
        (mod.build_id.empty() || mod.build_id != symbols::OwnVdsoBuildId()))
      vdso = {};
  }
  auto loaded = options_.cfi_cache->Get(mod.build_id, ModuleFiles(module), vdso);
  if (!loaded.ok()) {
    CountProblem("module not unwound (no CFI read)", path + ": " + loaded.status().message());
    return nullptr;
  }
  mu.cfi = std::move(loaded).value();
  return mu.cfi.get();
}

bool Processor::LookupCode(ProcessState& proc, uint64_t pc, unwind::CodeInfo* info) {
  auto it = proc.live.upper_bound(pc);
  if (it == proc.live.begin()) return false;
  uint32_t row = std::prev(it)->second;
  const capture::Mapping& m = capture_.mappings[row];
  if (pc >= m.end) return false;
  if (code_map_.FramePointerCode(m.module, pc - m.start + m.file_offset)) {
    info->table = nullptr;
    info->bias = 0;
    info->frame_pointers = true;
    return true;
  }
  if (!jit_namers_.empty() && capture_.modules[m.module].kind == ModuleKind::kAnonymous) {
    // JIT code: the rules its jitdump or GDB JIT object gave, or proven
    // from its code.
    const uint32_t pid = uint32_t(capture_.processes[proc.row].pid);
    for (JitNamer* namer : jit_namers_) {
      if (const unwind::CfiTable* table = namer->UnwindTable(pid, pc)) {
        info->table = table;
        info->bias = 0;
        return true;
      }
    }
  }
  if (capture_.modules[m.module].kind == ModuleKind::kAnonymous &&
      code_map_.AnonymousFramePointers(uint32_t(capture_.processes[proc.row].pid))) {
    info->table = nullptr;
    info->bias = 0;
    info->frame_pointers = true;
    return true;
  }
  const record::ModuleCfi* cfi = ModuleUnwindInfo(m.module);
  info->table = cfi != nullptr ? cfi->table.get() : nullptr;
  info->bias = 0;
  if (cfi == nullptr) return true;
  if (mapping_bias_.size() <= row) mapping_bias_.resize(capture_.mappings.size(), kUnknownBias);
  uint64_t& bias = mapping_bias_[row];
  if (bias == kUnknownBias && !cfi->Bias(m.start, m.file_offset, &bias)) {
    info->table = nullptr;  // a mapping no segment explains: no CFI for it
    bias = kUnknownBias;
    return true;
  }
  info->bias = bias;
  return true;
}

capture::StackEnd Processor::UnwindUser(const Event& e, ProcessState& proc) {
  if (e.regs_abi == 0 || e.regs.size() < kUserRegCount * 8) {
    return StackEnd::kKernelOnly;
  }
  unwind::Registers regs;
  for (size_t i = 0; i < kUserRegCount; ++i) {
    uint64_t v;
    std::memcpy(&v, e.regs.data() + i * 8, 8);
    regs.Set(kUserRegToDwarf[i], v);
  }
  struct Map : unwind::CodeMap {
    Processor* self;
    ProcessState* proc;
    bool Lookup(uint64_t pc, unwind::CodeInfo* info) override {
      return self->LookupCode(*proc, pc, info);
    }
  } map;
  map.self = this;
  map.proc = &proc;
  unwind_frames_.resize(options_.max_user_frames);
  std::span<const uint8_t> bytes = e.stack;
  if (stack_limit_ != 0 && bytes.size() > stack_limit_) bytes = bytes.first(stack_limit_);
  unwind::StackImage stack{regs.value[unwind::kRegRsp], bytes};
  unwind::Policy policy =
      options_.call_graph == CallGraph::kAuto ? unwind::Policy::kAuto : unwind::Policy::kDwarf;
  unwind::UnwindResult r = unwind::Unwind(regs, stack, map, policy, unwind_frames_);
  stack_read_end_ = stack.read_end;
  scratch_sp_.resize(scratch_.size(), 0);
  for (size_t i = 0; i < r.frames; ++i) {
    const unwind::Frame& f = unwind_frames_[i];
    scratch_.push_back(UserFrame(proc, f.exact ? f.pc : f.pc - 1));
    scratch_sp_.push_back(f.sp);
  }
  if (r.end == StackEnd::kUnmappedPc) {
    const uint64_t pc = regs.value[unwind::kRegRa];
    // In the kernel (kernel frames came first), inside execve after the old
    // address space was dropped: the registers are still the old
    // program's, its stack is gone. Name the pc in the old mappings; an
    // old program that was not recorded (the launched program's exec
    // replaces microscope's own child) leaves the kernel's frames alone.
    if (!scratch_.empty() && proc.in_exec) {
      auto it = proc.before_exec.upper_bound(pc);
      if (it != proc.before_exec.begin() && pc < capture_.mappings[std::prev(it)->second].end) {
        scratch_.push_back(MappedFrame(std::prev(it)->second, pc));
        return StackEnd::kInExec;
      }
      if (proc.before_exec.empty()) return StackEnd::kInExec;
    }
    scratch_.push_back(UserFrame(proc, pc));  // still show where it was
  } else if (r.frames > 0) {
    proc.before_exec.clear();  // the new program runs
    proc.in_exec = false;
  }
  return r.end;
}

}  // namespace microscope::record
