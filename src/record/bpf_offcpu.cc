#include "src/record/bpf_offcpu.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "bpf/offcpu.h"
#include "bpf/offcpu.skel.h"
#include "src/record/bpf_loader.h"

namespace microscope::record {

struct OffCpuTracer::State {
  offcpu_bpf* skel = nullptr;
  ring_buffer* ring = nullptr;
  std::vector<OffCpuInterval>* sink = nullptr;
  uint64_t malformed = 0;
  ~State() {
    if (ring != nullptr) ring_buffer__free(ring);
    if (skel != nullptr) offcpu_bpf__destroy(skel);
  }
};

namespace {

std::string CommOf(const char* c) {
  return std::string(c, strnlen(c, 16));
}

int OnOffCpuEvent(void* ctx, void* data, size_t size) {
  auto* state = static_cast<OffCpuTracer::State*>(ctx);
  if (state->sink == nullptr) return 0;
  if (size < MICROSCOPE_OFFCPU_FIXED_SIZE) {
    ++state->malformed;
    return 0;
  }
  const auto* e = static_cast<const offcpu_event*>(data);
  OffCpuInterval out;
  out.start_ns = e->start_ns;
  out.end_ns = e->end_ns;
  out.time_ns = e->time_ns;
  out.pid = e->pid;
  out.tid = e->tid;
  out.waker_tid = e->waker_tid;
  out.waker_pid = e->waker_pid;
  out.state = e->state;
  out.flags = e->flags;
  out.has_regs = e->has_regs != 0;
  out.comm = CommOf(e->comm);
  out.waker_comm = CommOf(e->waker_comm);
  size_t frames = std::min<size_t>(e->kstack_size / 8, MICROSCOPE_KSTACK_MAX);
  out.kernel_stack.assign(e->kstack, e->kstack + frames);
  std::memcpy(out.regs, e->regs, sizeof(out.regs));
  Result<EventTail> tail = SplitEventTail(std::span(e->tail, size - MICROSCOPE_OFFCPU_FIXED_SIZE),
                                          e->walk_size, e->ustack_size);
  if (!tail.ok()) {
    ++state->malformed;
    return 0;
  }
  out.user_stack.assign(tail->user_stack.begin(), tail->user_stack.end());
  out.runtime_walk.assign(tail->walk.begin(), tail->walk.end());
  state->sink->push_back(std::move(out));
  return 0;
}

}  // namespace

int OffCpuStateOfLetter(char letter) {
  switch (letter) {
    case 'S':
      return MICROSCOPE_STATE_SLEEPING;
    case 'D':
      return MICROSCOPE_STATE_UNINTERRUPTIBLE;
    case 'T':
    case 't':
      return MICROSCOPE_STATE_OTHER;
    default:  // R running; Z, X gone (a zombie leader never runs again)
      return -1;
  }
}

OffCpuTracer::OffCpuTracer(std::unique_ptr<State> state) : state_(std::move(state)) {}
OffCpuTracer::~OffCpuTracer() = default;

Result<std::unique_ptr<OffCpuTracer>> OffCpuTracer::Start(const Options& options,
                                                          std::span<const int32_t> pids) {
  auto state = std::make_unique<State>();
  state->skel = offcpu_bpf__open();
  if (state->skel == nullptr) return BpfFailed("cannot open the off-CPU BPF programs", errno);
  state->skel->rodata->min_ns = options.min_ns;
  state->skel->rodata->ustack_size =
      std::min<uint32_t>(options.stack_copy, MICROSCOPE_USTACK_COPY_MAX);
  state->skel->rodata->walk_max_frames = options.walk_frames;
  state->skel->rodata->sized_by_walks = SizedByWalks(options.shared_maps);
  RETURN_IF_ERROR(SizeScratchPerCpu(state->skel->maps.scratch));
  if (options.shared_maps != nullptr) RETURN_IF_ERROR(options.shared_maps->Reuse(state->skel->obj));
  if (int err = offcpu_bpf__load(state->skel); err != 0) {
    return BpfLoadError("the kernel refused the off-CPU BPF programs", err);
  }
  if (options.shared_maps != nullptr) RETURN_IF_ERROR(options.shared_maps->Adopt(state->skel->obj));
  std::unique_ptr<OffCpuTracer> tracer(new OffCpuTracer(std::move(state)));
  for (int32_t pid : pids) RETURN_IF_ERROR(tracer->Follow(pid));
  State& s = *tracer->state_;
  if (int err = offcpu_bpf__attach(s.skel); err != 0) {
    return BpfFailed("cannot attach the off-CPU BPF programs", err);
  }
  s.ring = ring_buffer__new(bpf_map__fd(s.skel->maps.events), OnOffCpuEvent, &s, nullptr);
  if (s.ring == nullptr) return BpfFailed("cannot read the off-CPU ring buffer", errno);
  return tracer;
}

Status OffCpuTracer::Follow(int32_t pid) {
  return FollowTgid(state_->skel->maps.targets, pid);
}

Status OffCpuTracer::SeedOffCpu(int32_t pid, int32_t tid, uint8_t state) {
  __u32 key = uint32_t(tid);
  offcpu_start s{};
  s.start_ns = 0;
  s.pid = uint32_t(pid);
  s.state = state;
  s.flags = MICROSCOPE_OFFCPU_CUT_AT_START;
  // BPF_NOEXIST: a switch-out the program saw meanwhile knows better.
  if (bpf_map__update_elem(state_->skel->maps.starts, &key, sizeof(key), &s, sizeof(s),
                           BPF_NOEXIST) != 0 &&
      errno != EEXIST) {
    return BpfFailed("cannot seed an off-CPU thread", errno);
  }
  return OkStatus();
}

void OffCpuTracer::Unseed(int32_t tid) {
  __u32 key = uint32_t(tid);
  offcpu_start s;
  bpf_map* starts = state_->skel->maps.starts;
  if (bpf_map__lookup_elem(starts, &key, sizeof(key), &s, sizeof(s), 0) != 0) return;
  if (s.start_ns == 0 && s.end_ns == 0 && (s.flags & MICROSCOPE_OFFCPU_CUT_AT_START) != 0) {
    bpf_map__delete_elem(starts, &key, sizeof(key), 0);
  }
}

Status OffCpuTracer::Poll(int timeout_ms, std::vector<OffCpuInterval>* out) {
  state_->sink = out;
  Status read = ConsumeRing(state_->ring, timeout_ms, "reading the off-CPU ring buffer");
  state_->sink = nullptr;
  return read;
}

Status OffCpuTracer::Finish(std::vector<OffCpuInterval>* out) {
  offcpu_bpf__detach(state_->skel);
  RETURN_IF_ERROR(Poll(0, out));
  bpf_map* starts = state_->skel->maps.starts;
  __u32 key = 0, next = 0;
  const __u32* prev = nullptr;
  while (bpf_map__get_next_key(starts, prev, &next, sizeof(next)) == 0) {
    key = next;
    prev = &key;
    offcpu_start s;
    if (bpf_map__lookup_elem(starts, &key, sizeof(key), &s, sizeof(s), 0) != 0) continue;
    if (s.start_ns == 0 && (s.flags & MICROSCOPE_OFFCPU_CUT_AT_START) == 0) continue;  // closed
    OffCpuInterval iv;
    iv.start_ns = s.start_ns;
    iv.end_ns = s.end_ns;
    iv.time_ns = s.end_ns;
    iv.pid = s.pid;
    iv.tid = key;
    iv.waker_tid = s.waker_tid;
    iv.waker_pid = s.waker_pid;
    iv.waker_comm = CommOf(s.waker_comm);
    iv.state = s.state;
    iv.flags =
        uint8_t((s.flags & ~MICROSCOPE_OFFCPU_EARLY_WAKER) | MICROSCOPE_OFFCPU_NO_USER_STACK);
    if (s.end_ns != 0) {
      // Switched in, not yet sent: the stacks saved at switch-in, no user
      // stack bytes (the leaf frame only).
      size_t frames = std::min<size_t>(s.kstack_size / 8, MICROSCOPE_KSTACK_MAX);
      iv.kernel_stack.assign(s.kstack, s.kstack + frames);
      if (s.has_regs) {
        iv.has_regs = true;
        std::memcpy(iv.regs, s.regs, sizeof(iv.regs));
      }
    }
    out->push_back(std::move(iv));
  }
  return OkStatus();
}

std::vector<OffCpuShortCount> OffCpuTracer::ShortCounts() const {
  std::vector<OffCpuShortCount> out;
  bpf_map* shorts = state_->skel->maps.shorts;
  offcpu_short_key key{}, next{};
  const offcpu_short_key* prev = nullptr;
  while (bpf_map__get_next_key(shorts, prev, &next, sizeof(next)) == 0) {
    key = next;
    prev = &key;
    offcpu_short v;
    if (bpf_map__lookup_elem(shorts, &key, sizeof(key), &v, sizeof(v), 0) != 0) continue;
    out.push_back({v.pid, key.tid, uint8_t(key.state), v.count, v.total_ns});
  }
  return out;
}

OffCpuLoss OffCpuTracer::Loss() const {
  OffCpuLoss total;
  total.malformed = state_->malformed;
  for (const offcpu_lost& v : ReadPerCpu<offcpu_lost>(state_->skel->maps.lost)) {
    total.intervals += v.count;
    total.total_ns += v.total_ns;
    total.untracked += v.untracked;
  }
  return total;
}

int OffCpuTracer::wait_fd() const {
  return ring_buffer__epoll_fd(state_->ring);
}

}  // namespace microscope::record
