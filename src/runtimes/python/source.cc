#include "src/runtimes/python/source.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "base/hex.h"
#include "base/scoped_fd.h"
#include "src/record/collector.h"
#include "src/record/problem_counts.h"
#include "src/record/proc.h"
#include "src/runtimes/per_file.h"
#include "src/runtimes/python/code_reader.h"
#include "src/runtimes/python/layout.h"
#include "src/runtimes/python/line_table.h"
#include "src/runtimes/python/module_info.h"
#include "src/runtimes/python/thread_names.h"
#include "src/runtimes/python/walk.h"
#include "src/runtimes/python/walker.h"
#include "src/runtimes/sampler.h"
#include "src/runtimes/snapshot_memory.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::runtimes::python {
namespace {

using record::FrameInterner;
using record::InterpretedFrame;
using record::MappedModule;
using record::SpliceStack;
using runtimes::MemorySnapshot;
using runtimes::Sampler;
using runtimes::SnapshotMemory;

constexpr std::string_view kSourceName = "python";       // kRuntime.name
const uint8_t kEvalTag = record::code_tags::Allocate();  // _PyEval_EvalFrameDefault's code
// What an activation of the eval loop is called where no symbol names it.
constexpr std::string_view kEvalLoopName = "_PyEval_EvalFrameDefault (eval loop)";
const uint8_t kModuleTag = record::code_tags::Allocate();  // the rest of the module
constexpr uint64_t kRefreshNs = 20'000'000;                // thread maps, about every 20 ms
constexpr uint64_t kNamesNs = 500'000'000;  // thread names, when no thread came or went
// A thread state threading has not named is read again at each refresh for
// this long; past it, it is a thread threading does not know (a C
// extension's, or _thread's) and is read every kNamesNs with the rest.
constexpr uint64_t kNamesYoungNs = 2'000'000'000;
constexpr size_t kMaxNotes = 16;
constexpr uint64_t kRetryNs = 2'000'000;  // an exec'd process's maps, every 2 ms
constexpr uint64_t kExecWindowNs =
    1'000'000'000;  // for up to 1 s             // laid-out processes named in the notes

struct CodeKey {
  uint64_t code, qualname, filename;
  int32_t first_line;
  bool operator<(const CodeKey& o) const {
    return std::tie(code, qualname, filename, first_line) <
           std::tie(o.code, o.qualname, o.filename, o.first_line);
  }
};
struct NamedCode {
  std::string error;  // non-empty: not named, why
  CodeInfo info;
};

// Code objects as the walks first saw them (python.h: struct
// py_code_snapshot), by address and proof fields (an address reused by
// another code object is another key), and the bytes they hold (counted in
// the recording's target memory).
struct CodeSnapshots {
  std::map<CodeKey, MemorySnapshot> by_key;
  uint64_t bytes = 0;
};

struct Process {
  uint32_t pid = 0;
  const ModuleInfo* module = nullptr;
  InterpreterAddresses at;  // in the process
  std::unique_ptr<ProcessMemory> memory;
  bool own_namespace = true;
  // Exited: its walks still wait in the rings, named from what was read
  // while it ran.
  bool gone = false;
  uint64_t laid_out_at = 0;  // when the walker got its layout
  std::map<CodeKey, NamedCode> codes;
  CodeSnapshots snapshots;
  // Thread names from threading, read when its thread states change and
  // at least every kNamesNs: each thread's (by tid) as last given.
  ThreadNamesCache names_cache;
  std::set<uint64_t> named_states;
  // Thread states threading had not named at the last read, by when each
  // was first seen: a thread's state exists before threading registers it
  // (when it first holds the GIL, which may take a while), so a young one is
  // read again at each refresh until named or kNamesYoungNs old.
  std::unordered_map<uint64_t, uint64_t> unnamed_since;
  uint64_t names_read_at = 0, names_cost_ns = 0;
  std::unordered_map<uint32_t, std::string> names;
};

class PythonSource final : public record::EventlessSource, public record::StackSplicer {
 public:
  PythonSource(const record::SourceContext& context)
      : mode_(context.options.RuntimeMode(kSourceName)),
        warn_(context.warn),
        collector_(context.collector),
        shared_sampler_(context.runtime_sampler),
        shared_maps_(context.shared_maps),
        target_(uint32_t(context.target)),
        walk_frames_(context.options.runtime_frames),
        target_memory_(context.target_memory) {
    own_ns_ = PidNamespace("self");
    wake_ = ScopedFd(epoll_create1(EPOLL_CLOEXEC));
    timer_ = ScopedFd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    Watch(timer_.get());
  }

  // Loads the walker onto the sampler's events. In auto mode a recording of
  // a program that does not look like Python starts it when a Python
  // interpreter is first mapped: the kernel takes about 60 ms to verify it.
  Status Start() {
    ASSIGN_OR_RETURN(
        std::shared_ptr<Sampler> sampler,
        Sampler::Attach(collector_, target_, walk_frames_, shared_maps_, shared_sampler_));
    sampler->AddExecListener([this](const Sampler::Exec& e) {
      // After Finish (another runtime drained the ring): continued at once.
      if (walker_ == nullptr && e.held) {
        kill(pid_t(e.pid), SIGCONT);
      } else {
        exec_pids_.push_back(e);
      }
    });
    auto walker = std::make_unique<Walker>(std::move(sampler));
    // Execs of interpreters the walker does not know yet are held until
    // they are laid out (TakeExecs): their first Python frames are walked.
    RETURN_IF_ERROR(walker->HoldUnknownExecs());
    Watch(walker->sampler().wait_fd());
    walker_ = std::move(walker);
    walking_since_ = MonotonicNowNs();
    dormant_ = false;
    return OkStatus();
  }
  void Refuse(const Status& why) {
    refused_ = why.message();
    dormant_ = false;
  }
  void Sleep() { dormant_ = true; }
  // The launched program, when it is an interpreter executable: laid out at
  // its own exec, before its first sample.
  void AddLaunchedImage(const std::string& path);

  int wait_fd() const override { return wake_.get(); }
  void Poll(const record::PollWindow& window, record::RowSink* sink) override;
  void Finish(record::RowSink* sink, capture::Settings* settings) override;
  record::StackSplicer* splicer() override { return this; }

  void OnModuleMapped(const MappedModule& mapping, record::CodeMarks* marks) override;
  void Splice(const SpliceStack& stack, FrameInterner* interner) override;
  void OnProcessEnded(uint32_t pid) override;
  bool OwnsWalk(std::span<const uint8_t> walk) const override { return IsPythonWalk(walk); }

 private:
  const ModuleInfo* InfoOf(const std::string& file);
  const ModuleInfo* Module(const MappedModule& mapping, record::CodeMarks* marks);
  // Lays out `pid` from the interpreter module mapped at `start`.
  void LayOut(uint32_t pid, uint64_t start, uint64_t file_offset, const ModuleInfo& module,
              const std::string& file);
  // When `file` (as process `pid` sees it) is its executable, processes
  // that exec it from now on are laid out at the exec.
  void AddImage(uint32_t pid, const std::string& file, const ModuleInfo& module);
  // Gives the walker interpreter executable `path` (`st`: its stat), once.
  void GiveImage(const std::string& path, const struct stat& st, const ModuleInfo& module);
  // Lays out `pid` from /proc/PID/maps (a process that just exec'd, ahead
  // of its mapping records); false when no interpreter is mapped yet.
  bool LayOutFromMaps(uint32_t pid);
  void TakeExecs();
  void RefreshThreads(record::RowSink* sink);
  void NameThreads(Process& p, std::span<const PythonThread> threads,
                   const std::unordered_map<uint64_t, uint32_t>& tids, record::RowSink* sink);
  // Keeps the code objects the walks copied since the last call.
  void TakeSnapshots();
  void Keep(const py_code_snapshot& s);
  capture::FrameId Name(Process* process, const WalkFrame& frame, FrameInterner* interner);
  // Names the native frame of an eval loop activation after the eval loop
  // where its module's symbols do not name its code (3.14 and 3.15 as
  // Debian builds them split parts of the loop out of its symbol).
  void NameActivation(capture::FrameId native, FrameInterner* interner);
  // The code object a walk names by `key`, read and proved once.
  const NamedCode& Code(Process* process, const CodeKey& key);
  capture::FrameId Unknown(const std::string& why, FrameInterner* interner) {
    ++unknown_frames_;
    return interner->Interpreted({"[unknown Python: " + why + "]", "", 0, 0});
  }
  void Problem(const std::string& kind, const std::string& example) {
    problems_.Count(kind, example);
  }
  // A stack of `pid` at `time` with interpreter frames and no walk, the
  // walker on it from `on` (0: not laid out yet); gaps given to the sink
  // once the records before their end are all processed (`processed`: the
  // pump's PollWindow), and all of them at the end.
  void NotOnYet(uint32_t pid, uint64_t time, uint64_t on);
  void AddNotOnGaps(record::RowSink* sink, uint64_t processed, bool all);

  void Watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (wake_.valid() && fd >= 0) epoll_ctl(wake_.get(), EPOLL_CTL_ADD, fd, &ev);
  }

  std::unique_ptr<Walker> walker_;  // null when refused_ or dormant_
  std::string refused_;
  bool dormant_ = false;           // auto: started when a Python interpreter appears
  bool seen_interpreter_ = false;  // a CPython interpreter was mapped
  std::string mode_;
  std::function<void(const std::string&)> warn_;
  record::Collector* collector_;
  std::shared_ptr<Sampler>* shared_sampler_;
  record::SharedBpfMaps* shared_maps_;
  uint32_t target_;
  uint32_t walk_frames_;  // the most frames a walk keeps (record --runtime-frames)
  record::TargetMemory* target_memory_;
  bool warned_ = false;
  std::optional<std::pair<uint64_t, uint64_t>> own_ns_;
  PerFile<ModuleInfo> by_file_;
  std::unordered_map<capture::ModuleId, const ModuleInfo*> modules_;
  // Processes that exec'd and whose interpreter is not mapped yet: until when
  // /proc/PID/maps is looked at (every kRetryNs, by the timer in wake_).
  std::unordered_map<uint32_t, uint64_t> execs_;
  std::vector<Sampler::Exec> exec_pids_;  // heard of since the last TakeExecs
  uint64_t execs_held_ = 0;               // held at their exec, continued here
  ScopedFd wake_;                         // epoll: the walker's exec ring and timer_
  ScopedFd timer_;                        // timerfd
  std::unordered_map<uint32_t, Process> processes_;
  struct NotOn {
    uint64_t first, last, on;
  };
  std::map<uint32_t, NotOn> not_on_;                // by pid: sampled before the walker was on
  std::set<std::pair<uint64_t, uint64_t>> images_;  // given to the walker: (st_dev, st_ino)
  // Code object copies of processes not laid out here yet, by pid.
  std::unordered_map<uint32_t, CodeSnapshots> pending_;
  std::vector<std::string> notes_;
  record::ProblemCounts problems_;
  uint64_t last_refresh_ = 0;
  uint64_t walking_since_ = MonotonicNowNs();  // the program is on the events
  uint64_t stacks_ = 0, stacks_named_ = 0, walks_ = 0, python_frames_ = 0, unknown_frames_ = 0;
  uint64_t walks_cut_ = 0;  // that reached the frame bound
  // Code objects copied by the walks, kept; and named from such a copy.
  uint64_t snapshots_kept_ = 0, codes_from_snapshots_ = 0;
  uint64_t threads_named_ = 0;      // by threading's names
  uint64_t activations_named_ = 0;  // native frames NameActivation named
  // What Splice reuses from one stack to the next: no allocation per stack.
  Walk walk_;
  SpliceScratch scratch_;
  struct {
    Process* process = nullptr;
    FrameInterner* interner = nullptr;
  } splicing_;  // the stack being spliced, for hooks_ (which capture only this)
  const Walker::SnapshotTaker keep_ = [this](const py_code_snapshot& s) { Keep(s); };
  SpliceHooks hooks_{
      [this](const WalkFrame& f) { return Name(splicing_.process, f, splicing_.interner); },
      [this](const std::string& why) { return Unknown(why, splicing_.interner); },
      [this](capture::FrameId f) { NameActivation(f, splicing_.interner); }};
};

const ModuleInfo* PythonSource::InfoOf(const std::string& file) {
  return by_file_.Get(file, ReadModuleInfo, [this](const ModuleInfo& info) {
    if (info.python && !info.error.empty() && notes_.size() < kMaxNotes)
      notes_.push_back("Python: " + info.error);
  });
}

const ModuleInfo* PythonSource::Module(const MappedModule& mapping, record::CodeMarks* marks) {
  auto [it, fresh] = modules_.try_emplace(mapping.module, nullptr);
  if (!fresh) return it->second;
  const ModuleInfo* info = InfoOf(record::TargetFile(mapping.pid, mapping.path));
  it->second = info;
  if (!info->python || !info->error.empty()) return info;
  // Every stack through the interpreter is handed to Splice; frames in the
  // eval loop's symbol place the walks of a release without shims (3.11).
  const uint64_t eb = info->eval_begin, ee = info->eval_end;
  marks->MarkRuntime(mapping.module, capture::Runtime::kCPython);
  if (ee > eb) marks->Mark(mapping.module, eb, ee, kEvalTag);
  for (const symbols::LoadSegment& s : info->loads) {
    const uint64_t begin = s.offset, end = s.offset + s.filesz;
    if (ee <= begin || eb >= end) {
      marks->Mark(mapping.module, begin, end, kModuleTag);
    } else {
      marks->Mark(mapping.module, begin, eb, kModuleTag);
      marks->Mark(mapping.module, ee, end, kModuleTag);
    }
  }
  return info;
}

void PythonSource::OnModuleMapped(const MappedModule& mapping, record::CodeMarks* marks) {
  const ModuleInfo* module = Module(mapping, marks);
  if (!module->python) return;
  seen_interpreter_ = true;
  if (dormant_ && module->error.empty()) {
    if (Status started = Start(); !started.ok()) Refuse(started);
  }
  if (!refused_.empty()) {
    if (!warned_ && warn_) warn_("Python frames not recorded: " + refused_);
    warned_ = true;
    return;
  }
  if (module->error.empty() &&
      record::StillMapped(pid_t(mapping.pid), mapping.start, mapping.path)) {
    LayOut(mapping.pid, mapping.start, mapping.file_offset, *module,
           record::TargetFile(mapping.pid, mapping.path));
  }
}

bool PythonSource::LayOutFromMaps(uint32_t pid) {
  for (const record::ExecutableMapping& m : record::ExecutableMappings(pid_t(pid))) {
    if (m.path.empty() || m.path[0] != '/') continue;
    const std::string file = record::TargetFile(pid, m.path);
    const ModuleInfo* info = InfoOf(file);
    if (!info->python || !info->error.empty()) continue;
    LayOut(pid, m.start, m.offset, *info, file);
    return true;
  }
  return false;
}

void PythonSource::AddImage(uint32_t pid, const std::string& file, const ModuleInfo& module) {
  struct stat exe, mapped;
  if (stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &exe) != 0 ||
      stat(file.c_str(), &mapped) != 0 || exe.st_dev != mapped.st_dev ||
      exe.st_ino != mapped.st_ino) {
    return;  // a shared libpython: its bias is not the executable's
  }
  GiveImage(file, exe, module);
}

void PythonSource::AddLaunchedImage(const std::string& path) {
  struct stat st;
  if (walker_ == nullptr || path.empty() || stat(path.c_str(), &st) != 0) return;
  const ModuleInfo* info = InfoOf(path);
  if (info->python && info->error.empty()) GiveImage(path, st, *info);
}

void PythonSource::GiveImage(const std::string& path, const struct stat& st,
                             const ModuleInfo& module) {
  if (!images_.insert({uint64_t(st.st_dev), uint64_t(st.st_ino)}).second) return;  // given
  Status set = walker_->SetImage(path, module.layout, module.at.runtime);
  if (!set.ok()) Problem("Python images not given to the walker", set.message());
}

void PythonSource::LayOut(uint32_t pid, uint64_t start, uint64_t file_offset,
                          const ModuleInfo& module, const std::string& file) {
  uint64_t vaddr;
  if (!symbols::OffsetToVaddr(module.loads, file_offset, &vaddr)) return;
  const uint64_t bias = start - vaddr;
  Process& p = processes_[pid];
  if (p.module == &module && p.at.runtime == module.at.runtime + bias && !p.gone) return;  // known
  // The copies stay: those of the program before an exec are other keys,
  // and those BPF sent before this layout (it laid the exec out) are the
  // process's. So do the code objects named: samples the program took
  // just before its exec are processed after this layout, and the copies
  // they were named from were given back as they were read.
  CodeSnapshots copies = std::move(p.snapshots);
  std::map<CodeKey, NamedCode> named = std::move(p.codes);
  if (auto early = pending_.find(pid); early != pending_.end()) {
    for (auto& [key, snapshot] : early->second.by_key) {
      auto [it, fresh] = copies.by_key.try_emplace(key);
      if (!fresh && target_memory_ != nullptr) target_memory_->Give(it->second.bytes);
      if (!fresh) copies.bytes -= it->second.bytes;
      copies.bytes += snapshot.bytes;
      it->second = std::move(snapshot);
    }
    pending_.erase(early);
  }
  p = Process{};
  p.pid = pid;
  p.snapshots = std::move(copies);
  p.codes = std::move(named);
  p.module = &module;
  p.at = module.at.Biased(bias);
  p.memory = std::make_unique<ProcessMemory>(pid_t(pid));
  ProcessWalk where;
  where.runtime = p.at.runtime;
  auto ns = PidNamespace(std::to_string(pid));
  p.own_namespace = !ns || !own_ns_ || *ns == *own_ns_;
  if (!p.own_namespace) std::tie(where.pidns_dev, where.pidns_ino) = *ns;
  (void)walker_->sampler().Follow(pid);  // its execs (a walker started late follows it from here)
  // A child BPF laid out at its fork or exec has been walked from its
  // start: a sample of it without a walk lost its walk, it did not come
  // before the walker (user space hears of the child later, the more so
  // on a loaded machine). One that exited before user space heard of it
  // (BPF forgot it at its exit) cannot say which: its samples without a
  // walk say only that, and BPF is not given a dead pid to walk.
  const bool walked = walker_->Walks(pid);
  const bool gone = record::ProcessGone(pid_t(pid));
  Status set = gone ? OkStatus() : walker_->SetProcess(pid, module.layout, where);
  p.laid_out_at = walked || gone ? 0 : MonotonicNowNs();
  if (!set.ok()) {
    Problem("Python process not laid out", "pid " + std::to_string(pid) + ": " + set.message());
    processes_.erase(pid);
    return;
  }
  AddImage(pid, file, module);
  if (notes_.size() < kMaxNotes) {
    notes_.push_back("Python: pid " + std::to_string(pid) + " CPython " + module.layout.Version());
  }
  last_refresh_ = 0;  // its threads at the next poll
}

void PythonSource::RefreshThreads(record::RowSink* sink) {
  for (auto it = processes_.begin(); it != processes_.end();) {
    auto& [pid, p] = *it;
    if (p.gone) {
      ++it;
      continue;
    }
    Result<std::vector<PythonThread>> threads = ListThreads(*p.memory, p.module->layout, p.at);
    if (!threads.ok()) {
      // Exiting: its memory is gone before it is a zombie.
      if (record::ProcessGone(pid_t(pid)) || record::ExecutableMappings(pid_t(pid)).empty()) {
        p.gone = true;
        ++it;
        continue;
      }
      Problem("Python thread list unreadable",
              "pid " + std::to_string(pid) + ": " + threads.status().message());
      ++it;
      continue;
    }
    std::unordered_map<uint64_t, uint32_t> tids;
    if (!p.own_namespace) tids = NamespaceTids(pid);
    std::vector<Walker::Thread> mapped;
    for (const PythonThread& t : *threads) {
      uint64_t tid = t.native_id;
      if (!p.own_namespace) {
        auto found = tids.find(t.native_id);
        if (found == tids.end()) continue;
        tid = found->second;
      }
      if (tid == 0 || tid > UINT32_MAX) continue;
      mapped.push_back({uint32_t(tid), t.state, t.native_id});
    }
    Status set = walker_->SetThreads(pid, mapped);
    if (!set.ok()) Problem("Python threads not given to the walker", set.message());
    std::unordered_map<uint64_t, uint32_t> tid_of;  // by thread state
    for (const Walker::Thread& t : mapped) tid_of[t.tstate] = t.tid;
    NameThreads(p, *threads, tid_of, sink);
    // The code objects each thread runs now, read while the program runs: a
    // thread blocked until the program's end is walked (off-CPU, system
    // calls) at its wake, when the process may be gone by the time its walk
    // is named.
    for (const PythonThread& t : *threads) {
      Result<std::vector<FrameCode>> frames = ReadFrameCodes(*p.memory, p.module->layout, t.state);
      if (!frames.ok()) continue;
      for (const FrameCode& f : *frames) Code(&p, {f.code, f.qualname, f.filename, f.first_line});
    }
    ++it;
  }
}

void PythonSource::NameThreads(Process& p, std::span<const PythonThread> threads,
                               const std::unordered_map<uint64_t, uint32_t>& tids,
                               record::RowSink* sink) {
  if (!ThreadNamesReadable(p.module->layout, p.at)) return;
  std::set<uint64_t> states;
  for (const PythonThread& t : threads) states.insert(t.state);
  const uint64_t now = MonotonicNowNs();
  const bool young_unnamed = std::ranges::any_of(p.unnamed_since, [&](const auto& u) {
    return states.contains(u.first) && now - u.second < kNamesYoungNs;
  });
  if (states == p.named_states && !young_unnamed && now - p.names_read_at < kNamesNs) return;
  // At most 5% of a CPU: a read of 600 threads' names takes some 10 ms of
  // the recorder's CPU (its CPU time: on a loaded machine the wall-clock
  // time of a read counts the waits for a CPU, and held the next read back
  // for seconds).
  if (now - p.names_read_at < 20 * p.names_cost_ns) return;
  p.names_read_at = now;
  const uint64_t cpu = ThreadCpuNowNs();
  Result<std::unordered_map<uint64_t, std::string>> names =
      ReadThreadNames(*p.memory, p.module->layout, p.at, &p.names_cache);
  p.names_cost_ns = ThreadCpuNowNs() - cpu;
  if (!names.ok()) {
    // Exiting, or a program that made threading unlike itself.
    if (!record::ProcessGone(pid_t(p.pid)))
      Problem("Python thread names not read",
              "pid " + std::to_string(p.pid) + ": " + names.status().message());
    return;
  }
  std::unordered_map<uint64_t, uint64_t> unnamed;
  for (const PythonThread& t : threads) {
    auto name = names->find(t.ident);
    auto tid = tids.find(t.state);
    if (name == names->end() || tid == tids.end()) {
      auto seen = p.unnamed_since.find(t.state);
      unnamed.emplace(t.state, seen != p.unnamed_since.end() ? seen->second : now);
      continue;
    }
    std::string& given = p.names[tid->second];
    if (given == name->second) continue;
    if (given.empty()) ++threads_named_;
    given = name->second;
    sink->NameThread(p.pid, tid->second, now, given);
  }
  p.named_states = std::move(states);
  p.unnamed_since = std::move(unnamed);
  // Only the living threads' names are kept: a program that starts
  // threads without end costs no more than its threads of the moment.
  std::unordered_set<uint32_t> living;
  for (const auto& [state, tid] : tids) living.insert(tid);
  std::erase_if(p.names, [&](const auto& named) { return !living.contains(named.first); });
}

void PythonSource::TakeExecs() {
  const uint64_t now = MonotonicNowNs();
  uint64_t expirations;
  if (timer_.valid()) (void)!read(timer_.get(), &expirations, sizeof(expirations));
  if (Status s = walker_->sampler().DrainExecs(); !s.ok())
    Problem("runtime execs not read", s.message());
  for (const Sampler::Exec& e : exec_pids_) {
    const uint32_t pid = e.pid;
    execs_[pid] = now + kExecWindowNs;
    // Another program now: its old interpreter's threads are not read again
    // (laid out afresh below if the new program is Python too).
    if (auto old = processes_.find(pid); old != processes_.end()) old->second.gone = true;
    if (e.unheld != 0) {
      Problem(
          "interpreter execs not held until laid out",
          "pid " + std::to_string(pid) + ": " +
              (e.unheld == 1 ? std::string("its parent hears its stops")
                             : "SIGSTOP refused (" + std::string(std::strerror(-e.unheld)) + ")"));
    }
    if (!e.held) continue;
    // Stopped at its exec, before its first instruction: laid out from its
    // executable's mapping (which also teaches BPF the image for the next
    // exec of it), then continued whatever came of that.
    if (LayOutFromMaps(pid)) execs_.erase(pid);
    if (kill(pid_t(pid), SIGCONT) != 0 && errno != ESRCH)
      Problem("held processes not continued", std::to_string(pid) + ": " + std::strerror(errno));
    ++execs_held_;
  }
  exec_pids_.clear();
  for (auto it = execs_.begin(); it != execs_.end();) {
    if (LayOutFromMaps(it->first) || now > it->second || kill(pid_t(it->first), 0) != 0) {
      it = execs_.erase(it);
    } else {
      ++it;
    }
  }
  // Look again soon while an exec'd process may still map its interpreter
  // (a shared libpython is mapped by ld.so after the exec).
  itimerspec t{};
  if (!execs_.empty()) t.it_value.tv_nsec = t.it_interval.tv_nsec = long(kRetryNs);
  if (timer_.valid()) timerfd_settime(timer_.get(), 0, &t, nullptr);
}

void PythonSource::OnProcessEnded(uint32_t pid) {
  // Its code objects and the walks' copies of them, those still in the
  // ring too: a long recording of many short programs keeps only what the
  // living ones need.
  TakeSnapshots();
  uint64_t bytes = 0;
  if (auto p = processes_.find(pid); p != processes_.end()) {
    bytes += p->second.snapshots.bytes;
    processes_.erase(p);
  }
  if (auto early = pending_.find(pid); early != pending_.end()) {
    bytes += early->second.bytes;
    pending_.erase(early);
  }
  if (target_memory_ != nullptr) target_memory_->Give(bytes);
}

void PythonSource::TakeSnapshots() {
  if (walker_ == nullptr) return;
  Status drained = walker_->DrainSnapshots(keep_);
  if (!drained.ok()) Problem("Python code snapshots not read", drained.message());
}

void PythonSource::Keep(const py_code_snapshot& s) {
  // A process BPF laid out at its exec may be sent before user space lays
  // it out from its mappings: its copies wait for that.
  auto p = processes_.find(s.pid);
  const CodeKey key{s.code, s.qualname, s.filename, s.first_line};
  // A code object named already (BPF's record of what it sent was evicted
  // and it sent it again) needs no copy: what it names is kept.
  if (p != processes_.end() && p->second.codes.contains(key)) return;
  CodeSnapshots& into = p != processes_.end() ? p->second.snapshots : pending_[s.pid];
  MemorySnapshot snapshot;
  snapshot.Add(s.code, s.code_bytes, s.code_size, sizeof(s.code_bytes));
  snapshot.Add(s.qualname, s.qualname_bytes, s.qualname_size, sizeof(s.qualname_bytes));
  snapshot.Add(s.filename, s.filename_bytes, s.filename_size, sizeof(s.filename_bytes));
  snapshot.Add(s.table, s.table_bytes, s.table_size, sizeof(s.table_bytes));
  std::optional<int64_t> change =
      runtimes::KeepSnapshot(&into.by_key, key, std::move(snapshot), target_memory_);
  if (!change) {
    Problem("Python code snapshots not kept",
            "the recording keeps at most --target-memory of what its targets write");
    return;
  }
  into.bytes += uint64_t(*change);
  ++snapshots_kept_;
}

void PythonSource::NotOnYet(uint32_t pid, uint64_t time, uint64_t on) {
  auto [it, fresh] = not_on_.try_emplace(pid, NotOn{time, time, on});
  NotOn& n = it->second;
  n.first = std::min(n.first, time);
  n.last = std::max(n.last, time);
  n.on = std::max(n.on, on);
}

void PythonSource::AddNotOnGaps(record::RowSink* sink, uint64_t processed, bool all) {
  for (auto it = not_on_.begin(); it != not_on_.end();) {
    const NotOn& n = it->second;
    // Given once every record stamped before the walker was on has been
    // processed (one gap, not a piece per round); at the end, also those
    // never laid out (their end: the last such stack).
    if (!all && (n.on == 0 || processed <= n.on)) {
      ++it;
      continue;
    }
    sink->AddGap({.begin = n.first,
                  .end = std::max(n.on != 0 ? n.on : n.last, n.first),
                  .pid = it->first,
                  .cause = capture::GapCause::kWalkerNotOn,
                  .count = 1});
    it = not_on_.erase(it);
  }
}

void PythonSource::Poll(const record::PollWindow& window, record::RowSink* sink) {
  AddNotOnGaps(sink, window.processed, window.final);
  if (walker_ == nullptr) return;
  TakeSnapshots();
  TakeExecs();
  const uint64_t now = MonotonicNowNs();
  if (now - last_refresh_ < kRefreshNs) return;
  last_refresh_ = now;
  RefreshThreads(sink);
}

const NamedCode& PythonSource::Code(Process* process, const CodeKey& key) {
  if (auto known = process->codes.find(key); known != process->codes.end()) return known->second;
  // The walk's copy of it went before its sample, and is taken before the
  // key is entered: Keep passes over copies of what is named already.
  TakeSnapshots();
  NamedCode& named = process->codes[key];
  const ModuleInfo& m = *process->module;
  // As the walk that first met it copied it, where it did (the code object
  // may be freed since, or its process gone); else from the live process.
  // The copy is given back once read: what it names (its line table with
  // it) is kept, and BPF copies a code object once, so a process's copies
  // cost only what is not yet named, not its whole life.
  std::optional<MemorySnapshot> copy;
  if (auto s = process->snapshots.by_key.find(key); s != process->snapshots.by_key.end()) {
    copy = std::move(s->second);
    process->snapshots.by_key.erase(s);
    process->snapshots.bytes -= copy->bytes;
    ++codes_from_snapshots_;
  }
  std::optional<SnapshotMemory> copied;
  if (copy) copied.emplace(process->pid, process->memory.get(), *copy);
  Result<CodeInfo> info = ReadCode(copied ? static_cast<ProcessMemory&>(*copied) : *process->memory,
                                   m.layout, process->at, key.code);
  if (copy && target_memory_ != nullptr) target_memory_->Give(copy->bytes);
  if (!info.ok()) {
    named.error = process->gone && info.status().code() == StatusCode::kUnavailable
                      ? "process exited before its code object was read"
                  : info.status().code() == StatusCode::kUnavailable ? "code object unreadable"
                                                                     : "not a code object";
    Problem("Python code objects not named", info.status().message());
  } else if (info->qualname_object != key.qualname || info->filename_object != key.filename ||
             info->first_line != key.first_line) {
    // Freed and its memory reused since the walk: another function's now.
    named.error = "code object changed since the walk";
    Problem("Python code objects not named",
            "code object at " + HexAddress(key.code) + " changed since the walk");
  } else {
    named.info = std::move(*info);
  }
  return named;
}

capture::FrameId PythonSource::Name(Process* process, const WalkFrame& f, FrameInterner* interner) {
  const NamedCode& named = Code(process, {f.code, f.qualname, f.filename, f.first_line});
  if (!named.error.empty()) return Unknown(named.error, interner);
  const CodeInfo& info = named.info;
  uint32_t line = uint32_t(std::max(info.first_line, 0));
  if (!info.lines_error.empty()) {
    line = 0;  // named from the walk's copy, whose line table was cut
    Problem("Python lines not read", info.qualname + ": " + info.lines_error);
  } else if (f.instr != WalkFrame::kNoInstr) {
    LineLookup l = info.lines.Find(f.instr / 2);
    if (l.kind == LineLookup::kLine) {
      line = uint32_t(std::max(l.line, 0));
    } else if (l.kind != LineLookup::kNoLine) {
      Problem("Python lines not found",
              info.qualname + " instruction " + std::to_string(f.instr / 2));
    }
  }
  ++python_frames_;
  return interner->Interpreted(
      {info.qualname, info.filename, line, uint32_t(std::max(info.first_line, 0))});
}

void PythonSource::NameActivation(capture::FrameId native, FrameInterner* interner) {
  const capture::Frame& f = interner->frame(native);
  if (f.kind != capture::FrameKind::kNative || f.function != capture::kNone) return;
  auto m = modules_.find(f.module);
  if (m == modules_.end() || m->second == nullptr || m->second->image == nullptr) return;
  const ModuleInfo& info = *m->second;
  uint64_t vaddr;
  if (!symbols::OffsetToVaddr(info.loads, f.address, &vaddr)) return;
  if (!info.image->symbols.Find(vaddr).name.empty()) return;
  interner->NameNative(native, kEvalLoopName);
  ++activations_named_;
}

void PythonSource::Splice(const SpliceStack& stack, FrameInterner* interner) {
  // Only stacks through the interpreter: a walk whose stack shows none of
  // it has no activation to go in.
  if (std::none_of(stack.tags.begin(), stack.tags.end(),
                   [](uint8_t t) { return t == kEvalTag || t == kModuleTag; })) {
    return;
  }
  const uint64_t unknown_before = unknown_frames_, frames_before = python_frames_;
  auto p = processes_.find(stack.pid);
  const Walk* walk = nullptr;
  std::string no_walk;
  if (!refused_.empty()) {
    no_walk = "not recorded: " + refused_;
  } else if (p == processes_.end()) {
    no_walk = "the interpreter was not laid out (yet)";
    NotOnYet(stack.pid, stack.time, 0);
  } else if (walker_ == nullptr) {
    no_walk = "the walker is not running";
  } else if (stack.walk.empty()) {
    // An attach's events sample before the walker is on them, a new
    // interpreter before it is laid out.
    const uint64_t on = std::max(walking_since_, p->second.laid_out_at);
    if (stack.time < on) {
      no_walk = "sampled before the walker was on this process";
      NotOnYet(stack.pid, stack.time, on);
    } else {
      no_walk = "no walk for this stack";
    }
  } else if (Status parsed = ParseWalk(stack.walk, &walk_); !parsed.ok()) {
    Problem("malformed Python walks", parsed.message());
    no_walk = "malformed walk";
  } else if (walk_.pid != stack.pid || walk_.tid != stack.tid) {
    Problem("Python walks of another thread", "walk of " + std::to_string(walk_.tid) +
                                                  " paired with a sample of " +
                                                  std::to_string(stack.tid));
    no_walk = "walk of another thread";
  } else {
    walk = &walk_;
    ++walks_;
    if (walk->status == MICROSCOPE_PY_TRUNCATED) ++walks_cut_;
    if (walk->gil_known && walk->tstate != 0 && stack.label != nullptr)
      *stack.label = {capture::kGilLabel, walk->holds_gil ? "held" : "released"};
  }
  splicing_ = {p != processes_.end() ? &p->second : nullptr, interner};
  SpliceWalk(walk, no_walk, stack.frames, stack.tags, stack.sps, kEvalTag, hooks_, &scratch_);
  if (python_frames_ == frames_before && unknown_frames_ == unknown_before) return;
  ++stacks_;  // with Python frames, or an unknown marker
  if (unknown_frames_ == unknown_before) ++stacks_named_;
}

void PythonSource::Finish(record::RowSink* sink, capture::Settings* settings) {
  // Execs held since the last poll are continued before the walker goes.
  if (walker_ != nullptr) TakeExecs();
  AddNotOnGaps(sink, UINT64_MAX, true);
  problems_.Report(sink);
  // auto, a launcher whose children ran no Python: the walker waited.
  const bool none = dormant_ || (mode_ == "auto" && !seen_interpreter_);
  const std::string state = !refused_.empty() ? "off: " + refused_
                            : none            ? "off: no CPython interpreter was mapped"
                                              : "on";
  capture::SourceSetting& s = settings->SetSource(std::string(kSourceName), state);
  s.values = {{"stacks", stacks_},
              {"stacks_all_named", stacks_named_},
              {"walks", walks_},
              {"frame_bound", std::min<uint64_t>(walk_frames_, MICROSCOPE_PY_MAX_FRAMES)},
              {"walks_cut", walks_cut_},
              {"frames", python_frames_},
              {"unknown_frames", unknown_frames_},
              {"code_snapshots", snapshots_kept_},
              {"codes_named_from_snapshots", codes_from_snapshots_},
              {"eval_loop_frames_named", activations_named_},
              {"execs_held", execs_held_},
              {"threads_named", threads_named_},
              {"walks_lost", walker_ ? walker_->sampler().Lost() : 0}};
  for (std::string& n : notes_) settings->notes.push_back(std::move(n));
  if (walker_ != nullptr && !none) {
    settings->notes.push_back(
        "Python (" + mode_ +
        "): frames walked by BPF at each sample of processes whose "
        "interpreter was mapped (CPython " +
        KnownReleases() + "), at most " +
        std::to_string(std::min<uint32_t>(walk_frames_, MICROSCOPE_PY_MAX_FRAMES)) +
        " per stack; " + std::to_string(walks_cut_) + " of " + std::to_string(walks_) +
        " walks cut there (--runtime-frames). Threads named as threading names them "
        "(Thread.name, read from the process as its threads come and go and every 0.5 s; "
        "CPython 3.11, 3.13 on): " +
        std::to_string(threads_named_));
  }
  walker_.reset();
}

}  // namespace

namespace {

Result<std::unique_ptr<record::EventSource>> StartPythonSource(
    const record::SourceContext& context) {
  const std::string_view mode = context.options.RuntimeMode(kSourceName);
  auto source = std::make_unique<PythonSource>(context);
  const std::string program = ProgramPath(context);
  const bool python =
      mode == "bpf" || LooksLikePython(context.launch, uint32_t(context.target), program);
  // A launcher's Python child is held at its exec until laid out, which
  // takes a walker already on: loading it then (some 100 ms) would lose
  // the child's first Python frames.
  const bool now = python || (context.launch && LooksLikeLauncher(program));
  if (!now) {
    source->Sleep();
  } else if (Status started = source->Start(); !started.ok()) {
    // bpf: the recording stops. auto: it goes on native-only; Python
    // interpreters, if any appear, say why.
    if (mode == "bpf") return started;
    source->Refuse(started);
  } else if (context.launch) {
    source->AddLaunchedImage(program);
  }
  if (python) {
    context.settings->SetSource(std::string(kSourceName), "on");
  }
  return std::unique_ptr<record::EventSource>(std::move(source));
}

// python_walk.bpf.h's: layouts, threads, images, and the code objects sent once.
constexpr std::string_view kMaps[] = {"py_processes", "py_threads", "py_images", "py_seen",
                                      "py_snaps"};

std::optional<std::pair<std::string, Status>> Inspect(const std::string& path) {
  Result<Layout> layout = LayoutFromElfFile(path);
  if (layout.ok()) return std::pair(std::string("CPython ") + layout->Version(), OkStatus());
  if (layout.status().code() == StatusCode::kNotFound) return std::nullopt;
  return std::pair(std::string("CPython"), layout.status());
}

}  // namespace

const Runtime kRuntime = {kSourceName,
                          "Python frames",
                          "Python frames, walked by BPF at each sample of every process that "
                          "maps a CPython interpreter and spliced into its native stacks",
                          kMaps,
                          StartPythonSource,
                          /*marks_when_off=*/false,
                          Inspect};

}  // namespace microscope::runtimes::python
