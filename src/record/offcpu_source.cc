#include "src/record/offcpu_source.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/clock.h"
#include "capture/row_order.h"
#include "src/record/bpf_offcpu.h"
#include "src/record/proc.h"

namespace microscope::record {
namespace {

// An OffCpuState for a thread's state letter; -1: running, gone or unreadable.
int OffState(pid_t tid) {
  char state = ThreadState(tid);
  return state != 0 ? OffCpuStateOfLetter(state) : -1;
}

class OffCpuSource final : public QueuedSource<OffCpuInterval> {
 public:
  explicit OffCpuSource(std::unique_ptr<OffCpuTracer> tracer) : tracer_(std::move(tracer)) {}

  // Threads already blocked when an attach begins began their interval
  // before the recording.
  void SeedBlockedThreads(pid_t target) {
    std::vector<pid_t> seeded;
    for (pid_t tid : ListTasks(target)) {
      int off = OffState(tid);
      if (off >= 0 && tracer_->SeedOffCpu(target, tid, uint8_t(off)).ok()) seeded.push_back(tid);
    }
    // A thread that woke between the look and the seed would carry a false
    // interval until its next switch: look again.
    for (pid_t tid : seeded) {
      if (OffState(tid) < 0) tracer_->Unseed(tid);
    }
  }

  int wait_fd() const override { return tracer_->wait_fd(); }

  void Poll(const PollWindow& w, RowSink* sink) override {
    Status polled = w.final ? tracer_->Finish(&fresh_) : tracer_->Poll(0, &fresh_);
    if (!polled.ok()) sink->CountProblem("off-CPU events not read", polled.message());
    const uint64_t now = MonotonicNowNs();
    for (OffCpuInterval& iv : fresh_) {
      if (iv.time_ns == 0) iv.time_ns = now;  // still open at the end
    }
    // Outside the recording: in launch mode the wait at the gate, before
    // exec, which is not the program's; and what began after the end. An
    // attach keeps the intervals it cut (start 0).
    Take(&fresh_, [&](const OffCpuInterval& iv) {
      return iv.start_ns == 0 || !((w.launch && iv.start_ns < w.start) || iv.start_ns >= w.end);
    });
  }

  void Deliver(size_t i, RowSink* sink) override { AppendOffCpu(at(i), sink); }

  void Finish(RowSink* sink, capture::Settings* settings) override {
    for (const OffCpuShortCount& c : tracer_->ShortCounts()) AppendOffCpuShort(c, sink);
    OffCpuLoss loss = tracer_->Loss();
    if (loss.intervals > 0) {
      sink->CountProblem("off-CPU intervals lost (BPF ring buffer full)",
                         std::to_string(loss.intervals) + " intervals, " +
                             std::to_string(loss.total_ns / 1000000) + " ms");
      settings->lost_records += loss.intervals;
    }
    if (loss.malformed > 0) {
      sink->CountProblem("malformed off-CPU events dropped",
                         std::to_string(loss.malformed) + " events");
    }
    if (loss.untracked > 0) {
      sink->CountProblem("off-CPU switch-outs not tracked (map of open intervals full)",
                         std::to_string(loss.untracked) + " times");
    }
    tracer_.reset();
  }

 private:
  uint64_t TimeOf(const OffCpuInterval& iv) const override { return iv.time_ns; }

  std::unique_ptr<OffCpuTracer> tracer_;
  std::vector<OffCpuInterval> fresh_;
};

capture::OffCpuState StateOf(uint8_t state) {
  // A switch's state is one of the first four; anything else is "other".
  return capture::OffCpuState(std::min<uint8_t>(state, uint8_t(capture::OffCpuState::kOther)));
}

}  // namespace

void AppendOffCpu(const OffCpuInterval& iv, RowSink* sink) {
  const uint64_t start = iv.start_ns != 0 ? iv.start_ns : sink->start_time();
  capture::ThreadId thread =
      sink->EventThread(iv.pid, iv.tid, std::max(start, iv.time_ns), iv.comm);
  capture::StackEnd stack_end;
  capture::StackId stack = sink->EventStack(iv.pid, iv.tid, iv.time_ns, iv.kernel_stack,
                                            iv.has_regs ? &iv.regs : nullptr, iv.user_stack,
                                            &stack_end, iv.runtime_walk);
  sink->Add(capture::OffCpu::Row{
      .start = start,
      .end = iv.end_ns,  // 0 (still off CPU): closed by the sink at the end
      .thread = thread,
      .stack = stack,
      .stack_end = stack_end,
      .state = StateOf(iv.state),
      .waker_tid = int32_t(iv.waker_tid),
      .waker_name = iv.waker_tid != 0 ? sink->Intern(iv.waker_comm) : capture::kNone,
      .flags = uint8_t(iv.flags & capture::kOffCpuFlagsMask),
  });
}

void AppendOffCpuShort(const OffCpuShortCount& count, RowSink* sink) {
  // Counts are read at the end: the thread may have exited by then. Its
  // latest row is the one they belong to.
  sink->Add(capture::OffCpuShort::Row{.thread = sink->LatestThread(count.pid, count.tid),
                                      .state = StateOf(count.state),
                                      .count = count.count,
                                      .total = count.total_ns});
}

Result<std::unique_ptr<EventSource>> StartOffCpuSource(const SourceContext& context) {
  const RecordOptions& options = context.options;
  OffCpuTracer::Options o;
  o.min_ns = options.off_cpu_min_ns;
  o.stack_copy = options.stack_copy;
  o.walk_frames = options.runtime_frames;
  o.shared_maps = context.shared_maps;
  int32_t pids[] = {context.target};
  ASSIGN_OR_RETURN(std::unique_ptr<OffCpuTracer> tracer, OffCpuTracer::Start(o, pids));
  capture::Settings* settings = context.settings;
  settings->SetSource(std::string(capture::kOffCpuSource), "on").values = {
      {"min_ns", options.off_cpu_min_ns}};
  if (!options.stacks) {
    settings->notes.push_back(
        "off-CPU: sched_switch intervals of the target's threads (BPF), totalled per thread "
        "and state without stacks (record --level 0)");
  } else {
    settings->notes.push_back(
        "off-CPU: sched_switch intervals of the target's threads (BPF); shorter than " +
        std::to_string(options.off_cpu_min_ns / 1000) +
        " us only counted; user stacks of blocked system calls taken at their exit, of "
        "preemptions at switch-in");
  }
  auto source = std::make_unique<OffCpuSource>(std::move(tracer));
  if (!context.launch) source->SeedBlockedThreads(context.target);
  return std::unique_ptr<EventSource>(std::move(source));
}

}  // namespace microscope::record
