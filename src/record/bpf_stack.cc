#include "src/record/bpf_stack.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "bpf/stack.skel.h"
#include "bpf/stack_copy.h"
#include "src/record/bpf_loader.h"
#include "src/record/collector.h"

namespace microscope::record {

struct StackCopier::State {
  stack_bpf* skel = nullptr;
  ~State() {
    if (skel != nullptr) stack_bpf__destroy(skel);
  }
};

Result<std::unique_ptr<StackCopier>> StackCopier::Load(uint32_t default_bytes) {
  auto state = std::make_unique<State>();
  state->skel = stack_bpf__open();
  if (state->skel == nullptr) return BpfFailed("cannot open the stack copier BPF program", errno);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return BpfFailed("cannot count the CPUs", cpus);
  bpf_map__set_max_entries(state->skel->maps.stack_out, uint32_t(cpus));
  RETURN_IF_ERROR(SizeScratchPerCpu(state->skel->maps.stack_scratch));
  state->skel->rodata->stack_default = default_bytes;
  if (int err = stack_bpf__load(state->skel); err != 0) {
    return BpfLoadError("the stack copier BPF program", err);
  }
  return std::unique_ptr<StackCopier>(new StackCopier(std::move(state)));
}

Status StackCopier::ShareExtents(SharedBpfMaps* maps) {
  constexpr std::string_view kExtents[] = {"stack_ends", "stack_vmas"};
  return maps->Share(state_->skel->obj, kExtents);
}

StackCopier::StackCopier(std::unique_ptr<State> state) : state_(std::move(state)) {}
StackCopier::~StackCopier() = default;

uint32_t StackCopier::MaxBytes() {
  return MICROSCOPE_STACK_RECORD_BYTES;
}

Status StackCopier::Attach(Collector* collector) {
  ASSIGN_OR_RETURN(auto outputs, collector->OpenOutputEvents());
  for (auto [cpu, fd] : outputs) {
    __u32 key = uint32_t(cpu), value = uint32_t(fd);
    if (bpf_map__update_elem(state_->skel->maps.stack_out, &key, sizeof(key), &value, sizeof(value),
                             BPF_ANY) != 0) {
      return BpfFailed("cannot give the stack copier its output events", errno);
    }
  }
  bpf_map* next = state_->skel->maps.stack_next;
  return collector->AttachGate(
      bpf_program__fd(state_->skel->progs.copy_stack_at_sample), [next](int fd) {
        __u32 zero = 0, value = uint32_t(fd);
        if (bpf_map__update_elem(next, &zero, sizeof(zero), &value, sizeof(value), BPF_ANY) != 0) {
          return BpfFailed("cannot chain a program behind the stack copier", errno);
        }
        return OkStatus();
      });
}

Status StackCopier::Set(uint32_t tid, uint64_t end, uint32_t want) {
  __u32 key = tid;
  ustack_end value{};
  value.end = end;
  value.want = want;
  if (bpf_map__update_elem(state_->skel->maps.stack_ends, &key, sizeof(key), &value, sizeof(value),
                           BPF_ANY) != 0) {
    return BpfFailed("cannot tell the stack copier a thread's stack", errno);
  }
  return OkStatus();
}

void StackCopier::Learned(uint32_t tid, uint64_t end) {
  (void)Set(tid, end, 0);  // a map full of threads: the copy keeps the default
}

void StackCopier::Exhausted(uint32_t tid) {
  (void)Set(tid, 0, MICROSCOPE_STACK_RECORD_BYTES);
}

void StackCopier::Forgotten(uint32_t tid) {
  __u32 key = tid;
  bpf_map__delete_elem(state_->skel->maps.stack_ends, &key, sizeof(key), 0);
}

uint64_t StackCopier::Lost() const {
  uint64_t total = 0;
  for (uint64_t n : ReadPerCpu<uint64_t>(state_->skel->maps.lost)) total += n;
  return total;
}

}  // namespace microscope::record
