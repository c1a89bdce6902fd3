#include "src/record/session.h"

#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <set>
#include <vector>

#include "base/clock.h"
#include "base/plural.h"
#include "capture/reader.h"
#include "capture/writer.h"
#include "src/record/collector.h"
#include "src/record/launch.h"
#include "src/record/proc.h"
#include "src/record/pump.h"
#include "src/record/sources.h"
#include "src/symbols/kallsyms.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

namespace microscope::record {
namespace {

bool CopiesStack(const RecordOptions& options) {
  return options.samples && options.call_graph != Processor::CallGraph::kFramePointer;
}

CollectorOptions CollectorOptionsFor(const RecordOptions& options) {
  CollectorOptions c;
  c.frequency = options.frequency;
  c.sample = options.samples;
  c.stack_copy = CopiesStack(options) ? options.stack_copy : 0;
  c.ring_pages = options.mmap_pages != 0 ? options.mmap_pages : DefaultRingPages(options);
  return c;
}

// Host, kernel, clock, and how the recording samples, in its settings.
void DescribeRecording(const RecordOptions& options, const CollectorOptions& copts,
                       capture::Settings* s) {
  utsname u;
  if (uname(&u) == 0) {
    s->host = u.nodename;
    s->kernel_release = u.release;
  }
  s->clock = "CLOCK_MONOTONIC";
  s->boot_id = symbols::BootId();
  s->recorder = "microscope " MICROSCOPE_VERSION;
  s->frequency = options.frequency;
  s->stack_copy = copts.stack_copy;
  switch (options.call_graph) {
    case Processor::CallGraph::kFramePointer:
      s->call_graph = "fp";
      s->notes.push_back("call graph fp: user frames from the kernel's frame-pointer chain");
      break;
    case Processor::CallGraph::kDwarf:
      s->call_graph = "dwarf";
      s->notes.push_back(
          "call graph dwarf: user frames unwound from copied registers and stack by CFI "
          "(.eh_frame, .debug_frame) only");
      break;
    case Processor::CallGraph::kAuto:
      s->call_graph = "auto";
      s->notes.push_back(
          "call graph auto: user frames unwound by CFI where a module has it, by frame "
          "pointers (in the copied stack) where a module has none");
      break;
  }
  if (options.samples) {
    s->notes.push_back("preset " + options.preset);
  } else {
    s->frequency = 0;
    s->notes.push_back("no CPU samples: BPF parts only");
  }
}

// Opens events on every thread of a running process. A thread started
// meanwhile by a thread whose events were open inherited them (its FORK
// record shows it): it gets no events of its own, or it would be sampled
// twice. Lists again until no thread is new.
Status OpenEveryThread(pid_t target, Collector* collector) {
  std::set<pid_t> opened;
  for (pid_t tid : ListTasks(target)) {
    RETURN_IF_ERROR(collector->AddTask(tid, /*enable_on_exec=*/false));
    opened.insert(tid);
  }
  if (opened.empty()) {
    return Status::Error(StatusCode::kNotFound, "no process with pid " + std::to_string(target));
  }
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> fresh;
    for (pid_t tid : ListTasks(target)) {
      if (!opened.count(tid)) fresh.push_back(tid);
    }
    if (fresh.empty()) break;
    usleep(10000);  // a FORK record is written just after the thread becomes visible
    collector->Drain();
    std::set<uint32_t> inherited = ForkedTids(collector->arenas(), collector->layout());
    for (pid_t tid : fresh) {
      if (!inherited.count(uint32_t(tid)))
        RETURN_IF_ERROR(collector->AddTask(tid, /*enable_on_exec=*/false));
      opened.insert(tid);
    }
  }
  return OkStatus();
}

// One recording, step by step: open (launch or attach), run, stop, write.
class Recording {
 public:
  Recording(const RecordOptions& options, const RecordHooks& hooks, Processor::Options popts)
      : options_(options), hooks_(hooks), processor_(popts) {}

  Status Open(const CollectorOptions& copts) {
    ASSIGN_OR_RETURN(collector_, Collector::Create(copts));
    DescribeRecording(options_, copts, &settings());
    RETURN_IF_ERROR(options_.pid == 0 ? Launch() : Attach());
    settings().target_pid = target_;
    settings().start_time = start_;
    return child_ != nullptr ? child_->Release() : OkStatus();
  }

  void Run();
  Result<int> Write();

 private:
  capture::Settings& settings() { return processor_.settings(); }

  Status StartSources() {
    SourceContext context{options_,         target_,     child_ != nullptr, &settings(),
                          collector_.get(), hooks_.warn, &runtime_maps_,    &runtime_sampler_};
    ASSIGN_OR_RETURN(sources_, record::StartSources(context, hooks_.warn));
    for (const auto& s : sources_) {
      if (s->wait_fd() >= 0) wait_fds_.push_back(s->wait_fd());
      if (s->splicer() != nullptr) processor_.AddSplicer(s->splicer());
      if (s->jit_namer() != nullptr) processor_.AddJitNamer(s->jit_namer());
      if (s->mapping_watcher() != nullptr) processor_.AddMappingWatcher(s->mapping_watcher());
    }
    return OkStatus();
  }

  Status Launch() {
    settings().mode = "launch";
    settings().command = options_.command;
    ASSIGN_OR_RETURN(child_, LaunchedChild::Fork(options_.command));
    target_ = child_->pid();
    RETURN_IF_ERROR(collector_->AddTask(target_, /*enable_on_exec=*/true));
    RETURN_IF_ERROR(StartSources());
    const std::string& program = options_.command[0];
    std::string base = program.substr(program.rfind('/') + 1).substr(0, 15);
    start_ = MonotonicNowNs();
    processor_.AddProcess(uint32_t(target_), uint32_t(getpid()), base, start_);
    processor_.AddThread(uint32_t(target_), uint32_t(target_), base, start_);
    return OkStatus();
  }

  Status Attach() {
    settings().mode = "attach";
    target_ = options_.pid;
    if (kill(target_, 0) != 0 && errno == ESRCH) {
      return Status::Error(StatusCode::kNotFound, "no process with pid " + std::to_string(target_));
    }
    start_ = MonotonicNowNs();
    RETURN_IF_ERROR(OpenEveryThread(target_, collector_.get()));
    settings().command = ReadCommandLine(target_);
    SeedFromProc(target_, start_, &processor_);
    return StartSources();
  }

  void Poll(const PollWindow& window) {
    for (const auto& s : sources_) s->Poll(window, &processor_);
  }
  void Pump(uint64_t watermark) {
    PumpArenas(&collector_->arenas(), collector_->layout(), watermark, &processor_, sources_);
    if (processor_.TakeLoss()) RecoverMappings();
  }
  // Lost records may have held mappings (MMAP2): without them later samples
  // of those processes bind to nothing. Read them again from /proc, as
  // they are now, for every process still alive.
  void RecoverMappings() {
    const uint64_t now = MonotonicNowNs();
    size_t read = 0;
    for (uint32_t pid : processor_.LiveProcesses())
      read += AddExecutableMappings(pid_t(pid), now, &processor_);
    if (read > 0) {
      processor_.CountProblem("mappings re-read from /proc after records were lost",
                              Counted(read, "process", "processes"));
    }
  }
  bool TargetEnded() {
    return child_ != nullptr ? child_->Exited(&wait_status_) : ProcessGone(target_);
  }
  void Stop(bool by_duration);

  const RecordOptions& options_;
  const RecordHooks& hooks_;
  Processor processor_;
  std::unique_ptr<Collector> collector_;
  std::vector<std::unique_ptr<EventSource>> sources_;
  std::vector<int> wait_fds_;
  RuntimeMaps runtime_maps_;              // the Python walker's, for the other BPF sources
  std::shared_ptr<runtimes::Sampler> runtime_sampler_;  // the runtime walkers' program
  std::unique_ptr<LaunchedChild> child_;  // launch mode
  pid_t target_ = 0;
  uint64_t start_ = 0;
  uint64_t end_ = 0;
  bool exited_ = false;
  int wait_status_ = 0;
};

void Recording::Run() {
  bool by_duration = false;
  uint64_t previous_drain = start_;
  const PollWindow running{start_, UINT64_MAX, child_ != nullptr, false};
  Status draining = collector_->StartDraining();
  if (!draining.ok()) hooks_.warn(draining.message() + "; the rings are drained between rounds");
  for (;;) {
    collector_->Wait(kRoundMs, wait_fds_);
    uint64_t now = MonotonicNowNs();
    uint64_t drained = collector_->Collect();
    Poll(running);
    // Records stamped before the previous drain began were in the rings then
    // (the kernel writes a record as it stamps it; 10 ms is the margin), so
    // they can be processed now without any earlier record still to come.
    // This keeps memory bounded by a round's records, not the recording's.
    if (previous_drain > start_ + 10'000'000) Pump(previous_drain - 10'000'000);
    previous_drain = drained;
    hooks_.progress({now - start_, collector_->samples(), collector_->lost()});
    if (TargetEnded()) {
      exited_ = child_ != nullptr;
      break;
    }
    if (hooks_.stop_signal() != 0) break;
    if (options_.duration_ns != 0 && now - start_ >= options_.duration_ns) {
      by_duration = true;
      break;
    }
  }
  Stop(by_duration);
}

void Recording::Stop(bool by_duration) {
  end_ = MonotonicNowNs();
  (void)collector_->Disable();
  collector_->StopDraining();
  if (child_ != nullptr && !exited_) {
    // --duration ends the program as `timeout` would; a SIGTERM or SIGHUP
    // sent to microscope alone is passed on. After Ctrl-C the program got the
    // terminal's SIGINT itself and ends as it chooses.
    int stop = hooks_.stop_signal();
    if (by_duration) kill(target_, SIGTERM);
    if (stop == SIGTERM || stop == SIGHUP) kill(target_, stop);
  }
  collector_->Drain();
  Poll({start_, end_, child_ != nullptr, true});
  settings().end_time = end_;
  settings().kernel_frames = collector_->kernel_frames();
  if (!collector_->kernel_frames()) {
    settings().notes.push_back("kernel frames off: not permitted (" + PermissionAdvice() + ")");
  }
  if (collector_->ring_shrunk()) {
    settings().notes.push_back(
        "ring buffer reduced to " + std::to_string(collector_->ring_pages()) +
        " pages per CPU by the locked-memory limit (kernel.perf_event_mlock_kb)");
  }
  settings().lost_task_records = collector_->lost_task_records();
  settings().ring_lost_records = collector_->lost();  // before the sources add theirs
  settings().kernel_lost_records = collector_->KernelLost();
  if (collector_->ring_errors() > 0) {
    processor_.CountProblem("corrupt ring data dropped",
                            std::to_string(collector_->ring_errors()) + " times");
  }
  Pump(UINT64_MAX);
  for (const auto& s : sources_) s->Finish(&processor_, &settings());
  if (exited_) processor_.SetExitStatus(uint32_t(target_), ExitStatusForShell(wait_status_));
}

Result<int> Recording::Write() {
  // The targets' own views of their files (their roots stay open while
  // processor_ lives), taken before Finish hands the capture over.
  std::vector<std::vector<std::string>> target_paths = processor_.TargetPaths();
  capture::Capture cap = processor_.Finish(end_);
  cap.settings.symbols = options_.symbolize;
  symbols::AddModuleLayouts(&cap, target_paths);
  if (options_.symbolize == "now") {
    symbols::SymbolizeOptions how;
    how.this_host = true;
    how.target_paths = std::move(target_paths);
    how.cache_dir = symbols::DefaultCacheDir();
    auto named = symbols::Symbolize(&cap, how);
    if (!named.ok()) return named.status().WithContext("symbolizing the recording");
  }
  Status valid = capture::ValidateCapture(cap);
  if (!valid.ok()) return valid.WithContext("internal error: the recorded capture is inconsistent");
  collector_.reset();  // release fds and rings before the (possibly slow) write
  RETURN_IF_ERROR(capture::WriteCapture(cap, options_.output));
  RecordSummary summary;
  summary.samples = cap.samples.size();
  summary.syscalls = cap.syscalls.size();
  summary.off_cpu = cap.off_cpu.size();
  summary.threads = cap.threads.size();
  summary.processes = cap.processes.size();
  summary.lost = cap.settings.lost_records + cap.settings.lost_samples;
  hooks_.written(summary);
  // A program the recording stopped without ending (Ctrl-C) ends as it chooses.
  if (child_ == nullptr) return 0;
  return ExitStatusForShell(exited_ ? wait_status_ : child_->Wait());
}

}  // namespace

uint32_t DefaultRingPages(const RecordOptions& options) {
  // Each sample takes about stack_copy bytes of ring with a stack copy:
  // size each CPU's ring for a quarter second of samples (1 to 64 MiB).
  uint32_t pages = 256;
  if (CopiesStack(options)) {
    uint64_t want = uint64_t(options.stack_copy + 512) * options.frequency / 4 / 4096;
    while (pages < want && pages < 16384) pages *= 2;
  }
  return pages;
}

Result<int> RunRecord(const RecordOptions& options, const RecordHooks& hooks) {
  Processor::Options popts;
  popts.max_stack = MaxStack();
  popts.call_graph = options.call_graph;
  Recording recording(options, hooks, popts);
  RETURN_IF_ERROR(recording.Open(CollectorOptionsFor(options)));
  recording.Run();
  return recording.Write();
}

}  // namespace microscope::record
