// System calls of the followed processes: raw_syscalls sys_enter/sys_exit
// (tp_btf), one ring buffer event per finished call. Processes are followed
// by tgid, set by the loader; children of followed processes are added at
// fork, before they can make a call.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "syscalls.h"

char LICENSE[] SEC("license") = "GPL";

#include "runtimes.bpf.h"
#include "stack_extent.bpf.h"
#include "targets.bpf.h"
#include "user_stack.bpf.h"

// Calls at least this long also send the caller's user stack (0: none).
const volatile __u64 stack_min_ns = 0;
const volatile __u32 ustack_size = 16384;
// As offcpu.bpf.c's: copies sized as the samples' are when set.
const volatile __u8 sized_by_walks = 0;

// A slow call's event is built here, one per CPU (too big for a per-CPU
// array's values); programs here run with migration off.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);  // set to the number of CPUs by the loader
  __type(key, __u32);
  __type(value, struct syscall_stack_event);
} scratch SEC(".maps");

struct start {
  __u64 start_ns;
  __u64 args[MICROSCOPE_SYSCALL_ARGS];
  __u32 nr;
  __u32 reserved;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32);  // tid
  __type(value, struct start);
} starts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 24);  // 16 MiB: about 0.1 s of calls at 2 million a second
} events SEC(".maps");

// Calls whose event did not fit in the ring.
#include "lost_count.bpf.h"

// exit and exit_group never return: their entries go with the thread.
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_thread_exit, struct task_struct* p, bool group_dead) {
  __u32 tid = BPF_CORE_READ(p, pid);
  bpf_map_delete_elem(&starts, &tid);
  forget_if_group_dead(p, group_dead);
  return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_enter, struct pt_regs* regs, long id) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32;
  __u32 tid = (__u32)pid_tgid;
  if (!followed_tgid(tgid)) return 0;
  struct start s = {};
  s.start_ns = bpf_ktime_get_ns();
  s.nr = (__u32)id;
  // x86-64 system call arguments: rdi, rsi, rdx.
  s.args[0] = BPF_CORE_READ(regs, di);
  s.args[1] = BPF_CORE_READ(regs, si);
  s.args[2] = BPF_CORE_READ(regs, dx);
  bpf_map_update_elem(&starts, &tid, &s, BPF_ANY);
  return 0;
}

static __always_inline void fill_call(struct syscall_event* e, struct start* s, long ret,
                                      __u64 pid_tgid, __u64 duration) {
  e->start_ns = s->start_ns;
  e->duration_ns = duration;
  e->ret = ret;
  e->args[0] = s->args[0];
  e->args[1] = s->args[1];
  e->args[2] = s->args[2];
  e->pid = pid_tgid >> 32;
  e->tid = (__u32)pid_tgid;
  e->nr = s->nr;
  e->reserved = 0;
  bpf_get_current_comm(e->comm, sizeof(e->comm));
}

// Waking the reader for each call would cost a context switch per call: it
// is woken once a batch has gathered (and polls on a timer anyway).
static __always_inline __u64 wakeup_flags(void) {
  return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= (256 << 10) ? BPF_RB_FORCE_WAKEUP
                                                                      : BPF_RB_NO_WAKEUP;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_exit, struct pt_regs* regs, long ret) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tid = (__u32)pid_tgid;
  struct start* s = bpf_map_lookup_elem(&starts, &tid);
  if (!s) return 0;
  __u64 duration = bpf_ktime_get_ns() - s->start_ns;
  if (stack_min_ns != 0 && duration >= stack_min_ns) {
    // A slow call: with the caller's user registers (as the call left
    // them) and stack, for the unwinder.
    __u32 cpu = bpf_get_smp_processor_id();
    struct syscall_stack_event* e = bpf_map_lookup_elem(&scratch, &cpu);
    if (e) {
      fill_call(&e->call, s, ret, pid_tgid, duration);
      read_user_regs(e->regs, regs);
      // The interpreted code that made the call, then the stack after it.
      struct task_struct* task = bpf_get_current_task_btf();
      struct walk_thread t = {.task = task,
                              .fp = e->regs[6],
                              .sp = e->regs[7],
                              .pid = pid_tgid >> 32,
                              .tid = tid,
                              .blocked = 1};
      e->walk_size = walk_runtimes_into(e->tail, &t);
      const __u32 walk = e->walk_size & MICROSCOPE_EVENT_PART_MASK;
      const __u64 size = traced_copy_size(sized_by_walks, task, &tid, e->regs[7], ustack_size);
      e->ustack_size = copy_user_stack(e->tail + walk, e->regs[7], size);
      __u64 bytes = MICROSCOPE_SYSCALL_STACK_FIXED_SIZE + walk +
                    (e->ustack_size & MICROSCOPE_EVENT_PART_MASK);
      if (bpf_ringbuf_output(&events, e, bytes, wakeup_flags()) != 0) count_lost();
      bpf_map_delete_elem(&starts, &tid);
      return 0;
    }
  }
  struct syscall_event* e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_lost();
    bpf_map_delete_elem(&starts, &tid);
    return 0;
  }
  fill_call(e, s, ret, pid_tgid, duration);
  bpf_ringbuf_submit(e, wakeup_flags());
  bpf_map_delete_elem(&starts, &tid);
  return 0;
}
