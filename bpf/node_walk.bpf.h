// The V8 walk, run by the sampler's program (bpf/sampler.bpf.c) at each
// sample of a process whose V8 the loader laid out (v8_processes): follows
// the frame-pointer chain from the sample's user rbp (V8's generated code
// and builtins keep frame pointers) and keeps each frame whose function
// slot holds a JSFunction, with the words user space needs to name it.
// Include once per BPF object, after vmlinux.h and the libbpf headers.
//
// Nothing read from the target is trusted here beyond bounds: a word that
// looks like a JSFunction is only a candidate, which user space proves.
#ifndef MICROSCOPE_BPF_NODE_WALK_H
#define MICROSCOPE_BPF_NODE_WALK_H

#include "node.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);  // tgid
  __type(value, struct v8_process);
} v8_processes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 64);
  __type(key, struct v8_image);
  __type(value, struct v8_process);
} v8_images SEC(".maps");

// At an exec of `p` (the new program's mm in place): lays the process out
// when it runs a V8 image the loader knows.
static __always_inline void v8_lay_out_exec(struct task_struct* p, __u32 tgid) {
  struct v8_image image = {};
  struct inode* inode = BPF_CORE_READ(p, mm, exe_file, f_inode);
  if (!inode) return;
  image.dev = BPF_CORE_READ(inode, i_sb, s_dev);
  image.ino = BPF_CORE_READ(inode, i_ino);
  struct v8_process* layout = bpf_map_lookup_elem(&v8_images, &image);
  if (layout) bpf_map_update_elem(&v8_processes, &tgid, layout, BPF_ANY);
}

static __always_inline int v8_word(__u64* out, __u64 address) {
  return bpf_probe_read_user(out, sizeof(*out), (const void*)address);
}

static __always_inline int v8_tagged(const struct v8_process* p, __u64 word) {
  return word != 0 && (word & p->tag_mask) == p->tag;
}

// The first words of the object `tagged` points at (words[6] and [7] stay
// 0), in one read; 0 when it is not a readable tagged pointer.
static __always_inline int v8_object(__u64* words, const struct v8_process* p, __u64 tagged) {
  return v8_tagged(p, tagged) && bpf_probe_read_user(words, MICROSCOPE_V8_OBJECT_WORDS * 8,
                                                     (const void*)(tagged - p->tag)) == 0;
}

// The instance type a map says; 0 when it is not a readable tagged pointer.
static __always_inline __u16 v8_map_type(const struct v8_process* p, __u64 map) {
  __u16 type = 0;
  if (!v8_tagged(p, map) ||
      bpf_probe_read_user(&type, sizeof(type), (const void*)(map - p->tag + p->map_instance_type)))
    return 0;
  return type;
}

struct v8_step_ctx {
  const struct v8_process* p;
  struct v8_walk* w;
  __u64 fp;
};

static long v8_step(__u64 index, void* data) {
  struct v8_step_ctx* c = data;
  const struct v8_process* p = c->p;
  struct v8_walk* w = c->w;
  __u64 fp = c->fp, next, function = 0, context = 0;
  if (fp == 0 || (fp & 7) != 0 || (fp >> 47) != 0) return 1;  // the chain's end
  // The frame's slots and the caller's frame pointer in one read.
  __u64 words[MICROSCOPE_V8_FRAME_WORDS];
  const int whole = bpf_probe_read_user(words, sizeof(words), (const void*)(fp - 56)) == 0;
  if (whole) {
    next = words[7];
    context = words[p->slot_context & 7];
    function = words[p->slot_function & 7];
  } else if (v8_word(&next, fp) != 0) {  // the slots below unreadable: the chain goes on
    w->status = MICROSCOPE_V8_UNREADABLE;
    return 1;
  }
  // A frame whose context slot holds a Smi is a typed frame (entry, exit,
  // internal, stub): not a JavaScript function's, whatever its other slots.
  __u64 fn[8] = {}, sfi[8] = {};
  __u16 type;
  if (whole && v8_tagged(p, context) && v8_object(fn, p, function) &&
      (type = v8_map_type(p, fn[p->word_map & 7])) >= p->type_function_first &&
      type <= p->type_function_last) {
    __u32 n = w->nframes;
    if (n >= MICROSCOPE_V8_MAX_FRAMES) {
      w->status = MICROSCOPE_V8_TRUNCATED;
      return 1;
    }
    // And its shared information's map says SharedFunctionInfo: a word that
    // only looked like a function (or one the GC is moving) is no frame.
    const __u64 shared = fn[p->word_shared & 7];
    if (v8_object(sfi, p, shared) && v8_map_type(p, sfi[p->word_map & 7]) == p->type_shared) {
      struct v8_frame* f = &w->frames[n];
      f->fp = fp;
      f->function = function;
      f->shared = shared;
      f->name = sfi[p->word_name & 7];
      f->script = sfi[p->word_script & 7];
      f->bytecode_array = words[p->slot_bytecode_array & 7];
      f->bytecode_offset = words[p->slot_bytecode_offset & 7];
      w->nframes = n + 1;
    }
  }
  // Callers' frames lie above their callees'.
  if (next <= fp) return 1;
  c->fp = next;
  if (index + 1 == MICROSCOPE_V8_MAX_STEPS) w->status = MICROSCOPE_V8_TRUNCATED;
  return 0;
}

// Walks the current thread of process `pid` into `w`; 0 when the process
// is not laid out or no JavaScript frame was found (nothing to send).
static __always_inline int v8_walk_thread(struct v8_walk* w, struct bpf_perf_event_data* ctx,
                                          __u32 pid, __u32 tid) {
  const struct v8_process* p = bpf_map_lookup_elem(&v8_processes, &pid);
  if (!p) return 0;
  __u64 fp, sp;
  if ((ctx->regs.ip >> 47) == 0) {  // the sample interrupted user code
    fp = ctx->regs.bp;
    sp = ctx->regs.sp;
  } else {  // in the kernel: the user registers it saved on entry
    struct pt_regs* user = (struct pt_regs*)bpf_task_pt_regs(bpf_get_current_task_btf());
    fp = BPF_CORE_READ(user, bp);
    sp = BPF_CORE_READ(user, sp);
  }
  w->magic = MICROSCOPE_V8_MAGIC;
  w->pid = pid;
  w->tid = tid;
  w->status = MICROSCOPE_V8_WALKED;
  w->nframes = 0;
  w->sp = sp;
  w->isolate = 0;
  if (p->isolate_tls != 0) {
    const __u64 fsbase = BPF_CORE_READ(bpf_get_current_task_btf(), thread.fsbase);
    if (fsbase != 0) v8_word(&w->isolate, fsbase + p->isolate_tls);
  }
  struct v8_step_ctx c = {p, w, fp};
  bpf_loop(MICROSCOPE_V8_MAX_STEPS, v8_step, &c, 0);
  return w->nframes > 0;
}

#endif
