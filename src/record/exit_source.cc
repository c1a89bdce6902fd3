#include "src/record/exit_source.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "bpf/exits.h"
#include "bpf/exits.skel.h"
#include "src/record/bpf_loader.h"
#include "src/record/launch.h"
#include "src/record/proc.h"

namespace microscope::record {
namespace {

static_assert(sizeof(exit_event) == 16, "bpf/exits.h layout");
static_assert(sizeof(thread_end_event) == 56, "bpf/exits.h layout");

// The most threads of an attached process whose counts are read at the
// start (some 64 bytes each); the rest have no base and are left out.
constexpr size_t kMaxBased = 1 << 16;

// A process's exit, or (thread_times) a thread's end with its counts.
struct Ended {
  uint64_t time_ns = 0;
  bool thread = false;
  exit_event exit{};
  thread_end_event end{};
};

// The BPF objects; the only code that includes exits.skel.h.
struct ExitBpf {
  exits_bpf* skel = nullptr;
  ring_buffer* ring = nullptr;
  ExitBpf() = default;
  ExitBpf(const ExitBpf&) = delete;
  ExitBpf& operator=(const ExitBpf&) = delete;
  ~ExitBpf() {
    if (ring != nullptr) ring_buffer__free(ring);
    if (skel != nullptr) exits_bpf__destroy(skel);
  }
};

class ExitSource final : public QueuedSource<Ended> {
 public:
  ExitSource(std::unique_ptr<ExitBpf> bpf, bool thread_times)
      : bpf_(std::move(bpf)), thread_times_(thread_times) {}

  Status Attach(int32_t target) {
    RETURN_IF_ERROR(FollowTgid(bpf_->skel->maps.targets, target));
    if (thread_times_) {
      // Each thread there now is counted from now: its counts so far are
      // the base its later ones are taken from.
      // Bounded: a target's threads past kMaxBased are left out, counted.
      const uint64_t now = MonotonicNowNs();
      for (pid_t tid : ListTasks(target)) {
        if (base_.size() >= kMaxBased) break;
        if (std::optional<SchedCounts> c = ReadSchedCounts(target, tid, true))
          base_[uint32_t(tid)] = {now, *c};
      }
    }
    if (int err = exits_bpf__attach(bpf_->skel); err != 0) {
      return BpfFailed("cannot attach the process-exit BPF program", err);
    }
    bpf_->ring = ring_buffer__new(bpf_map__fd(bpf_->skel->maps.events), OnEvent, this, nullptr);
    if (bpf_->ring == nullptr) return BpfFailed("cannot read the process-exit ring buffer", errno);
    return OkStatus();
  }

  int wait_fd() const override { return ring_buffer__epoll_fd(bpf_->ring); }

  void Poll(const PollWindow& w, RowSink* sink) override {
    Status read = ConsumeRing(bpf_->ring, 0, "reading the process-exit ring buffer");
    if (!read.ok()) sink->CountProblem("process exits not read", read.message());
    Take(&fresh_, [&](const Ended& e) { return e.time_ns < w.end || w.final; });
  }

  void Deliver(size_t i, RowSink* sink) override {
    const Ended& e = at(i);
    if (!e.thread) {
      sink->SetExitStatus(e.exit.pid, ExitStatusForShell(e.exit.exit_code));
      return;
    }
    const SchedCounts c{e.end.on_cpu_ns, e.end.run_delay_ns, e.end.timeslices, e.end.voluntary};
    AddTotals(sink, e.end.pid, e.end.tid, e.time_ns, e.end.start_ns, c);
  }

  void Finish(RowSink* sink, capture::Settings* settings) override {
    if (thread_times_) {
      // The threads still there: counted until now.
      const uint64_t now = MonotonicNowNs();
      for (uint32_t pid : FollowedProcesses()) {
        for (pid_t tid : ListTasks(pid_t(pid))) {
          std::optional<SchedCounts> c = ReadSchedCounts(pid_t(pid), tid, true);
          if (!c) continue;  // it ended meanwhile: its exit brought its counts
          const capture::ThreadId t = sink->LatestThread(pid, uint32_t(tid));
          AddTotals(sink, pid, uint32_t(tid), now, sink->ThreadStart(t), *c);
        }
      }
      if (unbased_ > 0) {
        sink->CountProblem("off-CPU totals: threads without a base",
                           std::to_string(unbased_) +
                               " threads began before the recording but were not read at its "
                               "start: their time is left out");
      }
    }
    uint64_t lost = 0;
    for (uint64_t v : ReadPerCpu<uint64_t>(bpf_->skel->maps.lost)) lost += v;
    if (lost > 0) {
      sink->CountProblem("process exits lost (BPF ring buffer full)",
                         std::to_string(lost) + " exits");
      settings->lost_records += lost;
    }
    bpf_.reset();
  }

 private:
  static int OnEvent(void* ctx, void* data, size_t size) {
    Ended e;
    if (size == sizeof(thread_end_event)) {
      e.thread = true;
      std::memcpy(&e.end, data, sizeof(e.end));
      e.time_ns = e.end.time_ns;
    } else if (size == sizeof(exit_event)) {
      std::memcpy(&e.exit, data, sizeof(e.exit));
      e.time_ns = e.exit.time_ns;
    } else {
      return 0;
    }
    static_cast<ExitSource*>(ctx)->fresh_.push_back(e);
    return 0;
  }
  uint64_t TimeOf(const Ended& e) const override { return e.time_ns; }

  // The followed processes, as the BPF programs know them (the target and
  // the children each forked).
  std::vector<uint32_t> FollowedProcesses() const {
    std::vector<uint32_t> out;
    const int fd = bpf_map__fd(bpf_->skel->maps.targets);
    uint32_t key = 0, next = 0;
    for (const uint32_t* prev = nullptr; bpf_map_get_next_key(fd, prev, &next) == 0; prev = &key) {
      out.push_back(next);
      key = next;
    }
    return out;
  }

  // A thread's time off CPU from `from` (its base's time, or its birth)
  // until `end`, with the counts it had at `end`: runnable is the run
  // queue's delay, blocked the rest of the time it was not on a CPU.
  void AddTotals(RowSink* sink, uint32_t pid, uint32_t tid, uint64_t end, uint64_t born,
                 const SchedCounts& c) {
    SchedCounts b;
    uint64_t from = born;
    if (auto it = base_.find(tid); it != base_.end()) {
      from = it->second.first;
      b = it->second.second;
      base_.erase(it);
    } else if (born < sink->start_time()) {
      ++unbased_;  // its counts hold time before the recording
      return;
    }
    if (end <= from) return;
    auto since = [](uint64_t now, uint64_t then) { return now > then ? now - then : 0; };
    const uint64_t on = since(c.on_cpu, b.on_cpu), waiting = since(c.run_delay, b.run_delay);
    const uint64_t blocked = since(end - from, on + waiting);
    const capture::ThreadId thread = sink->LatestThread(pid, tid);
    const uint64_t blocks = since(c.voluntary, b.voluntary);
    if (blocked > 0 || blocks > 0) {
      sink->Add(capture::OffCpuShort::Row{.thread = thread,
                                          .state = capture::OffCpuState::kBlocked,
                                          .count = blocks,
                                          .total = blocked});
    }
    const uint64_t slices = since(c.timeslices, b.timeslices);
    if (waiting > 0 || slices > 0) {
      sink->Add(capture::OffCpuShort::Row{.thread = thread,
                                          .state = capture::OffCpuState::kRunnable,
                                          .count = slices,
                                          .total = waiting});
    }
  }

  std::unique_ptr<ExitBpf> bpf_;
  bool thread_times_;
  std::vector<Ended> fresh_;
  std::unordered_map<uint32_t, std::pair<uint64_t, SchedCounts>> base_;  // by tid
  uint64_t unbased_ = 0;
};

}  // namespace

Result<std::unique_ptr<EventSource>> StartExitSource(const SourceContext& context) {
  auto bpf = std::make_unique<ExitBpf>();
  bpf->skel = exits_bpf__open();
  if (bpf->skel == nullptr) return BpfFailed("cannot open the process-exit BPF program", errno);
  const bool thread_times = context.options.off_cpu_totals;
  bpf->skel->rodata->thread_times = thread_times;
  if (int err = exits_bpf__load(bpf->skel); err != 0) {
    return BpfLoadError("the kernel refused the process-exit BPF program", err);
  }
  auto source = std::make_unique<ExitSource>(std::move(bpf), thread_times);
  RETURN_IF_ERROR(source->Attach(context.target));
  context.settings->SetSource(std::string(capture::kExitSource), "on");
  if (thread_times) {
    context.settings->SetSource(std::string(capture::kOffCpuSource), "totals");
    context.settings->notes.push_back(
        "off-CPU: totals per thread from the scheduler's own counts (schedstat at the start and "
        "end, each thread's at its exit by BPF): blocked (asleep or uninterruptible, not told "
        "apart) and runnable (waiting for a CPU); no intervals, nothing run at a switch "
        "(record --level 0)");
  }
  return std::unique_ptr<EventSource>(std::move(source));
}

}  // namespace microscope::record
