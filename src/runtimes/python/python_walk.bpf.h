// The CPython walk, run (bpf/runtimes.bpf.h) by every program that takes a
// stack (the sampler at each sample, off-CPU intervals and slow system
// calls): finds the thread's PyThreadState (py_threads, else a bounded
// search of the interpreters' thread lists) and walks its frames leaf
// first. Its maps are shared by every BPF object that walks (the
// recording's SharedBpfMaps), so one layout serves them all.
//
// Nothing read from the target is trusted here beyond bounds: user space
// proves each code object against the fields this walk saw.
#ifndef MICROSCOPE_BPF_PYTHON_WALK_H
#define MICROSCOPE_BPF_PYTHON_WALK_H

#include "bpf/walk_thread.h"
#include "python.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);  // tgid
  __type(value, struct py_process);
} py_processes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32);  // tid
  __type(value, struct py_thread);
} py_threads SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 64);
  __type(key, struct py_image);
  __type(value, struct py_image_layout);
} py_images SEC(".maps");

// The chunks of target memory a walk reads, per CPU.
struct py_chunks {
  __u8 frame[MICROSCOPE_PY_CHUNK];
  __u8 code[MICROSCOPE_PY_CHUNK];
  // Code objects this walk copied (kept here, in map memory, not in the
  // loop's context: the verifier would follow each count).
  __u32 snaps;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct py_chunks);
} py_chunks SEC(".maps");

// The code objects already sent to user space (python.h: struct
// py_code_snapshot), and the ring they go by, shared by every object that
// walks; the snapshot is built in a per-CPU scratch.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct py_seen_key);
  __type(value, struct py_seen_value);
} py_seen SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 22);  // 4 MiB: about 2,800 code objects
} py_snaps SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct py_code_snapshot);
} py_snap_scratch SEC(".maps");

// A word (or byte) of a chunk at an offset the loader checked to lie inside.
static __always_inline __u64 chunk_word(const __u8* chunk, __u32 off) {
  off &= MICROSCOPE_PY_CHUNK - 1;
  if (off > MICROSCOPE_PY_CHUNK - 8) return 0;
  return *(const __u64*)(chunk + off);
}
static __always_inline __u8 chunk_byte(const __u8* chunk, __u32 off) {
  return chunk[off & (MICROSCOPE_PY_CHUNK - 1)];
}

static __always_inline int read_u64(__u64* out, __u64 address) {
  return bpf_probe_read_user(out, sizeof(*out), (const void*)address);
}

// The thread's id as the target's pid namespace sees it.
static __always_inline __u64 namespace_tid(const struct py_process* proc, __u32 tid) {
  if (proc->pidns_ino == 0) return tid;
  if ((__u32)bpf_get_current_pid_tgid() != tid) return 0;  // only the current thread's is known
  struct bpf_pidns_info ns = {};
  if (bpf_get_ns_current_pid_tgid(proc->pidns_dev, proc->pidns_ino, &ns, sizeof(ns)) != 0) return 0;
  return ns.pid;
}

// The thread state whose native_thread_id is `native`, searched in every
// interpreter's list (one bpf_loop step per thread state or interpreter,
// MICROSCOPE_PY_SEARCH steps at most); sets *status when not exactly one
// is found.
struct search_ctx {
  const struct py_process* proc;
  __u64 native;
  __u64 interp;
  __u64 ts;  // next thread state to read; 0: go on to the next interpreter
  __u64 found;
  __u32 matches;
  __u32 seen;     // thread states read
  __u32 started;  // the first interpreter's list is begun
  __u32 done;     // every list was read to its end
};

// Nothing here branches on a count: the verifier would follow every value.
static long search_step(__u64 i, void* data) {
  struct search_ctx* c = data;
  const struct py_process* proc = c->proc;
  if (c->ts == 0) {
    if (c->started && read_u64(&c->interp, c->interp + proc->interp_next) != 0) c->interp = 0;
    c->started = 1;
    if (c->interp == 0) {
      c->done = 1;
      return 1;
    }
    if (read_u64(&c->ts, c->interp + proc->interp_threads_head) != 0) c->ts = 0;
    return 0;
  }
  ++c->seen;
  __u64 id = 0;
  if (read_u64(&id, c->ts + proc->thread_native_id) == 0 && id == c->native) {
    c->found = c->ts;
    ++c->matches;
  }
  if (read_u64(&c->ts, c->ts + proc->thread_next) != 0) c->ts = 0;
  return 0;
}

static __always_inline __u64 search_thread(const struct py_process* proc, __u64 native,
                                           __u8* status, __u32* seen) {
  struct search_ctx c = {.proc = proc, .native = native};
  if (read_u64(&c.interp, proc->runtime + proc->runtime_interpreters_head) != 0) {
    *status = MICROSCOPE_PY_UNREADABLE;
    return 0;
  }
  bpf_loop(MICROSCOPE_PY_SEARCH, search_step, &c, 0);
  *seen = c.seen;
  if (c.matches > 1) {
    *status = MICROSCOPE_PY_SEVERAL;
    return 0;
  }
  if (c.matches == 0) *status = c.done ? MICROSCOPE_PY_NO_THREAD : MICROSCOPE_PY_PAST_BOUND;
  return c.found;
}

// The thread state of the current thread: from the map when its entry still
// names this thread, else searched (and remembered, found or not, until the
// next refresh).
static __always_inline __u64 thread_state(const struct py_process* proc, __u32 tid, __u8* status) {
  __u64 native = namespace_tid(proc, tid);
  struct py_thread* known = bpf_map_lookup_elem(&py_threads, &tid);
  if (known) {
    if (known->tstate == 0 && known->generation == proc->generation &&
        bpf_ktime_get_ns() - known->searched_ns < MICROSCOPE_PY_RESEARCH_NS) {
      *status = MICROSCOPE_PY_NO_THREAD;
      return 0;
    }
    __u64 id = 0;
    if (known->tstate != 0 && read_u64(&id, known->tstate + proc->thread_native_id) == 0 &&
        id == native)
      return known->tstate;
  }
  __u32 seen = 0;
  __u64 ts = search_thread(proc, native, status, &seen);
  // Remembered when found, or when not found among threads that exist (an
  // interpreter still starting has none yet).
  if (*status == MICROSCOPE_PY_WALKED || (*status == MICROSCOPE_PY_NO_THREAD && seen > 0)) {
    struct py_thread entry = {.tstate = ts,
                              .native_id = native,
                              .searched_ns = bpf_ktime_get_ns(),
                              .generation = proc->generation};
    bpf_map_update_elem(&py_threads, &tid, &entry, BPF_ANY);
  }
  return ts;
}

// Copies up to `size` bytes at `address` (half as many when the object
// lies at the end of its mapping); returns the bytes copied, 0: none.
static __always_inline __u16 snap_read(__u8* dst, __u32 size, __u64 address) {
  if (address == 0) return 0;
  if (bpf_probe_read_user(dst, size, (const void*)address) == 0) return size;
  if (bpf_probe_read_user(dst, size / 2, (const void*)address) == 0) return size / 2;
  return 0;
}

// Sends code object `code` (with the proof fields the walk read) to user
// space unless it was sent before, as the walk sees it now, and unless this
// walk copied its share already (the rest go with later walks).
static __always_inline void snapshot_code(const struct py_process* proc, struct py_chunks* chunks,
                                          __u32 pid, __u64 code, __u64 qualname, __u64 filename,
                                          __s32 first_line) {
  if (proc->code_linetable == MICROSCOPE_PY_ABSENT) return;
  struct py_seen_key key = {.pid = pid, .code = code};
  struct py_seen_value* seen = bpf_map_lookup_elem(&py_seen, &key);
  if (seen && seen->qualname == qualname && seen->filename == filename &&
      seen->first_line == first_line)
    return;
  if (chunks->snaps >= MICROSCOPE_PY_SNAPS_PER_WALK) return;
  chunks->snaps += 1;
  __u32 zero = 0;
  struct py_code_snapshot* s = bpf_map_lookup_elem(&py_snap_scratch, &zero);
  if (!s) return;
  s->pid = pid;
  s->code = code;
  s->qualname = qualname;
  s->filename = filename;
  s->first_line = first_line;
  s->code_size = snap_read(s->code_bytes, sizeof(s->code_bytes), code);
  s->table = 0;
  const __u32 at = proc->code_linetable;
  if (s->code_size == sizeof(s->code_bytes) && at <= sizeof(s->code_bytes) - 8)
    s->table = *(const __u64*)(s->code_bytes + (at & (MICROSCOPE_PY_SNAP_CODE - 1)));
  s->qualname_size = snap_read(s->qualname_bytes, sizeof(s->qualname_bytes), qualname);
  s->filename_size = snap_read(s->filename_bytes, sizeof(s->filename_bytes), filename);
  s->table_size = snap_read(s->table_bytes, sizeof(s->table_bytes), s->table);
  if (bpf_ringbuf_output(&py_snaps, s, sizeof(*s), 0) != 0) return;  // sent again next time
  struct py_seen_value value = {
      .qualname = qualname, .filename = filename, .first_line = first_line};
  bpf_map_update_elem(&py_seen, &key, &value, BPF_ANY);
}

// One frame per bpf_loop step, leaf first.
struct walk_ctx {
  const struct py_process* proc;
  struct py_chunks* s;
  struct py_walk* w;
  __u64 frame;
  __u32 frame_need;  // the bytes of a frame the step reads (from its start)
};

static __always_inline __u32 at_least(__u32 need, __u32 end) {
  return end > need ? end : need;
}

// The bytes from a frame's start that hold every field the walk reads.
static __always_inline __u32 frame_need(const struct py_process* proc) {
  __u32 need = at_least(proc->frame_previous + 8, proc->frame_executable + 8);
  need = at_least(need, proc->frame_instr_ptr + 8);
  need = at_least(need, proc->frame_owner + 1);
  if (proc->frame_is_entry != MICROSCOPE_PY_ABSENT) need = at_least(need, proc->frame_is_entry + 1);
  return need;
}

static long walk_step(__u64 i, void* data) {
  struct walk_ctx* c = data;
  const struct py_process* proc = c->proc;
  struct py_chunks* s = c->s;
  struct py_walk* w = c->w;
  if (c->frame == 0) return 1;
  // The whole chunk, or where a frame lies at the end of its data stack
  // chunk (the next page unmapped), the bytes it needs.
  if (bpf_probe_read_user(s->frame, sizeof(s->frame), (const void*)c->frame) != 0 &&
      bpf_probe_read_user(s->frame, c->frame_need & (MICROSCOPE_PY_CHUNK - 1),
                          (const void*)c->frame) != 0) {
    w->h.status = MICROSCOPE_PY_UNREADABLE;
    return 1;
  }
  __u64 code = chunk_word(s->frame, proc->frame_executable) & ~7ull;  // 3.14: a tagged _PyStackRef
  __u64 instr_ptr = chunk_word(s->frame, proc->frame_instr_ptr);
  __u8 owner = chunk_byte(s->frame, proc->frame_owner);
  const __u64 at = c->frame;
  c->frame = chunk_word(s->frame, proc->frame_previous);
  // The count lives in the walk (map memory), not in this context (the
  // caller's stack): the verifier tracks a stack slot's exact value, and
  // would check this step once per count, up to the bound.
  __u32 n = w->h.nframes;
  if (n >= MICROSCOPE_PY_MAX_FRAMES || n >= w->h.bound) {
    w->h.status = MICROSCOPE_PY_TRUNCATED;
    return 1;
  }
  struct py_frame* f = &w->frames[n];
  if (owner == proc->owner_cstack || owner == proc->owner_interpreter) {
    // The shim at the bottom of an activation, on that activation's C stack.
    f->code = at;
    f->qualname = 0;
    f->filename = 0;
    f->firstlineno = 0;
    f->instr = MICROSCOPE_PY_SHIM;
    w->h.nframes = n + 1;
    return 0;
  }
  f->code = code;
  f->qualname = 0;
  f->filename = 0;
  f->firstlineno = 0;
  f->instr = MICROSCOPE_PY_NO_INSTR;
  if (code != 0 &&
      bpf_probe_read_user(s->code, sizeof(s->code), (const void*)(code + proc->code_lo)) == 0) {
    f->qualname = chunk_word(s->code, proc->code_qualname - proc->code_lo);
    f->filename = chunk_word(s->code, proc->code_filename - proc->code_lo);
    f->firstlineno = (__s32)chunk_word(s->code, proc->code_firstlineno - proc->code_lo);
    __u64 first = code + proc->code_adaptive;
    if (instr_ptr >= first && instr_ptr - first < MICROSCOPE_PY_NO_INSTR)
      f->instr = (__u32)(instr_ptr - first);
    snapshot_code(proc, s, w->h.pid, code, f->qualname, f->filename, f->firstlineno);
  }
  if (proc->frame_is_entry != MICROSCOPE_PY_ABSENT && chunk_byte(s->frame, proc->frame_is_entry))
    f->instr |= MICROSCOPE_PY_ENTRY;
  w->h.nframes = n + 1;
  return 0;
}

static __always_inline void walk_frames(const struct py_process* proc, struct py_chunks* s,
                                        struct py_walk* w, __u64 frame) {
  struct walk_ctx c = {
      .proc = proc, .s = s, .w = w, .frame = frame, .frame_need = frame_need(proc)};
  s->snaps = 0;
  bpf_loop(walk_max_frames + 1, walk_step, &c, 0);
  if (c.frame != 0 && w->h.status == MICROSCOPE_PY_WALKED) w->h.status = MICROSCOPE_PY_TRUNCATED;
}

// Whether thread state `ts` holds its interpreter's GIL (flags of py_walk).
static __always_inline __u8 gil_flags(const struct py_process* proc, __u64 ts) {
  __u64 holder = 0, interp = 0, gil = 0;
  __u32 locked = 1;
  switch (proc->gil) {
    case MICROSCOPE_PY_GIL_RUNTIME:
      if (read_u64(&holder, proc->runtime + proc->gil_holder) != 0) return 0;
      break;
    case MICROSCOPE_PY_GIL_INTERP:
    case MICROSCOPE_PY_GIL_INTERP_PTR:
      if (read_u64(&interp, ts + proc->thread_interp) != 0) return 0;
      gil = interp;
      if (proc->gil == MICROSCOPE_PY_GIL_INTERP_PTR &&
          read_u64(&gil, interp + proc->gil_pointer) != 0)
        return 0;
      if (read_u64(&holder, gil + proc->gil_holder) != 0 ||
          bpf_probe_read_user(&locked, sizeof(locked), (const void*)(gil + proc->gil_locked)) != 0)
        return 0;
      break;
    default:
      return 0;
  }
  return MICROSCOPE_PY_GIL_KNOWN | (holder == ts && locked == 1 ? MICROSCOPE_PY_HOLDS_GIL : 0);
}

// Walks the Python frames of thread `tid` of process `tgid` into `w`: the
// current thread, or one that shares the loaded address space (a thread in
// another pid namespace then finds no state). False when the
// process is not laid out (a native program): `w` is then left alone.
static __always_inline bool python_walk(struct py_walk* w, __u32 tgid, __u32 tid) {
  const struct py_process* proc = bpf_map_lookup_elem(&py_processes, &tgid);
  if (!proc) return false;
  __u32 zero = 0;
  struct py_chunks* s = bpf_map_lookup_elem(&py_chunks, &zero);
  if (!s) return false;
  const struct walk_thread t = {.pid = tgid, .tid = tid};
  walk_begin(&w->h, MICROSCOPE_RUNTIME_PYTHON, &t, MICROSCOPE_PY_WALKED, sizeof(struct py_frame));
  const __u64 tstate = thread_state(proc, tid, &w->h.status);
  w->h.context[0] = tstate;
  if (tstate != 0) {
    w->h.flags = gil_flags(proc, tstate);
    __u64 frame = 0;
    int failed;
    if (proc->thread_current_frame != MICROSCOPE_PY_ABSENT) {
      failed = read_u64(&frame, tstate + proc->thread_current_frame);
    } else {
      __u64 cframe = 0;
      failed = read_u64(&cframe, tstate + proc->thread_cframe);
      if (!failed && cframe != 0) failed = read_u64(&frame, cframe + proc->cframe_current_frame);
    }
    if (failed)
      w->h.status = MICROSCOPE_PY_UNREADABLE;
    else
      walk_frames(proc, s, w, frame);
  }
  return true;
}

// The hooks of bpf/runtimes.bpf.h: the walk, and what an exec, an exit or
// a fork does to the maps (a process is forgotten at exec, maybe to run
// another runtime, and laid out again when its interpreter is mapped; a
// forked child is laid out as its parent until user space hears of it).
static __always_inline int python_walk_thread(struct runtime_walk* w, const struct walk_thread* t) {
  return python_walk((struct py_walk*)w, t->pid, t->tid);
}

// Whether execs of unknown interpreters are held (user space sets entry 0
// to 1 when its walker runs in a mode that walks every Python process).
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} py_hold SEC(".maps");

// Whether the executable `p` now runs is named python* (python3,
// python3.13, python3.14d): an interpreter the loader does not know yet.
static __always_inline int python_named(struct task_struct* p) {
  const unsigned char* name = BPF_CORE_READ(p, mm, exe_file, f_path.dentry, d_name.name);
  char head[8] = {};
  if (!name || bpf_probe_read_kernel_str(head, sizeof(head), name) < 7) return 0;
  return head[0] == 'p' && head[1] == 'y' && head[2] == 't' && head[3] == 'h' && head[4] == 'o' &&
         head[5] == 'n';
}

// At an exec of `p` (the new program's mm in place): laid out at once when
// it runs an interpreter executable the loader knows, in the pid namespace
// its process was laid out in before (a Python parent's child), else as the
// recorder's own (a thread then finds no state until user space lays the
// process out from its mappings). An executable named python* that the
// loader does not know is to be held (returns 1) while py_hold is on.
static __always_inline int python_exec(struct task_struct* p, __u32 tgid, __u32 tid) {
  __u64 pidns_dev = 0, pidns_ino = 0;
  struct py_process* old = bpf_map_lookup_elem(&py_processes, &tgid);
  if (old) {
    pidns_dev = old->pidns_dev;
    pidns_ino = old->pidns_ino;
  }
  bpf_map_delete_elem(&py_processes, &tgid);
  bpf_map_delete_elem(&py_threads, &tid);
  struct inode* inode = BPF_CORE_READ(p, mm, exe_file, f_inode);
  if (!inode) return 0;
  struct py_image image = {.dev = BPF_CORE_READ(inode, i_sb, s_dev),
                           .ino = BPF_CORE_READ(inode, i_ino)};
  struct py_image_layout* layout = bpf_map_lookup_elem(&py_images, &image);
  if (!layout) {
    __u32 zero = 0;
    __u32* hold = bpf_map_lookup_elem(&py_hold, &zero);
    return hold && *hold && python_named(p);
  }
  struct py_process proc = layout->process;
  proc.runtime += BPF_CORE_READ(p, mm, start_code) - layout->text_vaddr;
  proc.pidns_dev = pidns_dev;
  proc.pidns_ino = pidns_ino;
  bpf_map_update_elem(&py_processes, &tgid, &proc, BPF_ANY);
  return 0;
}

static __always_inline void python_exit(__u32 tgid, __u32 tid, bool group_dead) {
  bpf_map_delete_elem(&py_threads, &tid);
  if (group_dead) bpf_map_delete_elem(&py_processes, &tgid);
}

static __always_inline void python_fork(__u32 parent, __u32 child) {
  struct py_process* proc = bpf_map_lookup_elem(&py_processes, &parent);
  if (proc) bpf_map_update_elem(&py_processes, &child, proc, BPF_ANY);
}

#endif
