#include "src/record/syscall_source.h"

#include <algorithm>
#include <string>
#include <vector>

#include "capture/row_order.h"
#include "src/record/bpf_syscalls.h"

namespace microscope::record {
namespace {

class SyscallSource final : public QueuedSource<SyscallEvent> {
 public:
  explicit SyscallSource(std::unique_ptr<SyscallTracer> tracer) : tracer_(std::move(tracer)) {}

  int wait_fd() const override { return tracer_->wait_fd(); }

  void Poll(const PollWindow& w, RowSink* sink) override {
    Status polled = tracer_->Poll(0, &fresh_);
    if (!polled.ok()) sink->CountProblem("system call events not read", polled.message());
    Take(&fresh_, [&](const SyscallEvent& e) {
      return !((w.launch && e.start_ns < w.start) || e.start_ns >= w.end);
    });
  }

  void Deliver(size_t i, RowSink* sink) override { AppendSyscall(at(i), sink); }

  void Finish(RowSink* sink, capture::Settings* settings) override {
    if (uint64_t lost = tracer_->lost(); lost > 0) {
      sink->CountProblem("system calls lost (BPF ring buffer full)",
                         std::to_string(lost) + " calls");
      settings->lost_records += lost;
    }
    tracer_.reset();
  }

 private:
  // A call's stack is taken at its exit.
  uint64_t TimeOf(const SyscallEvent& e) const override { return e.end_ns(); }

  std::unique_ptr<SyscallTracer> tracer_;
  std::vector<SyscallEvent> fresh_;
};

}  // namespace

void AppendSyscall(const SyscallEvent& call, RowSink* sink) {
  capture::ThreadId thread = sink->EventThread(call.pid, call.tid, call.start_ns, call.comm);
  capture::StackId stack = capture::kNone;
  if (call.has_stack) {
    stack = sink->EventStack(call.pid, call.tid, call.end_ns(), {}, &call.regs, call.user_stack,
                             nullptr, call.runtime_walk);
  }
  sink->Add(capture::Syscalls::Row{.time = call.start_ns,
                                   .duration = call.duration_ns,
                                   .thread = thread,
                                   .nr = call.nr,
                                   .ret = call.ret,
                                   .arg0 = call.args[0],
                                   .arg1 = call.args[1],
                                   .arg2 = call.args[2],
                                   .stack = stack});
}

Result<std::unique_ptr<EventSource>> StartSyscallSource(const SourceContext& context) {
  const RecordOptions& options = context.options;
  SyscallTracer::Options o;
  o.stack_min_ns = options.syscall_stack_min_ns;
  o.stack_copy = options.stack_copy;
  o.walk_frames = options.runtime_frames;
  o.shared_maps = context.shared_maps;
  int32_t pids[] = {context.target};
  ASSIGN_OR_RETURN(std::unique_ptr<SyscallTracer> tracer, SyscallTracer::Start(o, pids));
  capture::Settings* settings = context.settings;
  settings->SetSource(std::string(capture::kSyscallSource), "on").values = {
      {"stack_min_ns", options.syscall_stack_min_ns}};
  std::string note = "system calls: raw_syscalls enter/exit of the target's threads (BPF)";
  if (options.syscall_stack_min_ns != 0) {
    note += "; calls of at least " + std::to_string(options.syscall_stack_min_ns / 1000) +
            " us carry the caller's user stack";
  }
  settings->notes.push_back(note);
  return std::unique_ptr<EventSource>(std::make_unique<SyscallSource>(std::move(tracer)));
}

}  // namespace microscope::record
