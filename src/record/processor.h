// Turns decoded kernel records, in time order, into a Capture: processes,
// threads and mappings as of each event's time; each sample's addresses bound
// to the mapping in force then, normalized to module + file offset, and
// interned into frames and a prefix tree of stacks. Frames are left unnamed:
// src/symbols/symbolizer names them (at record time or later).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "capture/capture.h"
#include "capture/stack_interner.h"
#include "capture/string_table.h"
#include "src/record/code_map.h"
#include "src/record/decode.h"
#include "src/record/interpreted_frames.h"
#include "src/record/jit_namer.h"
#include "src/record/module_cfi.h"
#include "src/record/process_roots.h"
#include "src/record/ring_pairing.h"
#include "src/record/row_sink.h"
#include "src/record/splicer.h"
#include "src/record/stack_extents.h"
#include "src/record/user_regs.h"
#include "src/symbols/elf_image.h"
#include "src/unwind/unwinder.h"

namespace microscope::record {

class Processor final : public RowSink {
 public:
  // How user frames are found: the kernel's frame-pointer chain, or our
  // unwinder over the copied registers and stack (CFI only, or CFI where a
  // module has it and frame pointers where it has none).
  enum class CallGraph : uint8_t { kFramePointer, kDwarf, kAuto };

  struct Options {
    uint32_t max_stack = 127;  // /proc/sys/kernel/perf_event_max_stack
    CallGraph call_graph = CallGraph::kFramePointer;
    size_t max_user_frames = 1024;
    // Shared CFI tables (by build ID); a private cache when null.
    std::shared_ptr<record::CfiCache> cfi_cache;
    // An import (perf.data): no recorded process is live here, so no root is
    // opened and a module's files are only those this gives for its
    // recorded path and build ID (each still proved by the build ID; none
    // for a module without one).
    std::function<std::vector<std::string>(std::string_view path,
                                           std::span<const uint8_t> build_id)>
        module_files;
    // The kernel's build ID as the recording host gave it (an import);
    // unset: this host's.
    std::optional<std::vector<uint8_t>> kernel_build_id;
  };
  explicit Processor(Options options);

  // State that existed before recording began (attach, or the launched child).
  void AddProcess(uint32_t pid, uint32_t ppid, std::string_view command, uint64_t time);
  void AddThread(uint32_t pid, uint32_t tid, std::string_view name, uint64_t time);
  void AddMapping(uint32_t pid, uint64_t start, uint64_t end, uint64_t pgoff, std::string_view path,
                  std::span<const uint8_t> build_id, uint64_t time);

  // From now on only `pid` and the processes it starts are recorded: the
  // records of every other task are passed over (events opened on every
  // task of each CPU bring them all: CollectorOptions::every_task).
  void Follow(uint32_t pid) {
    follow_ = true;
    followed_.insert(pid);
  }

  void Process(const Event& e);

  // The sink event sources append their rows to (row_sink.h).
  capture::ThreadId EventThread(uint32_t pid, uint32_t tid, uint64_t time,
                                std::string_view comm) override;
  capture::ThreadId LatestThread(uint32_t pid, uint32_t tid) override;
  uint64_t ThreadStart(capture::ThreadId thread) const override {
    return thread < capture_.threads.size() ? capture_.threads[thread].start_time : 0;
  }
  void NameThread(uint32_t pid, uint32_t tid, uint64_t time, std::string_view name) override;
  capture::StackId EventStack(uint32_t pid, uint32_t tid, uint64_t time,
                              std::span<const uint64_t> kernel, const UserRegs* regs,
                              std::span<const uint8_t> user_stack, capture::StackEnd* end,
                              std::span<const uint8_t> walk = {}) override;
  capture::StringId Intern(std::string_view s) override;
  uint64_t start_time() const override { return capture_.settings.start_time; }
  void Add(const capture::OffCpu::Row& row) override {
    capture_.off_cpu.Append(row);
    if (off_cpu_observer_) off_cpu_observer_(row);
  }
  void Add(const capture::OffCpuShort::Row& row) override { capture_.off_cpu_short.Append(row); }
  void Add(const capture::Syscalls::Row& row) override { capture_.syscalls.Append(row); }
  void Add(const capture::ProbeRecords::Row& row) override {
    capture_.probe_records.Append(row);
    if (probe_observer_) probe_observer_(row);
  }
  // Told of each sample as it is added: its time, thread and weight
  // (record --snapshot-when).
  void ObserveSamples(std::function<void(uint64_t, capture::ThreadId, uint64_t)> observer) {
    sample_observer_ = std::move(observer);
  }
  // Told of each off-CPU interval as it is added (record --snapshot-when).
  void ObserveOffCpu(std::function<void(const capture::OffCpu::Row&)> observer) {
    off_cpu_observer_ = std::move(observer);
  }
  // Told of each probe record as it is added (record --snapshot-when).
  void ObserveProbeRecords(std::function<void(const capture::ProbeRecords::Row&)> observer) {
    probe_observer_ = std::move(observer);
  }
  void Add(const capture::Readings::Row& row) override { capture_.readings.Append(row); }
  capture::ProbeSiteId Add(const capture::ProbeSites::Row& row) override;
  void CountProblem(std::string_view kind, std::string_view example, uint64_t times = 1) override;
  void SetExitStatus(uint32_t pid, int status) override;
  void SetSampleScale(uint64_t time, uint32_t keep_one_in) override;
  void AddGap(const capture::Gap& gap) override { capture_.gaps.push_back(gap); }
  void SetStackLimit(uint32_t bytes) override { stack_limit_ = bytes; }

  // Records were lost since the last call (a LOST record was processed):
  // the mappings they held may be missing.
  bool TakeLoss() { return std::exchange(loss_seen_, false); }
  // Runtime walks waiting for their samples, ring by ring (the pump's).
  RingPairing& ring_pairing() { return ring_pairing_; }
  // The processes alive as of the events processed so far, sorted.
  std::vector<uint32_t> LiveProcesses() const;
  // The rows so far (for tests and benchmarks: sources add through RowSink).
  const capture::Capture& capture() const { return capture_; }
  // A runtime's splicer (not owned; it outlives the processor's use): told
  // of every executable mapping, those already known first, and given every
  // stack with a frame in code it marked.
  void AddSplicer(StackSplicer* splicer);
  // Names anonymous code at record time (jit_namer.h); it also watches mappings.
  void AddJitNamer(JitNamer* namer);
  // Told of every executable mapping, those already known first, and of
  // every address space that ends (mapping_watcher.h; not owned).
  void AddMappingWatcher(MappingWatcher* watcher);
  MappedModule Mapped(uint32_t pid, uint32_t mapping_row, bool first) const;

  // Closes open rows at `end_time` (off-CPU intervals still open are cut
  // there), puts each table in time order and returns the capture (unnamed).
  capture::Capture Finish(uint64_t end_time);

  // While recording: a capture of the rows so far with the dictionary
  // rows they need (and the processes, threads and mappings that lived in
  // [from, now]), open processes, threads and mappings closed at `now` and
  // the problems counted so far (capture/compact.h). With `take_before`,
  // only the rows that began before it, which leave the processor (a
  // segment), and the processor's generation ends there (EndGeneration);
  // without, a copy of every row (a snapshot).
  capture::Capture Part(uint64_t from, uint64_t now, std::optional<uint64_t> take_before);
  // Drops the rows that ended before `before` (a rolling window's start)
  // and ends the generation there.
  void Evict(uint64_t before);

  // Where to keep what each thread's walks read of its samples' stacks
  // (the recording's, which the collector copies no more of); null: nowhere.
  void SetStackExtents(StackExtents* extents) { stack_extents_ = extents; }

  capture::Settings& settings() { return capture_.settings; }
  // Per module, the paths of its file as the processes that mapped it see
  // it, through their own roots (process_roots.h); empty for modules only
  // processes sharing our root mapped. Valid while the processor lives.
  std::vector<std::vector<std::string>> TargetPaths() const;
  // The files to read module `module` from: the targets' views first, then
  // the recorded path on this host (proved by build ID; left out when the
  // module has no build ID and a target sees the path elsewhere).
  std::vector<std::string> ModuleFiles(capture::ModuleId module) const;
  // `module`'s recorded path reached through the roots of the targets that
  // mapped it from another file system (empty: none did).
  std::vector<std::string> PathsInTargetRoots(capture::ModuleId module) const;
  uint64_t sample_count() const { return capture_.samples.size(); }

 private:
  struct ProcessState {
    capture::ProcessId row;
    std::map<uint64_t, uint32_t> live;  // mapping start -> mapping row
    uint32_t live_threads = 0;          // the process ends with its last thread
    // Its root (ProcessRoots), opened at its first file mapping after exec.
    bool root_known = false;
    uint32_t root = ProcessRoots::kHostRoot;
    // The mappings its last exec replaced, until it runs the new program: a
    // sample taken inside execve holds the old program's pc.
    std::map<uint64_t, uint32_t> before_exec;
    // From its exec until it runs the new program (the old one may not have
    // been recorded: a launched program's exec replaces microscope's child).
    bool in_exec = false;
  };
  struct FrameKey {
    uint64_t address;
    uint32_t module;
    uint8_t kind;
    bool operator==(const FrameKey&) const = default;
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& k) const {
      return std::hash<uint64_t>()(k.address * 0x9E3779B97F4A7C15ull ^ (uint64_t(k.module) << 8) ^
                                   k.kind);
    }
  };

  ProcessState& EnsureProcess(uint32_t pid, uint64_t time);
  capture::ThreadId EnsureThread(uint32_t pid, uint32_t tid, uint64_t time);
  // The latest row of thread tid of process pid if it has ended.
  std::optional<capture::ThreadId> EndedThread(uint32_t pid, uint32_t tid) const;
  capture::ModuleId InternModule(std::string_view path, std::span<const uint8_t> build_id);
  void EndMappings(ProcessState& p, uint64_t start, uint64_t end, uint64_t time);
  // Ends every live mapping; `ended` (when given) receives them.
  void EndAllMappings(ProcessState& p, uint64_t time,
                      std::map<uint64_t, uint32_t>* ended = nullptr);
  capture::FrameId InternFrame(capture::FrameKind kind, capture::ModuleId module, uint64_t address);
  capture::FrameId UserFrame(ProcessState& p, uint64_t address);
  capture::FrameId MappedFrame(uint32_t mapping_row, uint64_t address);
  capture::FrameId KernelFrame(uint64_t address);
  void OnSample(const Event& e);
  capture::StackEnd UnwindUser(const Event& e, ProcessState& proc);
  capture::StackId InternScratch(uint32_t pid, uint32_t tid, uint64_t time,
                                 std::span<const uint8_t> walk = {});
  // Runtimes (splicer.h).
  void AnnounceMapping(uint32_t pid, uint32_t mapping_row);
  void SpliceScratch(uint32_t pid, uint32_t tid, uint64_t time, std::span<const uint8_t> walk);
  // A frame just interned learns its code's tag (while a splicer is registered).
  void TagNewFrame(capture::FrameId frame, uint8_t tag);
  // Frames interned before their module was marked learn the marks.
  void RetagNewlyMarked();
  // A frame in anonymous code a JIT namer names, or nullopt.
  std::optional<capture::FrameId> JitFrame(uint32_t pid, uint64_t address);
  // What a whole unwind read of thread `tid`'s copied stack (or that it ran
  // out of bytes) tells the stack copier (StackExtents).
  void LearnExtent(uint32_t tid, capture::StackEnd end);
  capture::StackEnd UnwindCopiedStack(uint32_t tid, const UserRegs& regs,
                                      std::span<const uint8_t> stack, ProcessState& proc);
  bool LookupCode(ProcessState& proc, uint64_t pc, unwind::CodeInfo* info);
  const record::ModuleCfi* ModuleUnwindInfo(capture::ModuleId module);
  // Remembers the root through which `module`, just mapped by process
  // `pid`, is reached (once per process and exec, never per sample).
  void NoteRoot(uint32_t pid, ProcessState& p, capture::ModuleId module);
  void OnMmap2(const Event& e);
  void OnComm(const Event& e);
  void OnFork(const Event& e);
  void OnExit(const Event& e);
  void SortSamplesByTime();

  Options options_;
  capture::Capture capture_;
  capture::StringTable strings_;
  std::unordered_map<uint32_t, ProcessState> processes_;
  // Follow's processes (without Follow, every record is the recording's).
  bool follow_ = false;
  std::unordered_set<uint32_t> followed_;
  bool Followed(const Event& e);
  std::unordered_map<uint32_t, capture::ThreadId> threads_;
  // Threads a runtime named (NameThread), with the name the system gives
  // them (COMM records no longer rename them; a thread they start takes
  // the system's) and when the runtime named them (an exec after that
  // time forgets the name; one before it, processed later, does not).
  struct RuntimeNamed {
    capture::StringId system;
    uint64_t time;
  };
  std::unordered_map<capture::ThreadId, RuntimeNamed> runtime_named_;
  capture::StringId SystemName(capture::ThreadId thread) const;
  std::unordered_map<std::string, capture::ModuleId> modules_;
  std::unordered_map<FrameKey, capture::FrameId, FrameKeyHash> frames_;
  capture::StackInterner stacks_;
  capture::ModuleId kernel_module_ = capture::kNone;
  std::vector<capture::FrameId> scratch_;
  std::vector<uint64_t> scratch_sp_;  // each unwound frame's stack pointer (0: not known)
  std::pair<std::string_view, std::string_view> scratch_label_;  // set by a splicer
  // Per thread and label key: its open row in capture_.labels.
  std::map<std::pair<capture::ThreadId, capture::StringId>, size_t> open_labels_;
  void AddLabel(capture::ThreadId thread, std::string_view key, std::string_view value,
                uint64_t time);
  // Cuts rows out of capture_ (capture/window.h), keeping open_labels_ on
  // the rows it points at.
  void TakeRows(uint64_t before, bool by_end, capture::Capture* taken);
  // Drops from the dictionaries the threads, processes and mappings that
  // ended before `before` and that nothing left needs, so that an
  // always-on recording's memory follows its window, not its age.
  void EndGeneration(uint64_t before);
  // The stacks, frames and functions no row left needs, out of the
  // dictionaries and the caches that lead to them.
  void ForgetUnusedCode();
  // Unwind state: per module its CFI (loaded on first use, shared by every
  // process mapping it: modules are one per build ID), per mapping its bias.
  struct ModuleUnwind {
    bool tried = false;
    std::shared_ptr<const record::ModuleCfi> cfi;
  };
  std::vector<ModuleUnwind> module_unwind_;
  static constexpr uint64_t kUnknownBias = ~0ull;  // a mapping's bias not yet known
  std::vector<uint64_t> mapping_bias_;
  std::vector<unwind::Frame> unwind_frames_;
  // Other roots than ours, and per module the roots its mappers see.
  ProcessRoots roots_;
  std::vector<std::vector<uint32_t>> module_roots_;
  struct ProblemCount {
    uint64_t count = 0;
    std::string example;
  };
  std::map<std::string, ProblemCount, std::less<>> problems_;
  bool loss_seen_ = false;
  std::function<void(const capture::ProbeRecords::Row&)> probe_observer_;
  std::function<void(const capture::OffCpu::Row&)> off_cpu_observer_;
  std::function<void(uint64_t, capture::ThreadId, uint64_t)> sample_observer_;
  // Gaps: each CPU's latest event time (a LOST record's window starts
  // there), throttled events by (cpu, stream id) since when, and the
  // budget's open step (keep one in N > 1) since when.
  void NoteTime(const Event& e);
  // The gaps still open (throttled events, the budget's step) as far as
  // `until`, appended to `out`; and closed there, into the capture.
  void AppendOpenGaps(uint64_t until, std::vector<capture::Gap>* out) const;
  void CloseOpenGaps(uint64_t end_time);
  std::vector<uint64_t> last_time_on_cpu_;
  struct Throttled {
    uint64_t since;
    uint32_t pid, tid;
  };
  std::map<std::pair<int32_t, uint64_t>, Throttled> throttled_;
  static capture::Gap ThrottledGap(int32_t cpu, const Throttled& t, uint64_t until);
  std::optional<capture::Gap> budget_gap_;
  // Runtimes: their splicers, the code they marked, each frame's tag (kept
  // only while a splicer is registered; frames past its end have none),
  // and the interpreted frames they intern.
  std::vector<StackSplicer*> splicers_;
  CodeMap code_map_{&capture_};
  InterpretedFrames interpreted_{&capture_, &strings_};
  // JIT code named at record time: a module per namer's source, a function
  // per name, a frame per (address, module, function).
  std::vector<JitNamer*> jit_namers_;
  std::vector<MappingWatcher*> mapping_watchers_;  // the JIT namers among them
  std::map<std::string, capture::ModuleId, std::less<>> jit_modules_;
  std::map<capture::StringId, capture::FunctionId> jit_functions_;
  std::map<std::tuple<uint64_t, capture::ModuleId, capture::FunctionId>, capture::FrameId>
      jit_frames_;
  RingPairing ring_pairing_;
  // The budget's: (from time, samples each kept one stands for), in time
  // order; and the unwound bytes.
  std::vector<std::pair<uint64_t, uint32_t>> sample_scale_;
  uint32_t stack_limit_ = 0;
  StackExtents* stack_extents_ = nullptr;
  uint64_t stack_read_end_ = 0;  // of UnwindUser's last walk
  std::vector<char> module_announced_;
  std::vector<uint8_t> frame_tag_;
  std::vector<uint8_t> scratch_tags_;
};

}  // namespace microscope::record
