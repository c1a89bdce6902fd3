// The stand-in runtime's BPF walk (tests/runtimes/toy): the four hooks of
// bpf/runtimes.bpf.h over its one map. A thread of a process laid out in
// toy_processes gets a walk of its toy_vm's names (outermost first).
#ifndef MICROSCOPE_TOY_WALK_H
#define MICROSCOPE_TOY_WALK_H

#include "bpf/walk_thread.h"
#include "toy.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);  // tgid
  __type(value, struct toy_process);
} toy_processes SEC(".maps");

static __always_inline int toy_walk_thread(struct runtime_walk* w, const struct walk_thread* t) {
  __u32 pid = t->pid;
  struct toy_process* p = bpf_map_lookup_elem(&toy_processes, &pid);
  if (!p) return 0;
  walk_begin(&w->h, MICROSCOPE_RUNTIME_TOY, t, TOY_WALKED, sizeof(struct toy_frame));
  __u32 head[2];
  if (bpf_probe_read_user(head, sizeof(head), (const void*)p->vm) != 0 || head[0] != TOY_MAGIC ||
      bpf_probe_read_user(w->frames, TOY_MAX_FRAMES * sizeof(struct toy_frame),
                          (const void*)(p->vm + 8)) != 0) {
    w->h.status = TOY_UNREADABLE;
    return 1;
  }
  __u32 depth = head[1];
  if (depth > TOY_MAX_FRAMES) {
    depth = TOY_MAX_FRAMES;
    w->h.status = TOY_TOO_DEEP;
  }
  w->h.nframes = depth;
  return 1;
}

static __always_inline int toy_exec(struct task_struct* p, __u32 tgid, __u32 tid) {
  bpf_map_delete_elem(&toy_processes, &tgid);
  return 0;
}

static __always_inline void toy_exit(__u32 tgid, __u32 tid, bool group_dead) {
  if (group_dead) bpf_map_delete_elem(&toy_processes, &tgid);
}

static __always_inline void toy_fork(__u32 parent, __u32 child) {
  struct toy_process* p = bpf_map_lookup_elem(&toy_processes, &parent);
  if (p) bpf_map_update_elem(&toy_processes, &child, p, BPF_ANY);
}

#endif
