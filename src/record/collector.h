// Owns every perf_event fd and ring of a recording. Opens a cpu-clock event
// and a dummy event (for task records) per CPU for each task handed to it
// (inherit=1, so the threads and children the task starts later are
// covered), shares a sample ring and a task ring per CPU via
// PERF_EVENT_IOC_SET_OUTPUT, and copies raw records out of the rings into
// per-ring arenas. It parses nothing but record headers: decoding and state
// belong to decode.cc and processor.cc.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"
#include "src/record/decode.h"
#include "src/record/stack_extents.h"
#include "src/record/user_regs.h"

namespace microscope::record {

struct RingCopyStats {
  uint64_t samples = 0;
  uint64_t lost = 0;
  uint64_t errors = 0;  // corrupt headers; the rest of that read was dropped
  void Add(const RingCopyStats& o) {
    samples += o.samples;
    lost += o.lost;
    errors += o.errors;
  }
};

// Copies the complete records in [tail, head) of a ring's data area (whose
// size is a power of two) into `arena`, joining records that wrap the end.
// Returns the new tail. Pure, so tests can hand it any bytes.
// With `stack_copy` (the bytes of user stack each sample asks for, its last
// field) and the samples' layout in `trim`, a sample's stack is copied only
// as far as the kernel filled it (its dyn_size, rounded up to 8): the record
// keeps its layout with a smaller stack size. A thread's stack is mostly
// shallower than the copy asked for, and the rest of its ring space is only
// skipped by the kernel. The stack is found from the callchain forward: the
// kernel gives less than was asked for where the record would outgrow its
// 16-bit size (a 64 KiB copy always does).
// Samples whose identifier is in `raw_ids` (sorted: BPF output events') are
// not the sampling events' and are copied whole.
// With `trim.extents`, a sample's stack is cut further at the end its
// thread's walks need (StackExtents), dyn_size with it.
uint64_t CopyRingRecords(std::span<const uint8_t> data, uint64_t tail, uint64_t head,
                         std::vector<uint8_t>* arena, RingCopyStats* stats, uint32_t stack_copy = 0,
                         std::span<const uint64_t> raw_ids = {}, const StackTrim& trim = {});

struct CollectorOptions {
  uint32_t frequency = 999;
  bool kernel_frames = true;
  uint32_t ring_pages = 256;  // data pages per CPU ring, a power of two
  // Non-zero: copy the user registers and this many bytes of user stack
  // with each sample (for our unwinder) instead of the kernel's user
  // frame-pointer chain. A multiple of 8, at most 65528.
  uint32_t stack_copy = 0;
  // With stack_copy: the stack is copied by a BPF program on the sampling
  // events (StackCopier, which sizes each copy by what the thread needs,
  // stack_copy bytes until that is known) instead of the kernel: the
  // samples carry the registers only.
  bool stack_by_bpf = false;
  // false: a dummy event per task and CPU, which samples nothing but brings
  // the process, thread and mapping records (for BPF-only recordings).
  bool sample = true;
  // false: samples without a call chain (counts by thread only).
  bool callchain = true;
  // The events are opened once per CPU for every task (AddTask(-1)), not
  // per task: no perf context then travels with the target's threads, so a
  // context switch costs them nothing (a per-task sampling event stops and
  // re-arms its timer at each one). The task records are every process's
  // (fork, comm, exit; no mappings): the processor follows the target's
  // own (Processor::Follow). Needs root or CAP_PERFMON.
  bool every_task = false;
};

// The longest the ring thread and the recording loop wait between rounds
// of draining and processing (collector.cc says why it is short).
inline constexpr int kRoundMs = 10;

class Collector {
 public:
  static Result<std::unique_ptr<Collector>> Create(const CollectorOptions& options);
  ~Collector();

  // Opens events on `tid` on every CPU (-1: on every task, with
  // every_task). `enable_on_exec`: start counting at
  // the task's next exec (a launched program); otherwise at once, except
  // with `hold_sampling` the sampling events where they have rings of their
  // own (task records go on meanwhile), until EnableSampling.
  Status AddTask(pid_t tid, bool enable_on_exec, bool hold_sampling = false);
  // Starts the sampling events AddTask held (and those their threads
  // inherited since).
  Status EnableSampling();
  // Events on every task of a CPU sample by the CPU's clock, not the
  // task's: a program that wakes on a period of its own (every 10 ms)
  // would be sampled in step with it, always or never (at 99 Hz a thread
  // busy 2 ms of every 10 got 0 samples of the 20 due, at 97 Hz 10). Each
  // call sets every such event a new period drawn around the mean (-25% to
  // +25%), so that no program's period can keep step. A sample's weight
  // stays the mean: the kernel reports a CPU clock's first period with
  // each sample, and the periods drawn average to it. Called at every
  // round; a no-op for events on tasks, which count their task's own time.
  void VaryPeriods();
  Status Disable();

  // Runs BPF program `prog_fd` (a perf_event program) at each sample of
  // every sampling event, open now or later (PERF_EVENT_IOC_SET_BPF; events
  // that threads and children inherit run it too). Not with events opened
  // without sampling.
  Status AttachProgram(int prog_fd);
  // A program that runs first at every sample (the budget's sample gate,
  // the stack copier): a program attached later goes behind it through
  // `chain` (its tail call) instead of onto the events. Before any other
  // AttachProgram.
  Status AttachGate(int gate_fd, std::function<Status(int)> chain);
  // Opens one BPF output event per CPU (PERF_COUNT_SW_BPF_OUTPUT) whose
  // records go to that CPU's sample ring, for a program to write with
  // bpf_perf_event_output just before its sample; returns (CPU, fd) pairs.
  // Their samples decode as kRaw records (layout().raw_ids). Call after the
  // first AddTask.
  Result<std::vector<std::pair<int, int>>> OpenOutputEvents();

  // From now until StopDraining, a thread of its own empties any ring that
  // fills to its watermark (a quarter) between two Collects, so that nothing
  // the reader does between rounds (the CFI of a large module it meets first
  // takes a second on a busy machine) leaves a ring full: the kernel drops
  // what a full ring cannot take. Those records wait in memory for Collect,
  // up to a bound past which the rings are left to fill and the kernel
  // counts what it drops.
  Status StartDraining();
  // The recording loop's round (kRoundMs unless the budget asks for
  // longer); the drain thread waits ten of them at most.
  void SetRoundMs(int ms) { round_ms_.store(ms, std::memory_order_relaxed); }
  int round_ms() const { return round_ms_.load(std::memory_order_relaxed); }
  // Stops the thread and moves what it drained onto arenas().
  void StopDraining();
  // Waits up to `timeout_ms` for one of `extra_fds` (the BPF rings) to be
  // readable, or, without the drain thread, for a ring past its watermark;
  // `ready`, when given, gets those of `extra_fds` that were.
  void Wait(int timeout_ms, std::span<const int> extra_fds = {}, std::vector<int>* ready = nullptr);
  // Moves the records the drain thread took since the last call onto
  // arenas(), drains the rings after them, and returns when that drain
  // began: every record written before that time is now in arenas().
  uint64_t Collect();
  // Copies every complete record out of the rings onto arenas() (after
  // StopDraining, or without the thread: with it, Collect keeps the order).
  void Drain();

  // What the unwinder needs of each thread's stack, learned by the
  // processor: the recording loop's drains (Collect, Drain) copy samples'
  // stacks only that far. The recording loop's alone.
  // Where the recording keeps what each thread's walks read of its stacks
  // (the processor learns them): the copies the loop drains are cut there.
  // Null (the default): copies are kept as far as they were filled.
  void SetStackExtents(const StackExtents* extents) { stack_extents_ = extents; }

  // Records copied out, ring by ring, in the chunks each drain took.
  std::vector<RingArena>& arenas() { return arenas_; }
  const SampleLayout& layout() const { return layout_; }
  bool kernel_frames() const { return kernel_frames_; }
  uint64_t samples() const { return Stats().samples; }
  uint64_t lost() const { return Stats().lost; }
  uint64_t ring_errors() const { return Stats().errors; }
  // Of lost(), the records lost from the task rings: mappings, processes,
  // threads and their names; not known when they share the sample rings.
  std::optional<uint64_t> lost_task_records() const;
  uint32_t ring_pages() const { return options_.ring_pages; }
  bool ring_shrunk() const { return ring_shrunk_; }
  // The records the kernel failed to write into our rings, by its own count
  // of each event (PERF_FORMAT_LOST, Linux 6.0+), read once the events are
  // disabled: the LOST records report the same losses, except those after
  // which nothing more reached that ring. Not known on older kernels.
  std::optional<uint64_t> KernelLost() const;

 private:
  // Each CPU has two rings (as root), so that a flood of samples never costs
  // a mapping or a process record and a loss says which kind it was: samples
  // go to one; a dummy event per task and CPU brings the task records
  // (mappings, comm, fork, exit) to the other, an eighth of its size. Without
  // sampling only the task rings exist.
  struct Ring {
    int cpu;
    int fd;                // the event whose buffer this is (owned by events_)
    bool samples = false;  // its events sample the CPU
    bool tasks = false;    // its events bring task records
    void* base = nullptr;
    size_t map_size = 0;
    size_t data_size = 0;
  };
  explicit Collector(const CollectorOptions& options);
  Result<int> OpenEvent(pid_t tid, const Ring& ring, bool enable_on_exec, bool held);
  uint32_t RingPages(const Ring& ring) const;
  // Drains every ring into `chunks` (one per ring) and counts what it
  // copied; under drain_mutex_.
  void DrainRound(std::vector<std::vector<uint8_t>>* chunks, std::span<const uint64_t> raw_ids,
                  const StackTrim& trim);
  void DrainRing(size_t index, std::vector<uint8_t>* arena, RingCopyStats* stats,
                 std::span<const uint64_t> raw_ids, const StackTrim& trim);
  StackTrim Trim(bool extents = true) const;  // over stack_extents_: the recording loop's alone
  void DrainLoop();
  RingCopyStats Stats() const;

  CollectorOptions options_;
  SampleLayout layout_;
  bool kernel_frames_;
  std::vector<int> cpus_;
  std::vector<ScopedFd> events_;
  std::vector<int> sampling_fds_;     // of events_, the events that sample
  std::vector<int> held_fds_;         // of sampling_fds_, opened disabled until EnableSampling
  int program_fd_ = -1;               // run at each sample (AttachProgram)
  std::function<Status(int)> chain_;  // AttachGate's
  std::atomic<int> round_ms_{kRoundMs};
  uint64_t period_seed_ = 0;      // VaryPeriods' generator state
  bool every_task_open_ = false;  // AddTask(-1) opened the sampling events
  std::vector<Ring> rings_;       // sample rings in CPU order, then task rings
  std::vector<RingArena> arenas_;
  const StackExtents* stack_extents_ = nullptr;
  bool ring_shrunk_ = false;
  bool lost_counters_ = true;  // every event counts its losses (PERF_FORMAT_LOST)

  // Held by whichever thread reads the rings (Collect's or the drain
  // thread's round): each moves the rings' tails.
  std::mutex drain_mutex_;
  // Shared with the drain thread, under mutex_ (taken inside drain_mutex_).
  mutable std::mutex mutex_;
  std::condition_variable room_;    // the backlog fell below its bound, or stop
  RingCopyStats stats_;             // the sample rings
  RingCopyStats task_stats_;        // the task rings
  std::vector<RingArena> drained_;  // per ring, not yet collected
  std::vector<uint64_t> raw_ids_;   // layout_.raw_ids, for the drain thread
  size_t backlog_ = 0;              // bytes in drained_
  bool stop_ = false;
  ScopedFd stop_fd_;  // eventfd: the thread is to stop
  std::thread thread_;
};

// One line that says what to change when perf_event_open is refused.
std::string PermissionAdvice();

}  // namespace microscope::record
