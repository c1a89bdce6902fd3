/* The user registers and stack bytes BPF programs copy for our unwinder,
 * shared by the event headers (offcpu.h, syscalls.h), the BPF side
 * (user_stack.bpf.h) and the loaders. Plain C. */
#ifndef MICROSCOPE_BPF_STACK_COPY_H
#define MICROSCOPE_BPF_STACK_COPY_H

#define MICROSCOPE_USER_REGS 17          /* perf order: AX BX CX DX SI DI BP SP IP R8..R15 */
#define MICROSCOPE_USTACK_ROOM 65536     /* bytes an event's stack buffer holds */
#define MICROSCOPE_USTACK_COPY_MAX 65528 /* at most this many are copied (perf's limit) */

/* An event's variable tail (offcpu.h, syscalls.h): the thread's runtime walk
 * (bpf/walk.h, walk_size bytes, 0: none), then its user stack (ustack_size
 * bytes). Each part is under 64 KiB, so the room is twice that: the
 * verifier sees the stack's offset and size bounded by the 16-bit mask. */
#define MICROSCOPE_EVENT_PART_MASK 0xffff
#define MICROSCOPE_EVENT_TAIL (2 * MICROSCOPE_USTACK_ROOM)

#endif
