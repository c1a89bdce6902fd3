// The user registers and stack bytes our unwinder needs, copied in the
// thread's own context (or from a stopped thread's saved registers), for the
// BPF programs that send stacks. Include after vmlinux.h and libbpf's headers.
#ifndef MICROSCOPE_BPF_USER_STACK_H
#define MICROSCOPE_BPF_USER_STACK_H

#include "stack_copy.h"

static __always_inline void read_user_regs(__u64 *out, struct pt_regs *r) {
  out[0] = BPF_CORE_READ(r, ax);
  out[1] = BPF_CORE_READ(r, bx);
  out[2] = BPF_CORE_READ(r, cx);
  out[3] = BPF_CORE_READ(r, dx);
  out[4] = BPF_CORE_READ(r, si);
  out[5] = BPF_CORE_READ(r, di);
  out[6] = BPF_CORE_READ(r, bp);
  out[7] = BPF_CORE_READ(r, sp);
  out[8] = BPF_CORE_READ(r, ip);
  out[9] = BPF_CORE_READ(r, r8);
  out[10] = BPF_CORE_READ(r, r9);
  out[11] = BPF_CORE_READ(r, r10);
  out[12] = BPF_CORE_READ(r, r11);
  out[13] = BPF_CORE_READ(r, r12);
  out[14] = BPF_CORE_READ(r, r13);
  out[15] = BPF_CORE_READ(r, r14);
  out[16] = BPF_CORE_READ(r, r15);
}

// Copies `size` bytes of user stack from `sp` in the current address space
// into `dst` (with MICROSCOPE_USTACK_ROOM bytes of room; at most a stack
// record's), or as far as the first page that cannot be read, as the
// kernel's own copy stops: the main thread's stack has pages never touched
// between its arguments' pointers and their strings (the kernel starts the
// stack up to 8 KiB below them, at random), so a copy to the mapping's end
// can fault where the unwinder needs nothing. Returns the bytes copied.
#define MICROSCOPE_PAGE 4096
static __always_inline __u32 copy_user_stack(__u8 *dst, __u64 sp, __u64 size) {
  if ((sp >> 47) != 0) return 0;  // not a user stack pointer
  if (size > MICROSCOPE_STACK_RECORD_BYTES) size = MICROSCOPE_STACK_RECORD_BYTES;
  size &= MICROSCOPE_USTACK_ROOM - 8;
  if (size == 0) return 0;
  if (bpf_probe_read_user(dst, size, (const void *)sp) == 0) return (__u32)size;
  __u64 done = 0;
  for (int i = 0; i < MICROSCOPE_USTACK_ROOM / MICROSCOPE_PAGE + 1; ++i) {
    __u64 chunk = MICROSCOPE_PAGE - ((sp + done) & (MICROSCOPE_PAGE - 1));
    if (chunk > size - done) chunk = size - done;
    if (chunk == 0 || done > MICROSCOPE_USTACK_ROOM - MICROSCOPE_PAGE) break;
    if (bpf_probe_read_user(dst + done, chunk & (2 * MICROSCOPE_PAGE - 1),
                            (const void *)(sp + done)) != 0)
      break;
    done += chunk;
  }
  return (__u32)(done & ~7ull);
}

#endif
