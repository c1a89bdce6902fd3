/* The user registers and stack bytes BPF programs copy for our unwinder,
 * shared by the event headers (offcpu.h, syscalls.h), the BPF side
 * (user_stack.bpf.h) and the loaders. Plain C. */
#ifndef MICROSCOPE_BPF_STACK_COPY_H
#define MICROSCOPE_BPF_STACK_COPY_H

#define MICROSCOPE_USER_REGS 17          /* perf order: AX BX CX DX SI DI BP SP IP R8..R15 */
#define MICROSCOPE_USTACK_ROOM 65536     /* bytes an event's stack buffer holds */
#define MICROSCOPE_USTACK_COPY_MAX 65528 /* at most this many are copied (perf's limit) */

#endif
