#include "src/record/session.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "base/clock.h"
#include "base/plural.h"
#include "capture/reader.h"
#include "capture/segments.h"
#include "capture/window.h"
#include "capture/writer.h"
#include "src/record/bpf_loader.h"
#include "src/record/bpf_stack.h"
#include "src/record/collector.h"
#include "src/record/launch.h"
#include "src/record/part_writer.h"
#include "src/record/proc.h"
#include "src/record/pump.h"
#include "src/record/recording_setup.h"
#include "src/record/snapshot_server.h"
#include "src/record/snapshot_trigger.h"
#include "src/record/sources.h"
#include "src/symbols/kallsyms.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

namespace microscope::record {
namespace {

RecordSummary SummaryOf(const capture::Capture& cap) {
  RecordSummary summary;
  summary.samples = cap.samples.size();
  summary.syscalls = cap.syscalls.size();
  summary.off_cpu = cap.off_cpu.size();
  summary.threads = cap.threads.size();
  summary.processes = cap.processes.size();
  summary.lost = cap.settings.lost_records + cap.settings.lost_samples;
  return summary;
}

// "out.mscap" -> "out.3.mscap": the name of the n-th snapshot after -o.
std::string NumberedName(const std::string& output, uint64_t n) {
  size_t slash = output.rfind('/');
  size_t dot = output.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return output + "." + std::to_string(n);
  }
  return output.substr(0, dot) + "." + std::to_string(n) + output.substr(dot);
}

// One recording, step by step: open (launch or attach), run, stop, write.
class Recording {
 public:
  Recording(const RecordOptions& options, std::span<const SourceKind> source_kinds,
            const RecordHooks& hooks, Processor::Options popts)
      : options_(options), source_kinds_(source_kinds), hooks_(hooks), processor_(popts) {}

  Status Open(CollectorOptions copts) {
    LoadStackCopier(&copts);
    copts_ = copts;
    ASSIGN_OR_RETURN(collector_, Collector::Create(copts));
    // Samples without stacks (record --level 0) need no quick rounds: no
    // walker waits on them, their records are small. Each round wakes the
    // recorder, which takes a CPU from the program.
    if (!options_.stacks) collector_->SetRoundMs(100);
    DescribeRecording(options_, copts, &settings());
    if (!stack_copier_note_.empty()) settings().notes.push_back(stack_copier_note_);
    settings().kernel_frames = collector_->kernel_frames();  // parts cut before the end say it too
    RETURN_IF_ERROR(options_.pid == 0 ? Launch() : Attach());
    settings().target_pid = target_;
    settings().start_time = start_;
    realtime_start_ = RealtimeNowNs() - (MonotonicNowNs() - start_);
    settings().realtime_start = realtime_start_;
    settings().recording_id = std::to_string(realtime_start_) + "-" + std::to_string(getpid());
    segment_start_ = start_;
    RETURN_IF_ERROR(StartParts());
    return child_ != nullptr ? child_->Release() : OkStatus();
  }

  void Run();
  Result<int> Write();

 private:
  capture::Settings& settings() { return processor_.settings(); }

  // The user stack is copied by BPF, as far as each thread needs, where the
  // stack is copied and BPF programs load; by the kernel's fixed copy
  // otherwise (and under a budget, whose gate must run first and drop
  // samples before anything is copied).
  void LoadStackCopier(CollectorOptions* copts) {
    if (copts->stack_copy == 0 || !copts->sample || options_.budget_ppm != 0) return;
    Result<std::unique_ptr<StackCopier>> copier = StackCopier::Load(copts->stack_copy);
    if (!copier.ok()) {
      stack_copier_note_ =
          "user stacks copied by the kernel (" + std::to_string(copts->stack_copy) +
          " bytes each): the BPF stack copier did not load: " + copier.status().message();
      return;
    }
    if (Status shared = (*copier)->ShareExtents(&shared_maps_); !shared.ok()) {
      stack_copier_note_ =
          "user stacks copied by the kernel (" + std::to_string(copts->stack_copy) +
          " bytes each): the BPF stack copier's maps cannot be shared: " + shared.message();
      return;
    }
    stack_copier_ = std::move(copier).value();
    copts->stack_by_bpf = true;
    stack_extents_.SetListener(stack_copier_.get());
    stack_copier_note_ =
        "user stacks copied by BPF from each sample's stack pointer as far as "
        "that thread's walks have needed (its whole stack in use until known, or " +
        std::to_string(copts->stack_copy) + " bytes where its mapping is not found), at most " +
        std::to_string(StackCopier::MaxBytes()) + " bytes";
  }
  // Before any program that runs at each sample: the copier goes first.
  Status AttachStackCopier() {
    if (stack_copier_ == nullptr) return OkStatus();
    return stack_copier_->Attach(collector_.get());
  }

  Status StartSources() {
    SourceContext context{options_,      target_,           child_ != nullptr,
                          &settings(),   collector_.get(),  hooks_.warn,
                          &shared_maps_, &runtime_sampler_, &target_memory_};
    ASSIGN_OR_RETURN(sources_, record::StartSources(source_kinds_, context, hooks_.warn));
    for (const auto& s : sources_) {
      if (s->wait_fd() >= 0) wait_fds_.push_back(s->wait_fd());
      if (s->splicer() != nullptr) processor_.AddSplicer(s->splicer());
      if (s->jit_namer() != nullptr) processor_.AddJitNamer(s->jit_namer());
      if (s->mapping_watcher() != nullptr) processor_.AddMappingWatcher(s->mapping_watcher());
    }
    return OkStatus();
  }

  // The sampling and task events: on every task of each CPU, following the
  // target's processes, where the options ask for that and it is allowed;
  // on the target's own tasks otherwise.
  Status OpenEvents(bool launched) {
    if (copts_.every_task) {
      Status every = collector_->AddTask(-1, /*enable_on_exec=*/false, /*hold_sampling=*/!launched);
      if (every.ok()) {
        processor_.Follow(uint32_t(target_));
        settings().notes.push_back(
            "events on every task of each CPU, the target's processes followed by their "
            "records: a context switch costs the target nothing extra");
        return OkStatus();
      }
      if (every.code() != StatusCode::kPermissionDenied) return every;
      settings().notes.push_back("events on the target's own tasks: " + every.message());
    }
    if (launched) return collector_->AddTask(target_, /*enable_on_exec=*/true);
    return OpenEveryThread(target_, collector_.get());
  }

  Status Launch() {
    settings().mode = "launch";
    settings().command = options_.command;
    // A program using the probes SDK switches the selected sites on before
    // main: what it writes before this recorder finds it waits for it.
    std::vector<std::string> env;
    if (!options_.probes.empty()) {
      env = {"MICROSCOPE_PROBES_READER=" + std::to_string(getpid()),
             "MICROSCOPE_PROBES=" + options_.probes};
    }
    ASSIGN_OR_RETURN(child_, LaunchedChild::Fork(options_.command, env));
    target_ = child_->pid();
    target_fd_ = ScopedFd(int(syscall(SYS_pidfd_open, target_, 0)));  // wakes the loop at its exit
    RETURN_IF_ERROR(OpenEvents(/*launched=*/true));
    RETURN_IF_ERROR(AttachStackCopier());
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
    target_fd_ = ScopedFd(int(syscall(SYS_pidfd_open, target_, 0)));  // -1: /proc is read instead
    RETURN_IF_ERROR(OpenEvents(/*launched=*/false));
    settings().command = ReadCommandLine(target_);
    SeedFromProc(target_, start_, &processor_);
    RETURN_IF_ERROR(AttachStackCopier());
    // Sampling starts once the sources have (a runtime's walker loads in
    // some 100 ms and lays the process out from its mappings): its first
    // samples are walked. Task records went on meanwhile.
    RETURN_IF_ERROR(StartSources());
    RETURN_IF_ERROR(collector_->EnableSampling());
    sampling_start_ = MonotonicNowNs();
    // The process ran meanwhile, its samples not yet taken: not idle time.
    processor_.AddGap({.begin = start_,
                       .end = sampling_start_,
                       .pid = uint32_t(target_),
                       .cause = capture::GapCause::kNotAttached});
    return OkStatus();
  }

  // Always-on: the continuous directory, the snapshot sockets, the writer.
  Status StartParts() {
    if (!options_.continuous_dir.empty()) {
      const std::string& dir = options_.continuous_dir;
      if (!capture::IsDirectory(dir)) {
        return Status::Error(StatusCode::kInvalidArgument,
                             "--continuous " + dir + ": not a directory (create it first)");
      }
      if (access(dir.c_str(), W_OK) != 0) {
        return Status::Error(StatusCode::kPermissionDenied,
                             "--continuous " + dir + ": not writable");
      }
      size_t stale = capture::RemoveStaleTemporaries(dir);
      if (stale > 0) {
        hooks_.warn("removed " + Counted(stale, "unfinished segment") +
                    " a recorder killed while writing left in " + dir);
      }
    }
    std::string note;
    auto server = SnapshotServer::Listen(target_, &note);
    if (server.ok()) {
      server_ = std::move(server).value();
      for (int fd : server_->fds()) wait_fds_.push_back(fd);
      if (!note.empty()) hooks_.warn(note);
    } else {
      hooks_.warn(server.status().message() +
                  "; `microscope snapshot` cannot reach this recording");
    }
    writer_ = std::make_unique<PartWriter>();
    if (!options_.snapshot_when.empty()) {
      triggers_.emplace(options_.snapshot_when, options_.snapshot_min_interval_ns);
      if (triggers_->WatchesSamples()) {
        processor_.ObserveSamples([this](uint64_t time, capture::ThreadId thread, uint64_t weight) {
          const capture::Capture& c = processor_.capture();
          if (thread < c.threads.size())
            triggers_->Sample(time, c.str(c.threads[thread].name), weight);
        });
      }
      if (triggers_->WatchesOffCpu()) {
        processor_.ObserveOffCpu([this](const capture::OffCpu::Row& row) {
          if (row.end != 0) triggers_->OffCpu(row.start, row.end, row.state);
        });
      }
      processor_.ObserveProbeRecords([this](const capture::ProbeRecords::Row& row) {
        const capture::Capture& c = processor_.capture();
        if (row.site >= c.probe_sites.size()) return;
        triggers_->Record(row.time, row.thread, row.site, c.str(c.probe_sites.name[row.site]),
                          row.op, row.value);
      });
    }
    return OkStatus();
  }
  bool Rolling() const { return options_.rolling_ns != 0; }
  bool Continuous() const { return !options_.continuous_dir.empty(); }
  uint64_t Realtime(uint64_t monotonic) const { return realtime_start_ + (monotonic - start_); }
  // Every round, once rows are processed through `through`: evict what the
  // window no longer holds, cut segments, take snapshots asked for.
  void AfterPump(uint64_t through);
  // A segment's part: rows before `to`; its settings say which it is.
  void CutSegment(uint64_t to);
  void MakeSegment(capture::Capture* part, uint64_t from, uint64_t to);
  std::string SegmentPath(uint64_t from) const {
    return options_.continuous_dir + "/" +
           capture::SegmentName(Realtime(from), getpid(), segment_index_);
  }
  // A rolling window's part ends at `end` and holds what reached into it.
  void TrimToWindow(capture::Capture* part, uint64_t end) const;
  // A snapshot into `path` (empty: the next numbered name after -o),
  // answered on `connection` (-1: none), its notes saying `why` (if any).
  void Snapshot(uint64_t through, std::string path, int connection, std::string why = "");
  void Retain() {
    if (options_.retain_ns == 0 && options_.retain_bytes == 0) return;
    capture::ApplyRetention(options_.continuous_dir, options_.retain_ns, options_.retain_bytes,
                            RealtimeNowNs());
  }
  FinishOptions Finishing() const { return {options_.symbolize, processor_.TargetPaths()}; }

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
    if (child_ != nullptr) return child_->Exited(&wait_status_);
    // An attached process: its pidfd turns readable once every thread of
    // it has exited (a look costs one poll; /proc costs a read per thread).
    if (target_fd_.valid()) {
      pollfd p{target_fd_.get(), POLLIN, 0};
      return poll(&p, 1, 0) == 1;
    }
    return ProcessGone(target_);
  }
  void Stop(bool by_duration);

  const RecordOptions& options_;
  std::span<const SourceKind> source_kinds_;
  const RecordHooks& hooks_;
  Processor processor_;
  CollectorOptions copts_;
  std::unique_ptr<Collector> collector_;
  std::vector<std::unique_ptr<EventSource>> sources_;
  std::vector<int> wait_fds_;
  std::vector<int> ready_fds_;  // of wait_fds_, readable at the last wait
  SharedBpfMaps shared_maps_{SharedMapNames(source_kinds_)};
  std::shared_ptr<runtimes::Sampler> runtime_sampler_;  // the runtime walkers' program
  TargetMemory target_memory_{options_.target_memory};
  std::unique_ptr<LaunchedChild> child_;  // launch mode
  // Always-on.
  std::unique_ptr<SnapshotServer> server_;
  std::unique_ptr<PartWriter> writer_;
  uint64_t realtime_start_ = 0;           // the wall-clock time of start_
  uint64_t segment_start_ = 0;            // the current segment's
  uint64_t segment_index_ = 0;            // of the last segment cut
  uint64_t snapshots_ = 0;                // taken
  std::optional<TriggerWatch> triggers_;  // --snapshot-when
  uint64_t numbered_ = 0;                 // the last number given to a file after -o
  uint64_t signals_seen_ = 0;             // SIGUSR1s answered
  bool requests_waiting_ = false;         // a snapshot socket polled readable
  uint64_t evicted_at_ = 0;
  capture::Settings counted_;                         // the counts the segments so far carried
  std::map<std::string, uint64_t> problems_counted_;  // by kind
  pid_t target_ = 0;
  ScopedFd target_fd_;  // attach mode: the target's pidfd
  uint64_t start_ = 0;
  uint64_t sampling_start_ = 0;  // an attach's sampling began (--duration counts from it)
  uint64_t end_ = 0;
  StackExtents stack_extents_;
  std::unique_ptr<StackCopier> stack_copier_;  // null: the kernel copies stacks
  std::string stack_copier_note_;
  bool exited_ = false;
  int wait_status_ = 0;
};

void Recording::Run() {
  bool by_duration = false;
  uint64_t previous_drain = start_;
  PollWindow running{start_, UINT64_MAX, child_ != nullptr, false};
  // The processor learns how far its walks read each thread's stack; the
  // collector cuts the copies it drains there. The recording owns both ends.
  processor_.SetStackExtents(&stack_extents_);
  collector_->SetStackExtents(&stack_extents_);
  Status draining = collector_->StartDraining();
  if (!draining.ok()) hooks_.warn(draining.message() + "; the rings are drained between rounds");
  if (target_fd_.valid())
    wait_fds_.push_back(target_fd_.get());  // the target's exit wakes the loop
  const std::vector<int> server_fds = server_ != nullptr ? server_->fds() : std::vector<int>();
  for (;;) {
    int wait_ms = collector_->round_ms();
    if (options_.duration_ns != 0) {
      // A long round (record --level 0) still ends at --duration.
      const uint64_t since = std::max(start_, sampling_start_), at = MonotonicNowNs();
      const uint64_t left =
          since + options_.duration_ns > at ? since + options_.duration_ns - at : 0;
      wait_ms = int(std::min<uint64_t>(uint64_t(wait_ms), left / 1'000'000 + 1));
    }
    collector_->Wait(wait_ms, wait_fds_, &ready_fds_);
    collector_->VaryPeriods();
    for (int fd : server_fds) requests_waiting_ |= std::ranges::count(ready_fds_, fd) > 0;
    uint64_t now = MonotonicNowNs();
    uint64_t drained = collector_->Collect();
    Poll(running);
    // Records stamped before the previous drain began were in the rings then
    // (the kernel writes a record as it stamps it; 10 ms is the margin), so
    // they can be processed now without any earlier record still to come.
    // This keeps memory bounded by a round's records, not the recording's.
    if (previous_drain > start_ + 10'000'000) {
      Pump(previous_drain - 10'000'000);
      AfterPump(previous_drain - 10'000'000);
      running.processed = previous_drain - 10'000'000;
    }
    previous_drain = drained;
    hooks_.progress({now - start_, collector_->samples(), collector_->lost()});
    if (TargetEnded()) {
      exited_ = child_ != nullptr;
      break;
    }
    if (hooks_.stop_signal() != 0) break;
    if (options_.duration_ns != 0 &&
        now - std::max(start_, sampling_start_) >= options_.duration_ns) {
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
  if (stack_copier_ != nullptr) {
    const RingPairing& copies = processor_.ring_pairing();
    settings().SetSource("stack copy", "on").values = {
        {"copies", copies.stacks_paired()},
        {"bytes", copies.stack_bytes()},
        {"copies_without_sample", copies.stacks_unpaired()},
        {"copies_lost", stack_copier_->Lost()},
    };
  }
  if (exited_) processor_.SetExitStatus(uint32_t(target_), ExitStatusForShell(wait_status_));
}

void Recording::AfterPump(uint64_t through) {
  if (Rolling() && through > start_ + options_.rolling_ns &&
      through - evicted_at_ >= std::max<uint64_t>(1'000'000'000, options_.rolling_ns / 10)) {
    processor_.Evict(through - options_.rolling_ns);
    evicted_at_ = through;
  }
  while (Continuous() && through >= segment_start_ + options_.segment_ns) {
    CutSegment(segment_start_ + options_.segment_ns);
  }
  const uint64_t signals = hooks_.snapshot_signals();
  for (; signals_seen_ < signals; ++signals_seen_) Snapshot(through, "", -1);
  if (triggers_) {
    triggers_->Lost(through, processor_.capture().settings.lost_records);
    for (std::string& why : triggers_->TakeFired())
      Snapshot(through, "", -1, "snapshot taken when " + why);
  }
  // Accepted once a socket polled readable, not tried every round.
  if (server_ != nullptr && requests_waiting_) {
    requests_waiting_ = false;
    for (SnapshotServer::Request& r : server_->Take()) {
      Snapshot(through, r.path, r.connection.get());
      r.connection = ScopedFd();  // the writer answers on its own copy
    }
  }
}

void Recording::MakeSegment(capture::Capture* part, uint64_t from, uint64_t to) {
  capture::Settings& s = part->settings;
  ++segment_index_;
  // A row processed a round late (a stalled CPU) goes into the next segment.
  const uint64_t first = part->samples.size() > 0 ? part->samples.time[0] : from;
  s.start_time = std::min(from, first);
  s.end_time = to;
  s.realtime_start = Realtime(s.start_time);
  s.part = "segment";
  s.part_index = segment_index_;
  // Losses and throttles are counted from the start: each segment carries
  // what came since the one before.
  const capture::Settings total = s;
  s.lost_records -= counted_.lost_records;
  s.lost_samples -= counted_.lost_samples;
  s.throttles -= counted_.throttles;
  s.unthrottles -= counted_.unthrottles;
  counted_ = total;
  std::vector<capture::Problem> fresh;
  for (capture::Problem p : part->problems) {
    uint64_t& before = problems_counted_[part->str(p.kind)];
    p.count -= std::min(p.count, before);
    before += p.count;
    if (p.count > 0) fresh.push_back(p);
  }
  part->problems = std::move(fresh);
}

void Recording::CutSegment(uint64_t to) {
  PartJob job;
  job.part = processor_.Part(segment_start_, to, to);
  MakeSegment(&job.part, segment_start_, to);
  job.path = SegmentPath(job.part.settings.start_time);
  job.finish = Finishing();
  job.done = [this, path = job.path](const Status& status, const capture::Capture& part) {
    if (status.ok()) Retain();
    hooks_.part_written(path, status, SummaryOf(part));
  };
  writer_->Submit(std::move(job));
  segment_start_ = to;
}

void Recording::TrimToWindow(capture::Capture* part, uint64_t end) const {
  if (end <= start_ + options_.rolling_ns) return;
  const uint64_t from = end - options_.rolling_ns;
  capture::TimeCut cut;
  cut.before = from;
  cut.intervals_by_end = true;
  capture::TakeEventRows(part, cut, nullptr);
  part->settings.start_time = from;
  part->settings.realtime_start = Realtime(from);
}

void Recording::Snapshot(uint64_t through, std::string path, int connection, std::string why) {
  PartJob job;
  // The span whose rows the part keeps: the window, the current segment or
  // the whole recording so far.
  uint64_t from = start_;
  if (Rolling() && through > start_ + options_.rolling_ns) from = through - options_.rolling_ns;
  if (Continuous()) from = segment_start_;
  job.part = processor_.Part(from, through, std::nullopt);
  if (Rolling()) TrimToWindow(&job.part, through);
  if (Continuous()) {
    // The current segment so far.
    job.part.settings.start_time = segment_start_;
    job.part.settings.realtime_start = Realtime(segment_start_);
  }
  job.part.settings.end_time = through;
  job.part.settings.part = "snapshot";
  job.part.settings.part_index = ++snapshots_;
  if (!why.empty()) job.part.settings.notes.push_back(std::move(why));
  if (path.empty()) {
    // The next number whose file is not there yet: never over an older snapshot.
    do {
      path = NumberedName(options_.output, ++numbered_);
    } while (access(path.c_str(), F_OK) == 0);
  }
  job.path = path;
  job.finish = Finishing();
  const int answer_to = connection >= 0 ? dup(connection) : -1;
  job.done = [this, path, answer_to](const Status& status, const capture::Capture& part) {
    const RecordSummary summary = SummaryOf(part);
    hooks_.part_written(path, status, summary);
    if (answer_to >= 0) {
      SnapshotServer::Answer(answer_to, status,
                             path + ": " + Counted(summary.samples, "sample") + ", " +
                                 Counted(summary.threads, "thread"));
      close(answer_to);
    }
  };
  writer_->Submit(std::move(job));
}

Result<int> Recording::Write() {
  // The targets' own views of their files (their roots stay open while
  // processor_ lives), taken before Finish hands the capture over.
  FinishOptions finish = Finishing();
  capture::Capture cap = processor_.Finish(end_);
  std::string path = options_.output;
  if (Continuous()) {
    MakeSegment(&cap, segment_start_, end_);
    path = SegmentPath(cap.settings.start_time);
  } else if (Rolling()) {
    TrimToWindow(&cap, end_);
    cap.settings.part = "window";
  }
  writer_->Flush();  // the parts before this one are written first
  if (triggers_) {
    cap.settings.notes.push_back(
        "--snapshot-when: " + Counted(triggers_->taken(), "snapshot") + " taken" +
        (triggers_->held_back() > 0
             ? ", " + std::to_string(triggers_->held_back()) +
                   " more firings held back (at most one snapshot per --snapshot-min-interval)"
             : ""));
  }
  RETURN_IF_ERROR(FinishCapture(&cap, finish));
  collector_.reset();  // release fds and rings before the (possibly slow) write
  RETURN_IF_ERROR(capture::WriteCapture(cap, path));
  if (Continuous()) Retain();
  hooks_.written(path, SummaryOf(cap));
  // A program the recording stopped without ending (Ctrl-C) ends as it chooses.
  if (child_ == nullptr) return 0;
  return ExitStatusForShell(exited_ ? wait_status_ : child_->Wait());
}

}  // namespace

Result<int> RunRecord(const RecordOptions& options, std::span<const SourceKind> sources,
                      const RecordHooks& hooks) {
  Processor::Options popts;
  popts.max_stack = MaxStack();
  popts.call_graph = options.call_graph;
  Recording recording(options, sources, hooks, popts);
  RETURN_IF_ERROR(recording.Open(CollectorOptionsFor(options)));
  recording.Run();
  return recording.Write();
}

}  // namespace microscope::record
