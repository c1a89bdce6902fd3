// The thread a runtime's BPF walker walks (bpf/runtimes.bpf.h): the
// current one, or one that shares the loaded address space (a preempted
// thread seen at the switch).
#ifndef MICROSCOPE_BPF_WALK_THREAD_H
#define MICROSCOPE_BPF_WALK_THREAD_H

struct walk_thread {
  struct task_struct* task;
  __u64 fp; /* its user frame and stack pointers (rbp, rsp) */
  __u64 sp;
  __u32 pid;
  __u32 tid;
  /* Blocked in the kernel (off CPU, in a system call): its rbp is that of
   * the C library's wrapper, which need not keep a frame pointer, so a
   * walker that follows frame pointers looks for the chain in the stack. */
  __u8 blocked;
};

#endif
