#include "src/record/processor.h"

#include <sys/auxv.h>
#include <sys/mman.h>

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/hex.h"
#include "capture/row_order.h"
#include "capture/window.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/kallsyms.h"

namespace microscope::record {
namespace {

using capture::FrameId;
using capture::FrameKind;
using capture::kNone;
using capture::ModuleId;
using capture::ModuleKind;
using capture::StackEnd;

ModuleKind KindOfPath(std::string_view path) {
  if (path == "[vdso]") return ModuleKind::kVdso;
  if (path.empty() || path.starts_with("//anon") || path.starts_with("[") ||
      path.starts_with("/memfd:") || path.starts_with("anon_inode:")) {
    return ModuleKind::kAnonymous;
  }
  return ModuleKind::kFile;
}

}  // namespace

Processor::Processor(Options options)
    : options_(options), strings_(&capture_.strings), stacks_(&capture_.stacks) {
  if (!options_.cfi_cache) options_.cfi_cache = std::make_shared<record::CfiCache>();
}

Processor::ProcessState& Processor::EnsureProcess(uint32_t pid, uint64_t time) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) return it->second;
  capture::Process row;
  row.pid = int32_t(pid);
  row.start_time = time;
  capture_.processes.push_back(row);
  ProcessState& state = processes_[pid];
  state.row = capture::ProcessId(capture_.processes.size() - 1);
  return state;
}

capture::ThreadId Processor::EnsureThread(uint32_t pid, uint32_t tid, uint64_t time) {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return it->second;
  ProcessState& p = EnsureProcess(pid, time);
  capture::Thread row;
  row.tid = int32_t(tid);
  row.process = p.row;
  row.name = capture_.processes[p.row].command;
  row.start_time = time;
  capture_.threads.push_back(row);
  capture::ThreadId id = capture::ThreadId(capture_.threads.size() - 1);
  threads_[tid] = id;
  ++p.live_threads;
  return id;
}

void Processor::AddProcess(uint32_t pid, uint32_t ppid, std::string_view command, uint64_t time) {
  ProcessState& p = EnsureProcess(pid, time);
  capture_.processes[p.row].parent_pid = int32_t(ppid);
  capture_.processes[p.row].command = strings_.Intern(command);
}

void Processor::AddThread(uint32_t pid, uint32_t tid, std::string_view name, uint64_t time) {
  capture::ThreadId t = EnsureThread(pid, tid, time);
  capture_.threads[t].name = strings_.Intern(name);
}

void Processor::AddMapping(uint32_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
                           std::string_view path, std::span<const uint8_t> build_id,
                           uint64_t time) {
  Event e;
  e.type = EventType::kMmap2;
  e.pid = pid;
  e.tid = pid;
  e.addr = start;
  e.len = end - start;
  e.pgoff = pgoff;
  e.prot = PROT_EXEC;
  e.filename = path;
  e.build_id = build_id;
  e.time = time;
  OnMmap2(e);
}

std::vector<uint32_t> Processor::LiveProcesses() const {
  std::vector<uint32_t> pids;
  for (const auto& [pid, state] : processes_) pids.push_back(pid);
  std::sort(pids.begin(), pids.end());
  return pids;
}

void Processor::CountProblem(std::string_view kind, std::string_view example, uint64_t times) {
  auto it = problems_.find(kind);
  if (it == problems_.end()) it = problems_.emplace(std::string(kind), ProblemCount{}).first;
  if (it->second.count == 0) it->second.example = std::string(example);
  it->second.count += times;
}

void Processor::SetExitStatus(uint32_t pid, int status) {
  // The latest row with this pid (the process may have ended already).
  for (size_t i = capture_.processes.size(); i-- > 0;) {
    if (capture_.processes[i].pid == int32_t(pid)) {
      capture_.processes[i].exit_status = status;
      return;
    }
  }
}

capture::ModuleId Processor::InternModule(std::string_view path,
                                          std::span<const uint8_t> build_id) {
  // The kernel maps one vDSO into every process: ours. Its build ID lets
  // frames in it be named later, and proves the image used for them. (An
  // import's vDSO is another process's: only its recorded build ID.)
  if (build_id.empty() && path == "[vdso]" && !options_.module_files)
    build_id = symbols::OwnVdsoBuildId();
  // One module per build ID (the same file under two paths is one image);
  // without a build ID, one per path.
  std::string key = build_id.empty() ? "p:" + std::string(path) : "b:" + HexBytes(build_id);
  auto it = modules_.find(key);
  if (it != modules_.end()) return it->second;
  capture::Module m;
  m.path = strings_.Intern(path);
  m.build_id.assign(build_id.begin(), build_id.end());
  m.kind = KindOfPath(path);
  capture_.modules.push_back(std::move(m));
  ModuleId id = ModuleId(capture_.modules.size() - 1);
  modules_.emplace(std::move(key), id);
  return id;
}

void Processor::EndMappings(ProcessState& p, uint64_t start, uint64_t end, uint64_t time) {
  // Every live mapping overlapping [start, end) ends now; the parts outside
  // the range live on as new rows (a partial remap or munmap+mmap).
  auto it = p.live.upper_bound(start);
  if (it != p.live.begin()) --it;
  while (it != p.live.end() && it->first < end) {
    uint32_t row = it->second;
    capture::Mapping old = capture_.mappings[row];
    if (old.end <= start) {
      ++it;
      continue;
    }
    it = p.live.erase(it);
    capture_.mappings[row].time_end = time;
    if (old.start < start) {
      capture::Mapping left = old;
      left.end = start;
      left.time_start = time;
      left.time_end = 0;
      capture_.mappings.push_back(left);
      p.live[left.start] = uint32_t(capture_.mappings.size() - 1);
    }
    if (old.end > end) {
      capture::Mapping right = old;
      right.file_offset = old.file_offset + (end - old.start);
      right.start = end;
      right.time_start = time;
      right.time_end = 0;
      capture_.mappings.push_back(right);
      it = p.live.emplace(right.start, uint32_t(capture_.mappings.size() - 1)).first;
      ++it;
    }
  }
}

void Processor::EndAllMappings(ProcessState& p, uint64_t time,
                               std::map<uint64_t, uint32_t>* ended) {
  for (auto& [start, row] : p.live) capture_.mappings[row].time_end = time;
  if (ended != nullptr) ended->swap(p.live);
  p.live.clear();
}

void Processor::OnMmap2(const Event& e) {
  if ((e.prot & PROT_EXEC) == 0) return;
  ProcessState& p = EnsureProcess(e.pid, e.time);
  ModuleId module = InternModule(e.filename, e.build_id);
  if (!e.filename.empty() && e.filename[0] == '/') NoteRoot(e.pid, p, module);
  uint64_t end = e.addr + e.len;
  auto same = p.live.find(e.addr);
  if (same != p.live.end()) {
    const capture::Mapping& m = capture_.mappings[same->second];
    // The kernel reports one mmap to each event of the task: keep one row.
    if (m.end == end && m.file_offset == e.pgoff && m.module == module) return;
  }
  EndMappings(p, e.addr, end, e.time);
  capture::Mapping m;
  m.process = p.row;
  m.module = module;
  m.start = e.addr;
  m.end = end;
  m.file_offset = e.pgoff;
  m.time_start = e.time;
  capture_.mappings.push_back(m);
  p.live[e.addr] = uint32_t(capture_.mappings.size() - 1);
  AnnounceMapping(e.pid, uint32_t(capture_.mappings.size() - 1));
}

void Processor::OnComm(const Event& e) {
  capture::StringId name = strings_.Intern(e.comm);
  capture::ThreadId t = EnsureThread(e.pid, e.tid, e.time);
  // A runtime's name stays, but for a new program: one named before the
  // exec. A name read from the new program's memory may come first (the
  // runtime's source reads it live, the COMM record waits its turn in the
  // ring), and stays.
  if (auto named = runtime_named_.find(t);
      e.exec && named != runtime_named_.end() && named->second.time < e.time) {
    runtime_named_.erase(named);
  }
  if (auto named = runtime_named_.find(t); named != runtime_named_.end()) {
    named->second.system = name;
  } else {
    capture_.threads[t].name = name;
  }
  if (e.exec) {
    ProcessState& p = EnsureProcess(e.pid, e.time);
    // exec replaces the whole address space; the old one is kept for samples
    // taken inside execve.
    EndAllMappings(p, e.time, &p.before_exec);
    p.in_exec = true;
    if (stack_extents_ != nullptr) stack_extents_->Forget(e.tid);  // a new stack
    code_map_.ForgetProcess(e.pid);
    for (MappingWatcher* w : mapping_watchers_) w->Forget(uint32_t(e.pid));
    p.root_known = false;  // and may follow a change of namespace
    capture_.processes[p.row].command = name;
  }
}

void Processor::OnFork(const Event& e) {
  if (threads_.count(e.tid)) return;  // already known (duplicate delivery)
  capture::StringId parent_name = kNone;
  auto parent_thread = threads_.find(e.ptid);
  if (parent_thread != threads_.end()) parent_name = SystemName(parent_thread->second);
  if (e.pid != e.ppid && !processes_.count(e.pid)) {
    ProcessState& child = EnsureProcess(e.pid, e.time);
    capture_.processes[child.row].parent_pid = int32_t(e.ppid);
    auto parent = processes_.find(e.ppid);
    if (parent != processes_.end()) {
      capture_.processes[child.row].command = capture_.processes[parent->second.row].command;
      // fork copies the address space: the child starts with the parent's mappings.
      std::vector<uint32_t> rows;
      for (auto& [start, row] : parent->second.live) rows.push_back(row);
      for (uint32_t row : rows) {
        capture::Mapping m = capture_.mappings[row];
        m.process = child.row;
        m.time_start = e.time;
        m.time_end = 0;
        capture_.mappings.push_back(m);
        child.live[m.start] = uint32_t(capture_.mappings.size() - 1);
        AnnounceMapping(e.pid, uint32_t(capture_.mappings.size() - 1));
      }
    }
  }
  capture::ThreadId t = EnsureThread(e.pid, e.tid, e.time);
  if (parent_name != kNone) capture_.threads[t].name = parent_name;
}

void Processor::OnExit(const Event& e) {
  auto t = threads_.find(e.tid);
  if (t == threads_.end()) return;  // already ended (duplicate delivery)
  capture_.threads[t->second].end_time = e.time;
  threads_.erase(t);
  if (stack_extents_ != nullptr) stack_extents_->Forget(e.tid);
  auto p = processes_.find(e.pid);
  if (p == processes_.end()) return;
  // The process (and its address space) ends with its last thread, which
  // need not be the leader; its pid may then be reused by a new process.
  if (p->second.live_threads > 0 && --p->second.live_threads == 0) {
    capture_.processes[p->second.row].end_time = e.time;
    EndAllMappings(p->second, e.time);
    processes_.erase(p);
    code_map_.ForgetProcess(e.pid);
    for (MappingWatcher* w : mapping_watchers_) w->Forget(uint32_t(e.pid));
    for (StackSplicer* s : splicers_) s->OnProcessEnded(uint32_t(e.pid));
  }
}

FrameId Processor::InternFrame(FrameKind kind, ModuleId module, uint64_t address) {
  FrameKey key{address, module, uint8_t(kind)};
  auto it = frames_.find(key);
  if (it != frames_.end()) return it->second;
  capture_.frames.push_back({kind, module, address, kNone});
  FrameId id = FrameId(capture_.frames.size() - 1);
  frames_.emplace(key, id);
  TagNewFrame(id, code_map_.FrameTag(module, address));
  return id;
}

FrameId Processor::MappedFrame(uint32_t row, uint64_t address) {
  // File-backed code is identified by file offset, so the same code loaded
  // at different addresses is one frame; anonymous code (JIT) has no file
  // and keeps its virtual address.
  const capture::Mapping& m = capture_.mappings[row];
  const capture::Module& mod = capture_.modules[m.module];
  uint64_t normalized =
      mod.kind == ModuleKind::kAnonymous ? address : address - m.start + m.file_offset;
  return InternFrame(FrameKind::kNative, m.module, normalized);
}

FrameId Processor::UserFrame(ProcessState& p, uint64_t address) {
  auto it = p.live.upper_bound(address);
  if (it != p.live.begin() && address < capture_.mappings[std::prev(it)->second].end) {
    const uint32_t row = std::prev(it)->second;
    if (!jit_namers_.empty() &&
        capture_.modules[capture_.mappings[row].module].kind == ModuleKind::kAnonymous) {
      if (std::optional<FrameId> f = JitFrame(uint32_t(capture_.processes[p.row].pid), address))
        return *f;
    }
    return MappedFrame(row, address);
  }
  CountProblem(
      "user address outside any known mapping",
      "pid " + std::to_string(capture_.processes[p.row].pid) + " address " + HexAddress(address));
  return InternFrame(FrameKind::kUnmapped, kNone, address);
}

std::optional<FrameId> Processor::JitFrame(uint32_t pid, uint64_t address) {
  for (JitNamer* namer : jit_namers_) {
    std::optional<JitNamer::Symbol> s = namer->Lookup(pid, address);
    if (!s) continue;
    // A module per map (or dump, or object); anonymous: no file to read.
    auto mod = jit_modules_.find(s->module);  // no string made at each sample
    if (mod == jit_modules_.end()) {
      capture::Module m;
      m.path = strings_.Intern(s->module);
      m.kind = ModuleKind::kAnonymous;
      capture_.modules.push_back(std::move(m));
      mod =
          jit_modules_.emplace(std::string(s->module), ModuleId(capture_.modules.size() - 1)).first;
    }
    const capture::StringId name = strings_.Intern(s->name);
    auto [fn, fresh_function] =
        jit_functions_.try_emplace(name, capture::FunctionId(capture_.functions.size()));
    if (fresh_function) capture_.functions.push_back({name, kNone, kNone});
    // JIT memory is reused: the frame is the address with the function
    // named there at the time.
    auto [frame, fresh_frame] = jit_frames_.try_emplace({address, mod->second, fn->second}, kNone);
    if (fresh_frame) {
      capture_.frames.push_back({FrameKind::kNative, mod->second, address, fn->second});
      frame->second = FrameId(capture_.frames.size() - 1);
      TagNewFrame(frame->second, code_tags::kAnonymousCode);
    }
    return frame->second;
  }
  return std::nullopt;
}

FrameId Processor::KernelFrame(uint64_t address) {
  if (kernel_module_ == kNone) {
    kernel_module_ =
        InternModule("[kernel.kallsyms]", options_.kernel_build_id ? *options_.kernel_build_id
                                                                   : symbols::KernelBuildId());
    capture_.modules[kernel_module_].kind = ModuleKind::kKernel;
  }
  return InternFrame(FrameKind::kKernel, kernel_module_, address);
}

void Processor::OnSample(const Event& e) {
  capture::ThreadId thread = EnsureThread(e.pid, e.tid, e.time);
  ProcessState& proc = EnsureProcess(e.pid, e.time);
  scratch_.clear();
  scratch_sp_.clear();
  scratch_label_ = {};
  uint64_t context = 0;
  bool first_in_context = true;
  bool saw_user = false;
  size_t ips = 0;
  const size_t n = e.CallchainSize();
  for (size_t i = 0; i < n; ++i) {
    uint64_t w = e.CallchainAt(i);
    if (w >= kContextMax) {
      context = w;
      first_in_context = true;
      continue;
    }
    ++ips;
    // Caller frames hold return addresses; step back into the call
    // instruction so the frame names the caller's line, not the next one.
    uint64_t address = first_in_context ? w : w - 1;
    first_in_context = false;
    if (context == kContextKernel) {
      scratch_.push_back(KernelFrame(address));
    } else if (context == kContextUser) {
      saw_user = true;
      scratch_.push_back(UserFrame(proc, address));
    }
  }
  StackEnd end = StackEnd::kFramePointerEnd;
  if (options_.call_graph != CallGraph::kFramePointer) {
    end = UnwindUser(e, proc);  // the kernel chain above holds kernel frames only
    if (!e.stack.empty()) LearnExtent(e.tid, end);
    if (scratch_.empty()) end = StackEnd::kEmpty;
  } else if (scratch_.empty()) {
    end = StackEnd::kEmpty;
  } else if (ips >= options_.max_stack) {
    end = StackEnd::kMaxDepth;
  } else if (!saw_user) {
    end = StackEnd::kKernelOnly;
  }
  capture::StackId node = InternScratch(e.pid, e.tid, e.time, e.walk);
  if (!scratch_label_.first.empty())
    AddLabel(thread, scratch_label_.first, scratch_label_.second, e.time);
  capture::Samples& s = capture_.samples;
  s.time.push_back(e.time);
  s.thread.push_back(thread);
  s.stack.push_back(node);
  uint64_t weight = e.period;
  if (!sample_scale_.empty()) {
    auto it = std::upper_bound(
        sample_scale_.begin(), sample_scale_.end(), e.time,
        [](uint64_t t, const std::pair<uint64_t, uint32_t>& change) { return t < change.first; });
    if (it != sample_scale_.begin()) weight *= std::prev(it)->second;
  }
  s.weight.push_back(weight);
  s.end.push_back(end);
  s.cpu.push_back(e.cpu);
  if (sample_observer_) sample_observer_(e.time, thread, weight);
}

capture::StackId Processor::InternScratch(uint32_t pid, uint32_t tid, uint64_t time,
                                          std::span<const uint8_t> walk) {
  if (!splicers_.empty()) SpliceScratch(pid, tid, time, walk);
  return stacks_.InternLeafFirst(scratch_);
}

void Processor::AddLabel(capture::ThreadId thread, std::string_view key, std::string_view value,
                         uint64_t time) {
  const capture::StringId k = strings_.Intern(key), v = strings_.Intern(value);
  capture::LabelSpans& l = capture_.labels;
  auto [it, fresh] = open_labels_.try_emplace({thread, k}, l.size());
  if (!fresh && l.value[it->second] == v) {
    l.end[it->second] = time;
    return;
  }
  it->second = l.size();
  l.Append({.thread = thread, .key = k, .value = v, .start = time, .end = time});
}

void Processor::NoteTime(const Event& e) {
  if (e.time == 0 || e.cpu >= 65536) return;
  if (e.cpu >= last_time_on_cpu_.size()) last_time_on_cpu_.resize(e.cpu + 1, 0);
  uint64_t& t = last_time_on_cpu_[e.cpu];
  t = std::max(t, e.time);
}

capture::Gap Processor::ThrottledGap(int32_t cpu, const Throttled& t, uint64_t until) {
  return {.begin = t.since,
          .end = std::max(t.since, until),
          .pid = t.pid,
          .tid = t.pid != 0 ? t.tid : 0,  // a thread only of a known process
          .cpu = cpu,
          .cause = capture::GapCause::kThrottled,
          .count = 1};
}

void Processor::AppendOpenGaps(uint64_t until, std::vector<capture::Gap>* out) const {
  for (const auto& [key, t] : throttled_) out->push_back(ThrottledGap(key.first, t, until));
  if (budget_gap_) {
    capture::Gap g = *budget_gap_;
    g.end = std::max(g.begin, until);
    out->push_back(g);
  }
}

void Processor::CloseOpenGaps(uint64_t end_time) {
  AppendOpenGaps(end_time, &capture_.gaps);
  throttled_.clear();
  budget_gap_.reset();
}

bool Processor::Followed(const Event& e) {
  switch (e.type) {
    case EventType::kFork:
      // A new thread of a followed process, or a child it forked.
      if (!followed_.count(e.pid) && !followed_.count(e.ppid)) return false;
      followed_.insert(e.pid);
      return true;
    case EventType::kSample:
    case EventType::kMmap2:
    case EventType::kComm:
    case EventType::kExit:
      return followed_.count(e.pid) != 0;
    default:
      return true;  // the rings' own (losses, throttling)
  }
}

void Processor::Process(const Event& e) {
  if (follow_ && !Followed(e)) {
    NoteTime(e);  // its ring's time still moved
    return;
  }
  switch (e.type) {
    case EventType::kSample:
      OnSample(e);
      break;
    case EventType::kMmap2:
      OnMmap2(e);
      break;
    case EventType::kComm:
      OnComm(e);
      break;
    case EventType::kFork:
      OnFork(e);
      break;
    case EventType::kExit:
      OnExit(e);
      // Its last thread gone, a process is no longer followed: its pid may
      // be another process's next.
      if (follow_ && !processes_.count(e.pid)) followed_.erase(e.pid);
      break;
    case EventType::kLost: {
      capture_.settings.lost_records += e.lost;
      loss_seen_ = true;
      // Lost between this CPU's latest record and the LOST record, which
      // the kernel writes once the ring has room again.
      const uint64_t from = e.cpu < last_time_on_cpu_.size() && last_time_on_cpu_[e.cpu] != 0
                                ? last_time_on_cpu_[e.cpu]
                                : capture_.settings.start_time;
      const uint64_t to = std::max(from, e.time);
      capture_.gaps.push_back({.begin = from,
                               .end = to,
                               .cpu = int32_t(e.cpu),
                               .cause = capture::GapCause::kLostRecords,
                               .count = e.lost});
      break;
    }
    case EventType::kLostSamples:
      capture_.settings.lost_samples += e.lost;
      break;
    case EventType::kThrottle:
      ++capture_.settings.throttles;
      throttled_.try_emplace({int32_t(e.cpu), e.id}, Throttled{e.time, e.pid, e.tid});
      break;
    case EventType::kUnthrottle: {
      ++capture_.settings.unthrottles;
      auto t = throttled_.find({int32_t(e.cpu), e.id});
      if (t != throttled_.end()) {
        capture_.gaps.push_back(ThrottledGap(int32_t(e.cpu), t->second, e.time));
        throttled_.erase(t);
      }
      break;
    }
    case EventType::kRaw:  // the pump pairs these with their samples (ring_pairing.h)
    case EventType::kOther:
      break;
  }
  NoteTime(e);
}

void Processor::SetSampleScale(uint64_t time, uint32_t keep_one_in) {
  sample_scale_.emplace_back(time, keep_one_in);
  // One sample in N kept: the others' stacks are not known.
  if (budget_gap_ && budget_gap_->count == keep_one_in) return;
  if (budget_gap_) {
    budget_gap_->end = std::max(budget_gap_->begin, time);
    capture_.gaps.push_back(*budget_gap_);
    budget_gap_.reset();
  }
  if (keep_one_in > 1) {
    budget_gap_ = capture::Gap{
        .begin = time, .end = time, .cause = capture::GapCause::kBudget, .count = keep_one_in};
  }
}

}  // namespace microscope::record
