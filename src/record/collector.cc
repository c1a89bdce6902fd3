#include "src/record/collector.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <system_error>

#include "base/clock.h"
#include "src/record/cpus.h"

namespace microscope::record {
namespace {

long PerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group, unsigned long flags) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

// Drained records waiting for Collect: at about 17 KiB a sample (the
// default stack copy), 15 s of samples at 999 Hz on 2 CPUs.
constexpr size_t kMaxBacklog = size_t(512) << 20;

// The drain thread's longest wait, in the recording loop's rounds.
constexpr int kDrainRounds = 10;

// The drain thread's nice value (where the recorder may lower it).
constexpr int kDrainNice = -10;

constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                                 PERF_SAMPLE_CALLCHAIN;
// In a sample of kSampleType: the header, IDENTIFIER, IP, then TID's pid
// and tid; then TIME, CPU and PERIOD before the CALLCHAIN's length.
constexpr uint32_t kSampleTidAt = 8 + 8 + 8 + 4;
constexpr uint32_t kSampleCallchainAt = 8 + 8 + 8 + 8 + 8 + 8 + 8;

}  // namespace

std::string PermissionAdvice() {
  std::string paranoid = "?";
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  if (in) in >> paranoid;
  return "kernel.perf_event_paranoid is " + paranoid +
         "; run microscope as root or give it CAP_PERFMON (setcap cap_perfmon,cap_sys_ptrace+ep), "
         "or allow user profiling with: sysctl kernel.perf_event_paranoid=1";
}

Collector::Collector(const CollectorOptions& options)
    : options_(options), kernel_frames_(options.kernel_frames) {
  layout_.sample_type = options.callchain ? kSampleType : kSampleType & ~PERF_SAMPLE_CALLCHAIN;
  layout_.sample_id_all = true;
  if (options.stack_copy != 0) {
    layout_.sample_type |= PERF_SAMPLE_REGS_USER;
    if (!options.stack_by_bpf) layout_.sample_type |= PERF_SAMPLE_STACK_USER;
    layout_.regs_user_mask = kUserRegsMask;
  }
}

Collector::~Collector() {
  StopDraining();
  for (Ring& r : rings_) {
    if (r.base != nullptr) munmap(r.base, r.map_size);
  }
}

Result<std::unique_ptr<Collector>> Collector::Create(const CollectorOptions& options) {
  if (options.stack_copy % 8 != 0 || options.stack_copy > 65528) {
    return Status::Error("--stack-copy " + std::to_string(options.stack_copy) +
                         " must be a multiple of 8 and at most 65528");
  }
  if (options.ring_pages == 0 || (options.ring_pages & (options.ring_pages - 1)) != 0) {
    return Status::Error("--mmap-pages " + std::to_string(options.ring_pages) +
                         " is not a power of two");
  }
  std::unique_ptr<Collector> c(new Collector(options));
  c->cpus_ = RecordedCpus();
  c->period_seed_ =
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ uint64_t(getpid());
  // Sample rings first (when sampling), then task rings, each in CPU order.
  // The locked-memory limit of an unprivileged user (perf_event_mlock_kb per
  // CPU) hardly holds one ring per CPU: there, task records share the
  // sample ring as in perf record, and a loss's kind is not known.
  const bool apart = options.sample && geteuid() == 0;
  for (int cpu : c->cpus_) {
    if (options.sample)
      c->rings_.push_back({.cpu = cpu, .fd = -1, .samples = true, .tasks = !apart});
  }
  for (int cpu : c->cpus_) {
    if (apart || !options.sample)
      c->rings_.push_back({.cpu = cpu, .fd = -1, .samples = false, .tasks = true});
  }
  c->arenas_.resize(c->rings_.size());
  return c;
}

Result<int> Collector::OpenEvent(pid_t tid, const Ring& ring, bool enable_on_exec, bool held) {
  const int cpu = ring.cpu;
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = ring.samples ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_DUMMY;
  attr.freq = ring.samples ? 1 : 0;
  attr.sample_freq = ring.samples ? options_.frequency : 0;
  attr.sample_type = layout_.sample_type;
  // A launched program's events start at its exec; an attached process's
  // start at once, so that its FORK records tell which new threads the
  // events already cover by inheritance.
  attr.disabled = enable_on_exec || held ? 1 : 0;
  attr.enable_on_exec = enable_on_exec ? 1 : 0;
  attr.inherit = tid >= 0 ? 1 : 0;  // an event on every task covers new ones already
  if (ring.tasks) {
    if (tid >= 0) {
      attr.mmap = 1;  // mmap2 needs mmap set too (RECIPES.md)
      attr.mmap2 = 1;
      attr.build_id = 1;
    }
    attr.comm = 1;
    attr.comm_exec = 1;
    attr.task = 1;
  }
  attr.sample_id_all = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  attr.exclude_hv = 1;
  attr.exclude_kernel = kernel_frames_ ? 0 : 1;
  attr.exclude_callchain_kernel = kernel_frames_ ? 0 : 1;
  if (options_.stack_copy != 0) {
    // User frames come from our unwinder over the copy; keep the kernel's
    // part. (A task ring's dummy event never samples, but every event of the
    // recording has the same sample layout.)
    attr.exclude_callchain_user = 1;
    attr.sample_regs_user = kUserRegsMask;
    attr.sample_stack_user = options_.stack_by_bpf ? 0 : options_.stack_copy;
  }
  attr.watermark = 1;
  attr.wakeup_watermark = uint32_t(RingPages(ring) * getpagesize() / 4);
  attr.read_format = lost_counters_ ? PERF_FORMAT_LOST : 0;
  for (;;) {
    long fd = PerfEventOpen(&attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) {
      // Opened without the count (below): before Linux 6.0 there is none.
      if (attr.read_format == 0) lost_counters_ = false;
      return int(fd);
    }
    int err = errno;
    if (err == EINVAL && attr.read_format != 0) {
      attr.read_format = 0;  // perhaps a kernel without PERF_FORMAT_LOST
      continue;
    }
    if ((err == EACCES || err == EPERM) && !attr.exclude_kernel) {
      // Not allowed to see the kernel: record user space only, and say so.
      attr.exclude_kernel = 1;
      attr.exclude_callchain_kernel = 1;
      kernel_frames_ = false;
      continue;
    }
    if ((err == EACCES || err == EPERM) && tid < 0) {
      return Status::Error(StatusCode::kPermissionDenied,
                           std::string("not permitted to sample every task of a CPU "
                                       "(perf_event_open: ") +
                               std::strerror(err) + "); " + PermissionAdvice());
    }
    if (err == EACCES || err == EPERM) {
      return Status::Error("not permitted to profile pid " + std::to_string(tid) +
                           " (perf_event_open: " + std::strerror(err) + "); " + PermissionAdvice());
    }
    if (err == ESRCH) {
      return Status::Error(StatusCode::kNotFound, "no such process: " + std::to_string(tid));
    }
    return Status::Error("perf_event_open on pid " + std::to_string(tid) + " cpu " +
                         std::to_string(cpu) + ": " + std::strerror(err));
  }
}

uint32_t Collector::RingPages(const Ring& ring) const {
  return !ring.samples && options_.sample ? std::max(1u, options_.ring_pages / 8)
                                          : options_.ring_pages;
}

Status Collector::AddTask(pid_t tid, bool enable_on_exec, bool hold_sampling) {
  for (size_t i = 0; i < rings_.size(); ++i) {
    // Held only where another ring takes the task records: a disabled event
    // writes none.
    const bool held = hold_sampling && rings_[i].samples && !rings_[i].tasks;
    Result<int> fd = OpenEvent(tid, rings_[i], enable_on_exec, held);
    if (!fd.ok()) {
      // A task that exited between listing and opening is not an error.
      if (fd.status().code() == StatusCode::kNotFound && !events_.empty()) {
        return OkStatus();
      }
      return fd.status();
    }
    events_.emplace_back(*fd);
    Ring& ring = rings_[i];
    if (held) held_fds_.push_back(*fd);
    if (ring.samples) {
      sampling_fds_.push_back(*fd);
      if (program_fd_ >= 0 && ioctl(*fd, PERF_EVENT_IOC_SET_BPF, program_fd_) != 0) {
        return Status::Error(std::string("PERF_EVENT_IOC_SET_BPF: ") + std::strerror(errno));
      }
    }
    if (ring.fd < 0) {
      size_t page = size_t(getpagesize());
      void* base = MAP_FAILED;
      for (;;) {
        ring.data_size = size_t(RingPages(ring)) * page;
        ring.map_size = ring.data_size + page;
        base = mmap(nullptr, ring.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
        // Without privileges the locked-memory limit (kernel.perf_event_mlock_kb)
        // caps rings: halve until one fits, and say so in the capture.
        if (base != MAP_FAILED || errno != EPERM || options_.ring_pages == 1) break;
        options_.ring_pages /= 2;
        ring_shrunk_ = true;
      }
      if (base == MAP_FAILED) {
        return Status::Error(std::string("mmap of the perf ring failed: ") + std::strerror(errno) +
                             " (raise ulimit -l or kernel.perf_event_mlock_kb)");
      }
      ring.base = base;
      ring.fd = *fd;
    } else if (ioctl(*fd, PERF_EVENT_IOC_SET_OUTPUT, ring.fd) != 0) {
      return Status::Error(std::string("PERF_EVENT_IOC_SET_OUTPUT: ") + std::strerror(errno));
    }
  }
  if (tid < 0) every_task_open_ = true;
  return OkStatus();
}

Status Collector::EnableSampling() {
  // An inherited event is enabled with the event it was inherited from.
  for (int fd : held_fds_) {
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
      return Status::Error(std::string("PERF_EVENT_IOC_ENABLE: ") + std::strerror(errno));
  }
  held_fds_.clear();
  return OkStatus();
}

void Collector::VaryPeriods() {
  if (!every_task_open_ || options_.frequency == 0) return;
  const uint64_t mean = 1'000'000'000ull / options_.frequency;
  for (int fd : sampling_fds_) {
    // splitmix64: any spread will do, no two rounds alike.
    uint64_t z = (period_seed_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    uint64_t period = mean * 3 / 4 + z % (mean / 2 + 1);
    ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);  // a refusal leaves the period as it was
  }
}

Status Collector::AttachGate(int gate_fd, std::function<Status(int)> chain) {
  if (program_fd_ >= 0) return Status::Error("a program already runs at each sample");
  RETURN_IF_ERROR(AttachProgram(gate_fd));
  chain_ = std::move(chain);
  return OkStatus();
}

Status Collector::AttachProgram(int prog_fd) {
  if (chain_) return chain_(prog_fd);
  if (!options_.sample) return Status::Error("no sampling events to run a BPF program on");
  for (int fd : sampling_fds_) {
    if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog_fd) != 0) {
      return Status::Error(std::string("PERF_EVENT_IOC_SET_BPF: ") + std::strerror(errno));
    }
  }
  program_fd_ = prog_fd;
  return OkStatus();
}

Result<std::vector<std::pair<int, int>>> Collector::OpenOutputEvents() {
  std::vector<std::pair<int, int>> out;
  for (const Ring& ring : rings_) {
    if (!ring.samples) continue;
    if (ring.fd < 0) return Status::Error("BPF output events need the sample rings open first");
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_BPF_OUTPUT;
    attr.sample_period = 1;
    attr.sample_type = kRawSampleType;
    attr.sample_id_all = 1;  // the same trailer as the sampling events' (TID TIME CPU IDENTIFIER)
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    attr.watermark = 1;
    attr.wakeup_watermark = uint32_t(RingPages(ring) * getpagesize() / 4);
    attr.read_format = lost_counters_ ? PERF_FORMAT_LOST : 0;
    long fd = PerfEventOpen(&attr, -1, ring.cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
      return Status::Error(std::string("perf_event_open of a BPF output event on CPU ") +
                           std::to_string(ring.cpu) + ": " + std::strerror(errno));
    }
    events_.emplace_back(int(fd));
    uint64_t id = 0;
    if (ioctl(int(fd), PERF_EVENT_IOC_SET_OUTPUT, ring.fd) != 0 ||
        ioctl(int(fd), PERF_EVENT_IOC_ID, &id) != 0) {
      return Status::Error(std::string("BPF output event into the sample ring: ") +
                           std::strerror(errno));
    }
    layout_.raw_ids.insert(std::upper_bound(layout_.raw_ids.begin(), layout_.raw_ids.end(), id),
                           id);
    out.emplace_back(ring.cpu, int(fd));
  }
  std::lock_guard lock(mutex_);  // the drain thread's copy
  raw_ids_ = layout_.raw_ids;
  return out;
}

std::optional<uint64_t> Collector::KernelLost() const {
  if (!lost_counters_ || events_.empty()) return std::nullopt;
  uint64_t lost = 0;
  for (const ScopedFd& fd : events_) {
    // read_format PERF_FORMAT_LOST alone: the count, then the losses.
    uint64_t values[2];
    if (read(fd.get(), values, sizeof(values)) != ssize_t(sizeof(values))) return std::nullopt;
    lost += values[1];
  }
  return lost;
}

Status Collector::Disable() {
  for (const ScopedFd& fd : events_) ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0);
  return OkStatus();
}

void Collector::Wait(int timeout_ms, std::span<const int> extra_fds, std::vector<int>* ready) {
  std::vector<pollfd> fds;
  // With the drain thread, the rings are this loop's to drain at each round
  // (Collect): only the thread wakes at their watermarks.
  if (!thread_.joinable()) {
    for (const Ring& r : rings_) {
      if (r.fd >= 0) fds.push_back({r.fd, POLLIN, 0});
    }
  }
  const size_t first_extra = fds.size();
  for (int fd : extra_fds) fds.push_back({fd, POLLIN, 0});
  const int n = poll(fds.data(), fds.size(), timeout_ms);
  if (ready == nullptr) return;
  ready->clear();
  for (size_t i = first_extra; n > 0 && i < fds.size(); ++i) {
    if (fds[i].revents != 0) ready->push_back(fds[i].fd);
  }
}

void Collector::DrainRound(std::vector<std::vector<uint8_t>>* chunks,
                           std::span<const uint64_t> raw_ids, const StackTrim& trim) {
  RingCopyStats stats, task_stats;
  for (size_t i = 0; i < rings_.size(); ++i) {
    if (rings_[i].base == nullptr) continue;
    DrainRing(i, &(*chunks)[i], rings_[i].samples ? &stats : &task_stats, raw_ids, trim);
  }
  std::lock_guard lock(mutex_);
  stats_.Add(stats);
  task_stats_.Add(task_stats);
}

void Collector::Drain() {
  std::vector<std::vector<uint8_t>> chunks(rings_.size());
  {
    std::lock_guard drain(drain_mutex_);
    DrainRound(&chunks, layout_.raw_ids, Trim());
  }
  for (size_t i = 0; i < chunks.size(); ++i) arenas_[i].Append(std::move(chunks[i]));
}

Status Collector::StartDraining() {
  stop_fd_ = ScopedFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_fd_.valid()) {
    return Status::Error(std::string("eventfd: ") + std::strerror(errno));
  }
  drained_.assign(rings_.size(), {});
  stop_ = false;
  try {
    thread_ = std::thread([this] { DrainLoop(); });
  } catch (const std::system_error& e) {
    return Status::Error(std::string("starting the ring thread: ") + e.what());
  }
  return OkStatus();
}

void Collector::StopDraining() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  room_.notify_one();
  uint64_t one = 1;
  (void)!write(stop_fd_.get(), &one, sizeof(one));
  thread_.join();
  Collect();
}

void Collector::DrainLoop() {
  // Ahead of the programs being recorded where allowed (root): under make
  // -j8 on 2 CPUs at nice 0 this thread once woke too late for a ring with
  // a quarter second of room (77 samples lost in a CI run). It copies only,
  // a few percent of a CPU at most, so the programs lose little to it.
  (void)setpriority(PRIO_PROCESS, gettid(), kDrainNice);
  std::vector<pollfd> fds;
  for (const Ring& r : rings_) {
    if (r.fd >= 0) fds.push_back({r.fd, POLLIN, 0});
  }
  fds.push_back({stop_fd_.get(), POLLIN, 0});
  std::vector<std::vector<uint8_t>> copied(rings_.size());
  std::vector<uint64_t> raw_ids;  // raw_ids_ as of this round
  for (;;) {
    // The recording loop drains the rings at each of its rounds (Collect);
    // this thread wakes when one is a quarter full (its watermark), which
    // that loop's rounds leave it only while it is busy elsewhere, and
    // every ten rounds besides. Waking it and that loop at every round cost
    // the recorder half as much CPU again while collecting: on a virtual
    // machine a thread's wake-up costs more than the copy.
    poll(fds.data(), fds.size(), kDrainRounds * round_ms());
    // An event whose task exited polls as hung up for good: wait on the
    // others (and the timeout), still draining its ring each time.
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) fds[i].fd = -1;
    }
    {
      // Past the bound the rings are left to fill until Collect makes room.
      std::unique_lock lock(mutex_);
      room_.wait(lock, [&] { return stop_ || backlog_ < kMaxBacklog; });
      if (stop_) return;
      if (raw_ids.size() != raw_ids_.size()) raw_ids = raw_ids_;
    }
    std::lock_guard drain(drain_mutex_);
    DrainRound(&copied, raw_ids, Trim(false));  // the extents are the recording loop's
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < copied.size(); ++i) {
      backlog_ += copied[i].size();
      drained_[i].Append(std::move(copied[i]));  // moved, not copied
      copied[i] = {};
    }
  }
}

uint64_t Collector::Collect() {
  if (!thread_.joinable() && drained_.empty()) {
    uint64_t began = MonotonicNowNs();
    Drain();
    return began;
  }
  // What the thread drained comes first, then what is in the rings now,
  // drained here. Only swaps under mutex_: appending megabytes there kept
  // the thread waiting for a reader that the machine's load had descheduled
  // (gaps of 170-280 ms between drains under make -j16 on 2 cores).
  std::vector<RingArena> taken(drained_.size());
  std::vector<std::vector<uint8_t>> own(rings_.size());
  uint64_t began;
  {
    std::lock_guard drain(drain_mutex_);
    {
      std::lock_guard lock(mutex_);
      taken.swap(drained_);
      drained_.resize(taken.size());
      backlog_ = 0;
    }
    began = MonotonicNowNs();
    DrainRound(&own, layout_.raw_ids, Trim());
  }
  room_.notify_one();
  for (size_t i = 0; i < taken.size(); ++i) {
    arenas_[i].Append(std::move(taken[i]));
    arenas_[i].Append(std::move(own[i]));
  }
  if (!thread_.joinable()) drained_.clear();  // stopped: later calls drain here
  return began;
}

StackTrim Collector::Trim(bool extents) const {
  if (options_.stack_copy == 0 || options_.stack_by_bpf) return {};
  return {.extents = extents ? stack_extents_ : nullptr,
          .callchain_at = kSampleCallchainAt,
          .tid_at = kSampleTidAt,
          .regs = uint32_t(kUserRegCount),
          .sp_index = uint32_t(kUserRegSp)};
}

RingCopyStats Collector::Stats() const {
  std::lock_guard lock(mutex_);
  RingCopyStats all = stats_;
  all.Add(task_stats_);
  return all;
}

std::optional<uint64_t> Collector::lost_task_records() const {
  for (const Ring& r : rings_) {
    if (r.samples && r.tasks) return std::nullopt;
  }
  std::lock_guard lock(mutex_);
  return task_stats_.lost;
}

}  // namespace microscope::record
