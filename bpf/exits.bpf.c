// Process exits of the followed processes: at sched_process_exit of a
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

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p, bool group_dead) {
  if (!group_dead) return 0;
  __u32 tgid = BPF_CORE_READ(p, tgid);
  if (!followed_tgid(tgid)) return 0;
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
