/* System call events, shared by bpf/syscalls.bpf.c and its loader
 * (src/record/bpf_syscalls.cc). Plain fixed-width C: both compilers must lay
 * it out alike. */
#ifndef MICROSCOPE_BPF_SYSCALLS_H
#define MICROSCOPE_BPF_SYSCALLS_H

#include "walk.h"
#include "stack_copy.h"

#define MICROSCOPE_SYSCALL_ARGS 3

/* One finished system call of a followed thread. */
struct syscall_event {
  __u64 start_ns; /* bpf_ktime_get_ns (CLOCK_MONOTONIC) at entry */
  __u64 duration_ns;
  __s64 ret; /* the return value: -errno on failure */
  __u64 args[MICROSCOPE_SYSCALL_ARGS];
  __u32 pid; /* process (tgid) */
  __u32 tid;
  __u32 nr; /* x86-64 system call number */
  __u32 reserved;
  char comm[16]; /* the thread's name at exit of the call */
};

/* A slow call (at least stack_min_ns long): the call, then the caller's
 * user registers at the call's exit, and the tail (stack_copy.h): the
 * caller's interpreted frames (walk_size bytes) and ustack_size bytes of
 * its stack. */
struct syscall_stack_event {
  struct syscall_event call;
  __u64 regs[MICROSCOPE_USER_REGS];
  __u32 ustack_size;
  __u32 walk_size;
  __u8 tail[MICROSCOPE_EVENT_TAIL];
};

#define MICROSCOPE_SYSCALL_STACK_FIXED_SIZE \
  (sizeof(struct syscall_stack_event) - MICROSCOPE_EVENT_TAIL)

#endif
