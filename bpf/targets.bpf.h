// The followed processes, shared by the BPF programs: a hash of tgids the
// loader fills, and a sched_process_fork program that adds each child of a
// followed process before it can run. Include once per BPF object, after
// vmlinux.h and the libbpf headers.
#ifndef MICROSCOPE_BPF_TARGETS_H
#define MICROSCOPE_BPF_TARGETS_H

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);  // tgid
  __type(value, __u8);
} targets SEC(".maps");

static __always_inline int followed_tgid(__u32 tgid) {
  return bpf_map_lookup_elem(&targets, &tgid) != 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child) {
  if (!followed_tgid(BPF_CORE_READ(parent, tgid))) return 0;
  __u32 child_tgid = BPF_CORE_READ(child, tgid);
  __u8 one = 1;
  bpf_map_update_elem(&targets, &child_tgid, &one, BPF_ANY);
  return 0;
}

// At a thread's exit (sched_process_exit): once its whole process is gone,
// the process is no longer followed (its tgid may be reused).
static __always_inline void forget_if_group_dead(struct task_struct *p, bool group_dead) {
  if (!group_dead) return;
  __u32 tgid = BPF_CORE_READ(p, tgid);
  bpf_map_delete_elem(&targets, &tgid);
}

#endif
