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

// Copies user stack from `sp` in the current address space into `dst` (with
// MICROSCOPE_USTACK_ROOM bytes of room): `want` bytes, or less when the stack's end
// is nearer (a read must not cross into unmapped memory, so halve until it
// fits). Returns the bytes copied.
static __always_inline __u32 copy_user_stack(__u8 *dst, __u64 sp, __u32 want) {
  if ((sp >> 47) != 0) return 0;  // not a user stack pointer
  __u32 size = want;
  for (int i = 0; i < 8 && size >= 256; ++i) {
    size &= MICROSCOPE_USTACK_ROOM - 1;  // the verifier's bound: the buffer's size
    if (bpf_probe_read_user(dst, size, (const void *)sp) == 0) return size;
    size /= 2;
  }
  return 0;
}

#endif
