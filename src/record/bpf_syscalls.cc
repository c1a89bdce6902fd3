#include "src/record/bpf_syscalls.h"

#include <linux/types.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "bpf/syscalls.h"
#include "bpf/syscalls.skel.h"

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

int OnEvent(void* ctx, void* data, size_t size) {
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
    out.has_stack = true;
    std::memcpy(out.regs, with_stack->regs, sizeof(out.regs));
    size_t bytes =
        std::min<size_t>(with_stack->ustack_size, size - MICROSCOPE_SYSCALL_STACK_FIXED_SIZE);
    out.user_stack.assign(with_stack->ustack, with_stack->ustack + bytes);
  }
  state->sink->push_back(std::move(out));
  return 0;
}

Status Failed(const char* what, int err) {
  return Status::Error(std::string(what) + ": " + std::strerror(err < 0 ? -err : err));
}

}  // namespace

Status BpfLoadError(const char* what, int err) {
  Status failed = Failed(what, err);
  if (err == -EPERM || err == -EACCES) {
    return Status::Error(failed.message() + " (run as root, or grant CAP_BPF and CAP_PERFMON)");
  }
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    return Status::Error(failed.message() + " (this kernel has no BTF: /sys/kernel/btf/vmlinux)");
  }
  return failed;
}

SyscallTracer::SyscallTracer(std::unique_ptr<State> state) : state_(std::move(state)) {}
SyscallTracer::~SyscallTracer() = default;

Result<std::unique_ptr<SyscallTracer>> SyscallTracer::Start(const Options& options,
                                                            std::span<const int32_t> pids) {
  auto state = std::make_unique<State>();
  libbpf_set_print(nullptr);  // errors come back as statuses, not as log lines
  state->skel = syscalls_bpf__open();
  if (state->skel == nullptr) return Failed("cannot open the syscall BPF programs", errno);
  state->skel->rodata->stack_min_ns = options.stack_min_ns;
  state->skel->rodata->ustack_size = std::min<uint32_t>(options.stack_copy, 65528);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return Failed("cannot count the CPUs", cpus);
  bpf_map__set_max_entries(state->skel->maps.scratch, uint32_t(cpus));
  if (int err = syscalls_bpf__load(state->skel); err != 0) {
    return BpfLoadError("the kernel refused the syscall BPF programs", err);
  }
  std::unique_ptr<SyscallTracer> tracer(new SyscallTracer(std::move(state)));
  for (int32_t pid : pids) RETURN_IF_ERROR(tracer->Follow(pid));
  State& s = *tracer->state_;
  if (int err = syscalls_bpf__attach(s.skel); err != 0) {
    return Failed("cannot attach the syscall BPF programs", err);
  }
  s.ring = ring_buffer__new(bpf_map__fd(s.skel->maps.events), OnEvent, &s, nullptr);
  if (s.ring == nullptr) return Failed("cannot read the syscall ring buffer", errno);
  return tracer;
}

Status FollowTgid(bpf_map* targets, int32_t pid) {
  __u32 key = uint32_t(pid);
  __u8 one = 1;
  if (bpf_map__update_elem(targets, &key, sizeof(key), &one, sizeof(one), BPF_ANY) != 0) {
    return Failed("cannot follow the process", errno);
  }
  return OkStatus();
}

Status SyscallTracer::Follow(int32_t pid) {
  return FollowTgid(state_->skel->maps.targets, pid);
}

Status SyscallTracer::Poll(int timeout_ms, std::vector<SyscallEvent>* out) {
  state_->sink = out;
  int n = ring_buffer__poll(state_->ring, timeout_ms);
  // The program wakes us only once a batch has gathered: take what is
  // there whether or not a wakeup came.
  if (n >= 0 || n == -EINTR) n = ring_buffer__consume(state_->ring);
  state_->sink = nullptr;
  if (n < 0 && n != -EINTR) return Failed("reading the syscall ring buffer", n);
  return OkStatus();
}

uint64_t SyscallTracer::lost() const {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return 0;
  std::vector<uint64_t> values(size_t(cpus), 0);
  __u32 zero = 0;
  if (bpf_map__lookup_elem(state_->skel->maps.lost, &zero, sizeof(zero), values.data(),
                           values.size() * sizeof(uint64_t), 0) != 0) {
    return 0;
  }
  uint64_t total = 0;
  for (uint64_t v : values) total += v;
  return total;
}

int SyscallTracer::wait_fd() const {
  return ring_buffer__epoll_fd(state_->ring);
}

}  // namespace microscope::record
