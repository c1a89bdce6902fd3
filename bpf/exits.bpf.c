// Process exits of the followed processes (and, with thread_times, each
// thread's scheduler totals as it leaves): at sched_process_exit of a
// process's last thread (group_dead), its exit code, which do_exit has set
// in task->exit_code before the tracepoint (kernel/exit.c). perf's EXIT
// record carries no status; this gives every process one, not only the
// launched program the recorder waits for.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "exits.h"

char LICENSE[] SEC("license") = "GPL";

#include "targets.bpf.h"

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 16);  // 64 KiB: thousands of exits between two reads
} events SEC(".maps");

// Exits whose event did not fit in the ring.
#include "lost_count.bpf.h"

// Set by the loader: every thread's scheduler totals at its exit too.
const volatile bool thread_times = false;

static __always_inline void thread_end(struct task_struct *p, __u32 tgid) {
  struct thread_end_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (e == 0) {
    count_lost();
    return;
  }
  e->time_ns = bpf_ktime_get_ns();
  e->start_ns = BPF_CORE_READ(p, start_time);
  e->on_cpu_ns = BPF_CORE_READ(p, se.sum_exec_runtime);
  e->run_delay_ns = BPF_CORE_READ(p, sched_info.run_delay);
  e->timeslices = BPF_CORE_READ(p, sched_info.pcount);
  e->voluntary = BPF_CORE_READ(p, nvcsw);
  e->pid = tgid;
  e->tid = BPF_CORE_READ(p, pid);
  bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p, bool group_dead) {
  __u32 tgid = BPF_CORE_READ(p, tgid);
  if (!followed_tgid(tgid)) return 0;
  if (thread_times) thread_end(p, tgid);
  if (!group_dead) return 0;
  struct exit_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (e == 0) {
    count_lost();
  } else {
    e->time_ns = bpf_ktime_get_ns();
    e->pid = tgid;
    e->exit_code = BPF_CORE_READ(p, exit_code);
    bpf_ringbuf_submit(e, 0);
  }
  forget_if_group_dead(p, group_dead);
  return 0;
}
