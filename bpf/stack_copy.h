/* The user registers and stack bytes BPF programs copy for our unwinder,
 * shared by the event headers (offcpu.h, syscalls.h), the BPF side
 * (user_stack.bpf.h) and the loaders. Plain C. */
#ifndef MICROSCOPE_BPF_STACK_COPY_H
#define MICROSCOPE_BPF_STACK_COPY_H

#ifndef __VMLINUX_H__ /* user space: the BPF side has the kernel's types */
#include <linux/types.h>
#endif

#define MICROSCOPE_USER_REGS 17          /* perf order: AX BX CX DX SI DI BP SP IP R8..R15 */
#define MICROSCOPE_USTACK_ROOM 65536     /* bytes an event's stack buffer holds */
#define MICROSCOPE_USTACK_COPY_MAX 65528 /* at most this many are copied (perf's limit) */

/* An event's variable tail (offcpu.h, syscalls.h): the thread's runtime walk
 * (bpf/walk.h, walk_size bytes, 0: none), then its user stack (ustack_size
 * bytes). Each part is under 64 KiB, so the room is twice that: the
 * verifier sees the stack's offset and size bounded by the 16-bit mask. */
#define MICROSCOPE_EVENT_PART_MASK 0xffff
#define MICROSCOPE_EVENT_TAIL (2 * MICROSCOPE_USTACK_ROOM)

/* A sample's user stack as the copier program (stack.bpf.c) wrote it into
 * the sample's ring, just before the sample: the thread, the stack pointer
 * it copied from and `size` bytes. Its perf record (header, identifier,
 * tid, time, cpu, raw size: 44 bytes) has a 16-bit size, so a record holds
 * at most MICROSCOPE_STACK_RECORD_BYTES of stack. */
#define MICROSCOPE_STACK_MAGIC 0x6b617473u /* "stak" */
#define MICROSCOPE_STACK_RECORD_BYTES 65456
struct ustack_record_header {
  __u32 magic;
  __u32 tid;
  __u64 sp;
  __u32 size;
  __u32 reserved;
};
struct ustack_record {
  struct ustack_record_header h;
  __u8 bytes[MICROSCOPE_USTACK_ROOM];
};
/* What the recorder learned of a thread's stack (stack_ends, written by
 * user space): the end of what its walks read (0: not known) and how many
 * bytes to copy while it is not known (0: the loader's default). */
struct ustack_end {
  __u64 end;
  __u32 want;
  __u32 reserved;
};

#endif
