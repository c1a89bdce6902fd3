/* Off-CPU events, shared by bpf/offcpu.bpf.c and its loader
 * (src/record/bpf_offcpu.cc). Plain fixed-width C: both compilers must lay
 * it out alike. */
#ifndef MICROSCOPE_BPF_OFFCPU_H
#define MICROSCOPE_BPF_OFFCPU_H

#include "walk.h"
#include "stack_copy.h"

#define MICROSCOPE_KSTACK_MAX 127   /* kernel frames (perf_event_max_stack's default) */

/* Off-CPU states (capture OffCpuState). */
#define MICROSCOPE_STATE_SLEEPING 0
#define MICROSCOPE_STATE_UNINTERRUPTIBLE 1
#define MICROSCOPE_STATE_PREEMPTED 2
#define MICROSCOPE_STATE_OTHER 3

/* offcpu_event.flags (capture kOffCpu* bits). */
#define MICROSCOPE_OFFCPU_CUT_AT_START 1
#define MICROSCOPE_OFFCPU_SWITCH_IN_UNSEEN 2 /* capture kOffCpuCutAtEnd: the end is a bound */
#define MICROSCOPE_OFFCPU_NO_USER_STACK 4
#define MICROSCOPE_OFFCPU_EARLY_WAKER 0x80 /* in offcpu_start only: waker seen before switch-out */

/* One interval off CPU of a followed thread, at least min_ns long. The
 * tail follows the fixed part (stack_copy.h): the thread's interpreted
 * frames where its user stack was taken, by the runtime its process was
 * laid out for (walk_size bytes), then ustack_size bytes of user stack from
 * regs[7] (SP). */
struct offcpu_event {
  __u64 start_ns; /* switch-out (bpf_ktime_get_ns: CLOCK_MONOTONIC); 0 with CUT_AT_START */
  __u64 end_ns;   /* switch-in */
  __u64 time_ns;  /* when the stacks were taken */
  __u64 regs[MICROSCOPE_USER_REGS];
  __u32 pid;
  __u32 tid;
  __u32 waker_tid; /* 0: no wakeup seen */
  __u32 waker_pid;
  __u32 kstack_size; /* bytes of kstack used */
  __u32 ustack_size; /* bytes of user stack in the tail, after the walk */
  __u32 walk_size;   /* bytes of runtime walk at the tail's start */
  __u8 state;
  __u8 flags;
  __u8 has_regs;
  __u8 reserved;
  char comm[16];
  char waker_comm[16];
  __u64 kstack[MICROSCOPE_KSTACK_MAX];
  __u8 tail[MICROSCOPE_EVENT_TAIL];
};

#define MICROSCOPE_OFFCPU_FIXED_SIZE (sizeof(struct offcpu_event) - MICROSCOPE_EVENT_TAIL)

/* A thread still off CPU (or switched in, its interval not yet sent), as the
 * loader finds it in the map at the end. */
struct offcpu_start {
  __u64 start_ns;
  __u64 end_ns; /* 0: still off CPU */
  __u64 regs[MICROSCOPE_USER_REGS]; /* the user registers at switch-in */
  __u64 waker_ns;   /* when the waker was seen (an early one may precede the switch-out) */
  /* At switch-out: the thread's CPU time (se.sum_exec_runtime) and its user
   * SP and IP (its kernel entry's), to close an interval whose switch-in was
   * not traced. */
  __u64 out_runtime;
  __u64 out_sp;
  __u64 out_ip;
  __u32 kstack_size; /* bytes of kstack: the kernel stack at switch-in */
  __u32 has_regs;
  __u64 kstack[MICROSCOPE_KSTACK_MAX];
  __u32 pid;
  __u32 waker_tid;
  __u32 waker_pid;
  __u8 state;
  __u8 flags;
  __u8 reserved[2];
  char waker_comm[16];
};

/* Counted per thread and state: intervals shorter than min_ns. */
struct offcpu_short_key {
  __u32 tid;
  __u32 state;
};
struct offcpu_short {
  __u64 count;
  __u64 total_ns;
  __u32 pid;
  __u32 reserved;
};

/* Per CPU: intervals whose event found the ring full (count, ns). */
struct offcpu_lost {
  __u64 count;
  __u64 total_ns;
  __u64 untracked; /* switch-outs not tracked: the map of open intervals was full */
};

#endif
