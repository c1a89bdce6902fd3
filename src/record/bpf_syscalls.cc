#include "src/record/bpf_syscalls.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "bpf/syscalls.h"
#include "bpf/syscalls.skel.h"
#include "src/record/bpf_loader.h"

namespace microscope::record {

static_assert(sizeof(syscall_event) == 80, "bpf/syscalls.h layout");

struct SyscallTracer::State {
  syscalls_bpf* skel = nullptr;
  ring_buffer* ring = nullptr;
  std::vector<SyscallEvent>* sink = nullptr;
  ~State() {
    if (ring != nullptr) ring_buffer__free(ring);
    if (skel != nullptr) syscalls_bpf__destroy(skel);
  }
};

namespace {

int OnSyscallEvent(void* ctx, void* data, size_t size) {
  auto* state = static_cast<SyscallTracer::State*>(ctx);
  if (size < sizeof(syscall_event) || state->sink == nullptr) return 0;
  syscall_event e;
  std::memcpy(&e, data, sizeof(e));
  SyscallEvent out;
  out.start_ns = e.start_ns;
  out.duration_ns = e.duration_ns;
  out.ret = e.ret;
  for (int i = 0; i < 3; ++i) out.args[i] = e.args[i];
  out.pid = e.pid;
  out.tid = e.tid;
  out.nr = e.nr;
  out.comm.assign(e.comm, strnlen(e.comm, sizeof(e.comm)));
  if (size >= MICROSCOPE_SYSCALL_STACK_FIXED_SIZE) {
    const auto* with_stack = static_cast<const syscall_stack_event*>(data);
    Result<EventTail> tail =
        SplitEventTail(std::span(with_stack->tail, size - MICROSCOPE_SYSCALL_STACK_FIXED_SIZE),
                       with_stack->walk_size, with_stack->ustack_size);
    if (tail.ok()) {  // otherwise the call goes without its stack
      out.has_stack = true;
      std::memcpy(out.regs, with_stack->regs, sizeof(out.regs));
      out.user_stack.assign(tail->user_stack.begin(), tail->user_stack.end());
      out.runtime_walk.assign(tail->walk.begin(), tail->walk.end());
    }
  }
  state->sink->push_back(std::move(out));
  return 0;
}

}  // namespace

SyscallTracer::SyscallTracer(std::unique_ptr<State> state) : state_(std::move(state)) {}
SyscallTracer::~SyscallTracer() = default;

Result<std::unique_ptr<SyscallTracer>> SyscallTracer::Start(const Options& options,
                                                            std::span<const int32_t> pids) {
  auto state = std::make_unique<State>();
  state->skel = syscalls_bpf__open();
  if (state->skel == nullptr) return BpfFailed("cannot open the syscall BPF programs", errno);
  state->skel->rodata->stack_min_ns = options.stack_min_ns;
  state->skel->rodata->ustack_size =
      std::min<uint32_t>(options.stack_copy, MICROSCOPE_USTACK_COPY_MAX);
  state->skel->rodata->walk_max_frames = options.walk_frames;
  state->skel->rodata->sized_by_walks = SizedByWalks(options.shared_maps);
  RETURN_IF_ERROR(SizeScratchPerCpu(state->skel->maps.scratch));
  if (options.shared_maps != nullptr) RETURN_IF_ERROR(options.shared_maps->Reuse(state->skel->obj));
  if (int err = syscalls_bpf__load(state->skel); err != 0) {
    return BpfLoadError("the kernel refused the syscall BPF programs", err);
  }
  if (options.shared_maps != nullptr) RETURN_IF_ERROR(options.shared_maps->Adopt(state->skel->obj));
  std::unique_ptr<SyscallTracer> tracer(new SyscallTracer(std::move(state)));
  for (int32_t pid : pids) RETURN_IF_ERROR(tracer->Follow(pid));
  State& s = *tracer->state_;
  if (int err = syscalls_bpf__attach(s.skel); err != 0) {
    return BpfFailed("cannot attach the syscall BPF programs", err);
  }
  s.ring = ring_buffer__new(bpf_map__fd(s.skel->maps.events), OnSyscallEvent, &s, nullptr);
  if (s.ring == nullptr) return BpfFailed("cannot read the syscall ring buffer", errno);
  return tracer;
}

Status SyscallTracer::Follow(int32_t pid) {
  return FollowTgid(state_->skel->maps.targets, pid);
}

Status SyscallTracer::Poll(int timeout_ms, std::vector<SyscallEvent>* out) {
  state_->sink = out;
  Status read = ConsumeRing(state_->ring, timeout_ms, "reading the syscall ring buffer");
  state_->sink = nullptr;
  return read;
}

uint64_t SyscallTracer::lost() const {
  uint64_t total = 0;
  for (uint64_t v : ReadPerCpu<uint64_t>(state_->skel->maps.lost)) total += v;
  return total;
}

int SyscallTracer::wait_fd() const {
  return ring_buffer__epoll_fd(state_->ring);
}

}  // namespace microscope::record
