// The V8 walk, run (bpf/runtimes.bpf.h) at each sample, off-CPU interval
// and slow system call of a process whose V8 the loader laid out
// (v8_processes): follows the frame-pointer chain from the thread's user
// rbp (V8's generated code and builtins keep frame pointers) and keeps each
// frame whose function slot holds a JSFunction, with the words user space
// needs to name it.
//
// Nothing read from the target is trusted here beyond bounds: a word that
// looks like a JSFunction is only a candidate, which user space proves.
#ifndef MICROSCOPE_BPF_NODE_WALK_H
#define MICROSCOPE_BPF_NODE_WALK_H

#include "bpf/walk_thread.h"
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

// The functions already sent to user space (node.h: struct v8_snapshot),
// and the ring they go by, shared by every object that walks; the copy is
// built in a per-CPU scratch, which also counts this walk's copies.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct v8_seen_key);
  __type(value, struct v8_seen_value);
} v8_seen SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 22);  // 4 MiB: about 2,400 functions
} v8_snaps SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct v8_snapshot);
} v8_snap_scratch SEC(".maps");

// Up to `room` bytes at `address` (half when the rest is not mapped); the
// bytes read.
static __always_inline __u16 v8_snap_read(__u8* dst, __u32 room, __u64 address) {
  if (address == 0 || (address >> 47) != 0) return 0;
  if (bpf_probe_read_user(dst, room, (const void*)address) == 0) return room;
  if (bpf_probe_read_user(dst, room / 2, (const void*)address) == 0) return room / 2;
  return 0;
}

// The object `tagged` points at into region `r` of `s` (`room` bytes at
// most), and its map into region r + 1.
static __always_inline void v8_snap_object(struct v8_snapshot* s, int r, __u8* dst, __u32 room,
                                           __u8* map_dst, const struct v8_process* p,
                                           __u64 tagged) {
  if (!v8_tagged(p, tagged)) return;
  s->address[r] = tagged - p->tag;
  s->size[r] = v8_snap_read(dst, room, tagged - p->tag);
  if (s->size[r] < MICROSCOPE_V8_OBJECT_WORDS * 8) return;
  const __u64 map = *(const __u64*)(dst + (p->word_map & 7) * 8);  // word_map < 6
  if (!v8_tagged(p, map)) return;
  s->address[r + 1] = map - p->tag;
  s->size[r + 1] = v8_snap_read(map_dst, MICROSCOPE_V8_SNAP_MAP, map - p->tag);
}

// ScopeInfo's flags (function_reader.cc: the same bits in V8 11 to 14).
#define V8_SCOPE_TYPE_MASK 0xf
#define V8_SCOPE_SAVED_CLASS (1u << 10)
#define V8_SCOPE_FUNCTION_VAR_SHIFT 12
#define V8_SCOPE_INFERRED (1u << 14)
#define V8_SCOPE_EMPTY (1u << 29)
#define V8_SCOPE_INLINED_LOCALS 75

// The words of the copied ScopeInfo (the snapshot's name region) that name
// its function: the function variable's name and the inferred name, left in
// s->seen's name and script (0: none in the copy; they are the seen value's
// scratch until it is stored). As function_reader.cc's ReadScopeInfo reads
// them.
static __always_inline void v8_scope_names(const struct v8_process* p, struct v8_snapshot* s) {
  const __u8* scope = s->name_bytes;
  const __u32 size = s->size[V8_SNAP_NAME];
  s->seen.name = 0;
  s->seen.script = 0;
  const int modern = p->scope_first_vars >= 5;  // V8 13 on: uint32 flags
  const __u64 flags_word = *(const __u64*)(scope + 8);
  const __u32 flags =
      modern ? (__u32)flags_word : (__u32)((__s64)flags_word >> (p->smi_shift & 63));
  if (flags & V8_SCOPE_EMPTY) return;
  const __u32 at_locals = (8 + 8 * (__u32)p->scope_context_locals) & (MICROSCOPE_V8_SNAP_SCOPE - 8);
  if (at_locals + 8 > size) return;
  const __s64 locals = (__s64)(*(const __u64*)(scope + at_locals)) >> (p->smi_shift & 63);
  if (locals < 0 || locals > 4096) return;
  __u64 off = 8 + 8 * (__u64)p->scope_first_vars;
  off += 8 * (locals < V8_SCOPE_INLINED_LOCALS ? locals : 1) + 8 * locals;
  if (flags & V8_SCOPE_SAVED_CLASS) off += 8;
  if (((flags >> V8_SCOPE_FUNCTION_VAR_SHIFT) & 3) != 0) {
    if (off + 8 > size || off > MICROSCOPE_V8_SNAP_SCOPE - 8) return;
    s->seen.name = *(const __u64*)(scope + (off & (MICROSCOPE_V8_SNAP_SCOPE - 8)));
    off += 16;
  }
  if ((flags & V8_SCOPE_INFERRED) == 0 || off + 8 > size || off > MICROSCOPE_V8_SNAP_SCOPE - 8)
    return;
  s->seen.script = *(const __u64*)(scope + (off & (MICROSCOPE_V8_SNAP_SCOPE - 8)));
}

// Sends function `shared` (with the name and script words the walk read)
// unless it was sent before as the walk sees it now, and unless this walk
// copied its share already. A global function: the verifier checks it once,
// not at each of the walks' call sites (the off-CPU program's four walks
// went past its million instructions with it inlined).
__attribute__((noinline)) int v8_snapshot(const struct v8_process* p, __u32 pid, __u64 shared,
                                          __u64 name, __u64 script) {
  if (!p) return 0;
  __u32 zero = 0;
  struct v8_snapshot* s = bpf_map_lookup_elem(&v8_snap_scratch, &zero);
  if (!s || s->copies >= MICROSCOPE_V8_SNAPS_PER_WALK) return 0;
  s->key.pid = pid;
  s->key.reserved = 0;
  s->key.shared = shared;
  struct v8_seen_value* seen = bpf_map_lookup_elem(&v8_seen, &s->key);
  if (seen && seen->name == name && seen->script == script) return 0;
  s->copies += 1;
  s->pid = pid;
  s->shared = shared;
  s->name = name;
  s->script = script;
  for (int i = 0; i < V8_SNAP_REGIONS; ++i) {
    s->address[i] = 0;
    s->size[i] = 0;
  }
  v8_snap_object(s, V8_SNAP_SHARED, s->shared_bytes, MICROSCOPE_V8_SNAP_OBJECT, s->shared_map, p,
                 shared);
  v8_snap_object(s, V8_SNAP_NAME, s->name_bytes, MICROSCOPE_V8_SNAP_SCOPE, s->name_map, p, name);
  if (s->size[V8_SNAP_NAME] > 0 && s->size[V8_SNAP_NAME_MAP] == MICROSCOPE_V8_SNAP_MAP) {
    const __u32 at = p->map_instance_type & (MICROSCOPE_V8_SNAP_MAP - 2);
    if (*(const __u16*)(s->name_map + at) == p->type_scope_info) {
      v8_scope_names(p, s);
      v8_snap_object(s, V8_SNAP_SCOPE_NAME, s->scope_name, MICROSCOPE_V8_SNAP_STR,
                     s->scope_name_map, p, s->seen.name);
      v8_snap_object(s, V8_SNAP_INFERRED, s->inferred, MICROSCOPE_V8_SNAP_STR, s->inferred_map, p,
                     s->seen.script);
    }
  }
  v8_snap_object(s, V8_SNAP_SCRIPT, s->script_bytes, MICROSCOPE_V8_SNAP_OBJECT, s->script_map, p,
                 script);
  const __u32 at = p->script_name;
  if (s->size[V8_SNAP_SCRIPT] == MICROSCOPE_V8_SNAP_OBJECT && at != 0 &&
      at <= MICROSCOPE_V8_SNAP_OBJECT - 8) {
    v8_snap_object(s, V8_SNAP_URL, s->url, MICROSCOPE_V8_SNAP_STR, s->url_map, p,
                   *(const __u64*)(s->script_bytes + at));
  }
  if (bpf_ringbuf_output(&v8_snaps, s, sizeof(*s), 0) != 0) return 0;  // sent again next time
  s->seen.name = name;
  s->seen.script = script;
  bpf_map_update_elem(&v8_seen, &s->key, &s->seen, BPF_ANY);
  return 1;
}

// A walk's count of copies starts at 0.
static __always_inline void v8_snaps_begin(void) {
  __u32 zero = 0;
  struct v8_snapshot* s = bpf_map_lookup_elem(&v8_snap_scratch, &zero);
  if (s) s->copies = 0;
}

// Frame pointers a walk follows at most.
static __always_inline __u32 v8_steps(void) {
  return walk_max_frames * MICROSCOPE_V8_STEPS_PER_FRAME;
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
    w->h.status = MICROSCOPE_V8_UNREADABLE;
    return 1;
  }
  // A frame whose context slot holds a Smi is a typed frame (entry, exit,
  // internal, stub): not a JavaScript function's, whatever its other slots.
  // The function's first words, then its shared information's (one buffer:
  // the stack of the walk, its caller and v8_snapshot is 512 bytes in all).
  __u64 obj[8] = {};
  __u16 type;
  if (whole && v8_tagged(p, context) && v8_object(obj, p, function) &&
      (type = v8_map_type(p, obj[p->word_map & 7])) >= p->type_function_first &&
      type <= p->type_function_last) {
    __u32 n = w->h.nframes;
    if (n >= MICROSCOPE_V8_MAX_FRAMES || n >= w->h.bound) {
      w->h.status = MICROSCOPE_V8_TRUNCATED;
      return 1;
    }
    // And its shared information's map says SharedFunctionInfo: a word that
    // only looked like a function (or one the GC is moving) is no frame.
    const __u64 shared = obj[p->word_shared & 7];
    __u64* sfi = obj;
    if (v8_object(sfi, p, shared) && v8_map_type(p, sfi[p->word_map & 7]) == p->type_shared) {
      struct v8_frame* f = &w->frames[n];
      f->fp = fp;
      f->function = function;
      f->shared = shared;
      f->name = sfi[p->word_name & 7];
      f->script = sfi[p->word_script & 7];
      f->bytecode_array = words[p->slot_bytecode_array & 7];
      f->bytecode_offset = words[p->slot_bytecode_offset & 7];
      w->h.nframes = n + 1;
      v8_snapshot(p, w->h.pid, shared, f->name, f->script);
    }
  }
  // Callers' frames lie above their callees'.
  if (next <= fp) return 1;
  c->fp = next;
  if (index + 1 == v8_steps()) w->h.status = MICROSCOPE_V8_TRUNCATED;
  return 0;
}

// A blocked thread's rbp is the C library's (its system call wrappers need
// not keep frame pointers): the chain is looked for in the stack instead,
// at the first of MICROSCOPE_V8_SCAN_WORDS words above sp that holds a
// saved frame pointer, i.e. points further up the stack at a word that
// does too (or ends the chain), with a return address beside it. The V8
// walk then proves each frame it keeps as it always does.
#define MICROSCOPE_V8_SCAN_WORDS 256
#define MICROSCOPE_V8_SCAN_REACH (1 << 20) /* how far up a saved frame pointer may point */
struct v8_scan_ctx {
  __u64 sp;
  __u64 found;
};

static __always_inline int v8_links(__u64 at, __u64 next) {
  return next > at && next - at < MICROSCOPE_V8_SCAN_REACH && (next & 7) == 0;
}

static long v8_scan_step(__u64 index, void* data) {
  struct v8_scan_ctx* c = data;
  const __u64 at = c->sp + index * 8;
  __u64 pair[2];  // a saved frame pointer and the return address above it
  if (bpf_probe_read_user(pair, sizeof(pair), (const void*)at) != 0) return 1;
  if (!v8_links(at, pair[0]) || pair[1] == 0 || (pair[1] >> 47) != 0) return 0;
  __u64 next;
  if (v8_word(&next, pair[0]) != 0 || (next != 0 && !v8_links(pair[0], next))) return 0;
  c->found = at;
  return 1;
}

// Walks thread `t` into `w` from its user frame pointer (its task's thread
// pointer says its isolate); 0 when the process is not laid out or no JavaScript frame
// was found (nothing to send).
static __always_inline int v8_walk(struct v8_walk* w, const struct walk_thread* t) {
  const struct v8_process* p = bpf_map_lookup_elem(&v8_processes, &t->pid);
  if (!p) return 0;
  walk_begin(&w->h, MICROSCOPE_RUNTIME_NODE, t, MICROSCOPE_V8_WALKED, sizeof(struct v8_frame));
  if (p->isolate_tls != 0) {
    // A local first: CO-RE relocates the access from a kernel type, which
    // walk_thread is not.
    struct task_struct* task = t->task;
    const __u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
    if (fsbase != 0) v8_word(&w->h.context[1], fsbase + p->isolate_tls);
  }
  v8_snaps_begin();
  struct v8_step_ctx c = {p, w, t->fp};
  bpf_loop(v8_steps(), v8_step, &c, 0);
  if (w->h.nframes == 0) return 0;
  // Proved by the array only: whether a bytecode handler runs (and so r9
  // is its offset) is for user space to say, by the leaf's code.
  if (t->r12 != 0 && t->r12 == w->frames[0].bytecode_array) {
    w->h.flags |= MICROSCOPE_V8_INTERPRETER;
    w->h.context[0] = t->r9;
  } else if (!t->blocked && t->sp != 0 &&
             bpf_probe_read_user(&w->h.context[0], sizeof(__u64), (const void*)t->sp) == 0) {
    w->h.flags |= MICROSCOPE_V8_TOP;
  }
  return 1;
}

// From the chain found in the stack of a blocked thread (when its rbp led
// to no JavaScript frame).
static __always_inline int v8_walk_scanned(struct v8_walk* w, __u64 sp) {
  __u32 pid = w->h.pid;
  const struct v8_process* p = bpf_map_lookup_elem(&v8_processes, &pid);
  if (!p) return 0;
  struct v8_scan_ctx scan = {.sp = sp & ~7ull, .found = 0};
  bpf_loop(MICROSCOPE_V8_SCAN_WORDS, v8_scan_step, &scan, 0);
  if (scan.found == 0) return 0;
  w->h.status = MICROSCOPE_V8_WALKED;
  w->h.nframes = 0;
  v8_snaps_begin();
  struct v8_step_ctx c = {p, w, scan.found};
  bpf_loop(v8_steps(), v8_step, &c, 0);
  return w->h.nframes > 0;
}

#ifdef MICROSCOPE_SAMPLER_OBJECT
// Thread names as Node gives them (node.h: struct v8_thread_name): a
// uprobe at the image's uv_thread_setname, which the loader attaches once
// per V8 image with that symbol; only a laid-out process's threads are
// told. The thread names itself, so the current task is the one named.
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 16);  // 64 KiB: some 800 names between two drains
} v8_thread_names SEC(".maps");

// Names that did not fit in the ring.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} v8_thread_names_lost SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(v8_thread_setname, const char* name) {  // a uprobe: the same registers
  const __u64 id = bpf_get_current_pid_tgid();
  const __u32 tgid = id >> 32;
  if (bpf_map_lookup_elem(&v8_processes, &tgid) == 0) return 0;
  struct v8_thread_name* e = bpf_ringbuf_reserve(&v8_thread_names, sizeof(*e), 0);
  if (e == 0) {
    __u32 zero = 0;
    __u64* lost = bpf_map_lookup_elem(&v8_thread_names_lost, &zero);
    if (lost) __sync_fetch_and_add(lost, 1);
    return 0;
  }
  e->time = bpf_ktime_get_ns();
  e->pid = tgid;
  e->tid = (__u32)id;
  if (bpf_probe_read_user_str(e->name, sizeof(e->name), name) <= 0) {
    bpf_ringbuf_discard(e, 0);
    return 0;
  }
  bpf_ringbuf_submit(e, 0);
  return 0;
}
#endif

// The hooks of bpf/runtimes.bpf.h: the walk, and what an exec, an exit or
// a fork does to the maps (an exec is laid out at once when it runs a V8
// image the loader knows; a forked child is laid out as its parent).
static __always_inline int node_walk_thread(struct runtime_walk* w, const struct walk_thread* t) {
  struct v8_walk* v = (struct v8_walk*)w;
  if (v8_walk(v, t)) return 1;
  if (!t->blocked || w->h.magic != MICROSCOPE_WALK_MAGIC) return 0;  // not a V8 process
  if (v8_walk_scanned(v, t->sp)) return 1;
  w->h.magic = 0;
  return 0;
}

static __always_inline int node_exec(struct task_struct* p, __u32 tgid, __u32 tid) {
  bpf_map_delete_elem(&v8_processes, &tgid);
  v8_lay_out_exec(p, tgid);
  return 0;
}

static __always_inline void node_exit(__u32 tgid, __u32 tid, bool group_dead) {
  if (group_dead) bpf_map_delete_elem(&v8_processes, &tgid);
}

static __always_inline void node_fork(__u32 parent, __u32 child) {
  struct v8_process* v8 = bpf_map_lookup_elem(&v8_processes, &parent);
  if (v8) bpf_map_update_elem(&v8_processes, &child, v8, BPF_ANY);
}

#endif
