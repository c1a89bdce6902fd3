// The user stack copier: the program on the sampling events when the
// recorder copies stacks itself (PERF_EVENT_IOC_SET_BPF; threads that
// inherit the events run it too), instead of the kernel's fixed
// sample_stack_user. It copies from the sampled thread's user stack pointer
// only as far as that thread's walks have needed (stack_ends, which user
// space keeps from the unwinder's reads, plus a margin), up to the end of
// the stack's mapping, and writes the copy into the sample's own ring just
// before the sample (user space pairs the two in ring order). Then the next
// program (the runtimes' walker) runs through a tail call.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "stack_copy.h"
#include "stack_extent.bpf.h"
#include "user_stack.bpf.h"

char LICENSE[] SEC("license") = "GPL";

// Bytes copied for a thread whose stack's end is not learned yet when its
// stack's mapping cannot be found (set by the loader: --stack-copy); past
// the learned end, MICROSCOPE_STACK_MARGIN (stack_extent.bpf.h).
const volatile __u32 stack_default = 16384;

// The BPF output event of each CPU, whose records go to that CPU's sample ring.
struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
} stack_out SEC(".maps");

// One copy under construction per CPU (larger than a per-CPU array's
// values may be).
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);  // set to the number of CPUs by the loader
  __type(key, __u32);
  __type(value, struct ustack_record);
} stack_scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} stack_next SEC(".maps");

// Copies that did not fit in their ring, per CPU.
#include "lost_count.bpf.h"

SEC("perf_event")
int copy_stack_at_sample(struct bpf_perf_event_data* ctx) {
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct task_struct* task = bpf_get_current_task_btf();
  __u32 zero = 0, cpu = bpf_get_smp_processor_id();
  struct ustack_record* r = bpf_map_lookup_elem(&stack_scratch, &cpu);
  if (!r || !task->mm || tid == 0) goto next;  // a kernel thread has no user stack
  __u64 sp;
  if ((ctx->regs.ip >> 47) == 0) {  // the sample interrupted user code
    sp = ctx->regs.sp;
  } else {  // in the kernel: the user registers it saved on entry
    struct pt_regs* user = (struct pt_regs*)bpf_task_pt_regs(task);
    sp = BPF_CORE_READ(user, sp);
  }
  if (sp == 0 || (sp >> 47) != 0) goto next;
  const __u64 size = stack_copy_size(stack_top(task, &tid, sp), &tid, sp, stack_default);
  r->h.magic = MICROSCOPE_STACK_MAGIC;
  r->h.tid = tid;
  r->h.sp = sp;
  r->h.reserved = 0;
  r->h.size = copy_user_stack(r->bytes, sp, size);
  __u64 out = sizeof(r->h) + (r->h.size & (MICROSCOPE_USTACK_ROOM - 1));
  if (out > sizeof(*r)) out = sizeof(*r);
  if (bpf_perf_event_output(ctx, &stack_out, BPF_F_CURRENT_CPU, r, out) != 0) count_lost();
next:
  bpf_tail_call(ctx, &stack_next, 0);
  return 1;
}
