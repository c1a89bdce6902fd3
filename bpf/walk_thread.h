// The thread a runtime's BPF walker walks (bpf/runtimes.bpf.h): the
// current one, or one that shares the loaded address space (a preempted
// thread seen at the switch); and the start every walker's record makes.
#ifndef MICROSCOPE_BPF_WALK_THREAD_H
#define MICROSCOPE_BPF_WALK_THREAD_H

#include "walk.h"

// The most frames a walk keeps (each runtime also stops at its room,
// bpf/walk.h); set by the loader. A walk with more ends truncated.
const volatile __u32 walk_max_frames = MICROSCOPE_WALK_FRAMES_DEFAULT;

struct walk_thread {
  struct task_struct* task;
  __u64 fp; /* its user frame and stack pointers (rbp, rsp) */
  __u64 sp;
  /* At a sample, its r9 and r12: where V8's interpreter keeps the running
   * bytecode handler's offset and bytecode array. 0 off CPU. */
  __u64 r9;
  __u64 r12;
  __u32 pid;
  __u32 tid;
  /* Blocked in the kernel (off CPU, in a system call): its rbp is that of
   * the C library's wrapper, which need not keep a frame pointer, so a
   * walker that follows frame pointers looks for the chain in the stack. */
  __u8 blocked;
};

/* Starts a walk record of `runtime` for thread `t`: no frames yet. */
static __always_inline void walk_begin(struct walk_header* h, __u8 runtime, const struct walk_thread* t,
                                       __u8 status, __u16 frame_size) {
  h->magic = MICROSCOPE_WALK_MAGIC;
  h->runtime = runtime;
  h->pid = t->pid;
  h->tid = t->tid;
  h->status = status;
  h->flags = 0;
  h->nframes = 0;
  h->frame_size = frame_size;
  const __u32 room = MICROSCOPE_WALK_ROOM / frame_size;
  h->bound = walk_max_frames < room ? walk_max_frames : room;
  h->context[0] = 0;
  h->context[1] = 0;
}

#endif
