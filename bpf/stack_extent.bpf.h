// How many bytes of a thread's user stack to copy: as far as its walks
// have needed (stack_ends, which user space keeps from what the unwinder
// read, plus a margin), else all of the stack in use up to its mapping's
// end (stack_vmas), else a default. The stack copier (stack.bpf.c) and the
// off-CPU and system call tracers (offcpu.bpf.c, syscalls.bpf.c) each
// declare these maps; the recorder gives the later ones the copier's
// (bpf_loader.h's SharedBpfMaps), so their copies are sized as the samples'
// are.
#ifndef MICROSCOPE_BPF_STACK_EXTENT_BPF_H
#define MICROSCOPE_BPF_STACK_EXTENT_BPF_H

#include "stack_copy.h"

// What user space learned of each thread's stack.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32);  // tid
  __type(value, struct ustack_end);
} stack_ends SEC(".maps");

// Each thread's stack mapping, found by the stack copier (bpf_find_vma)
// once and again when the thread's stack pointer leaves it or its address
// space changes (an exec: a sample inside execve still has the old
// program's stack).
struct stack_vma {
  __u64 mm;
  __u64 start;
  __u64 end;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32);  // tid
  __type(value, struct stack_vma);
} stack_vmas SEC(".maps");

// The end of the mapping that holds `sp` as last found for thread `*tid`
// of address space `mm`; 0 when not known. (Keys by pointer: one in a map
// value takes no stack.)
static __always_inline __u64 known_stack_top(__u64 mm, const __u32* tid, __u64 sp) {
  struct stack_vma* known = bpf_map_lookup_elem(&stack_vmas, tid);
  if (known && known->mm == mm && known->start <= sp && sp < known->end) return known->end;
  return 0;
}

static long find_stack(struct task_struct* task, struct vm_area_struct* vma, void* data) {
  struct stack_vma* v = data;
  v->start = BPF_CORE_READ(vma, vm_start);
  v->end = BPF_CORE_READ(vma, vm_end);
  return 0;
}

// The end of the mapping that holds `sp` in `task`'s address space (which
// is loaded), found once per thread and kept; 0 when it cannot be found
// now (the copy then stops where a read would fault).
static __always_inline __u64 stack_top(struct task_struct* task, const __u32* tid, __u64 sp) {
  const __u64 mm = (__u64)task->mm;
  const __u64 known = known_stack_top(mm, tid, sp);
  if (known != 0) return known;
  struct stack_vma v = {.mm = mm, .start = 0, .end = 0};
  if (bpf_find_vma(task, sp, find_stack, &v, 0) != 0 || v.end <= sp) return 0;
  bpf_map_update_elem(&stack_vmas, tid, &v, BPF_ANY);
  return v.end;
}

// Bytes copied past the end a thread's walks read: a walk may read a
// little further than the last ones did.
#define MICROSCOPE_STACK_MARGIN 512

// Bytes to copy from `sp` of thread `*tid`, whose stack's mapping ends at
// `top` (0: not found): not learned yet, all of the stack in use up to that
// end (so a thread's first copies are whole too: an attach's first 80-110
// samples of a Node server ran out of a 16 KiB copy while its walks were
// learned), or `fallback` where the mapping is not known; learned, to the
// end its walks read plus the margin, or what user space wants after a
// walk ran out of bytes; never past the mapping.
static __always_inline __u64 stack_copy_size(__u64 top, const __u32* tid, __u64 sp,
                                             __u64 fallback) {
  __u64 size = top != 0 ? top - sp : fallback;
  struct ustack_end* learned = bpf_map_lookup_elem(&stack_ends, tid);
  if (learned && learned->end > sp) {
    size = learned->end - sp + MICROSCOPE_STACK_MARGIN;
  } else if (learned && learned->want != 0) {
    size = learned->want;
  }
  if (top != 0 && size > top - sp) size = top - sp;
  return size;
}

// A tracer's copy (off-CPU, system calls) of thread `*tid` of `task` (whose
// address space is loaded) from `sp`: sized as the samples' are when
// `sized` (the copier's maps are shared), else `fixed` bytes.
static __always_inline __u64 traced_copy_size(__u8 sized, struct task_struct* task,
                                              const __u32* tid, __u64 sp, __u64 fixed) {
  return sized ? stack_copy_size(stack_top(task, tid, sp), tid, sp, fixed) : fixed;
}

#endif
