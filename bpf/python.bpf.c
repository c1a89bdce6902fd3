// The CPython walker: runs on the sampler's own perf events (attached with
// PERF_EVENT_IOC_SET_BPF, so threads that inherit the events run it too), in
// the sampled thread's context. For a thread of a process whose interpreter
// the loader has laid out (py_processes), it finds the thread's
// PyThreadState (py_threads, else a bounded search of the interpreters'
// thread lists), walks its frames leaf first and writes one py_walk into
// the sample's own ring (a BPF output event per CPU redirected there), just
// before the sample itself: user space pairs the two in ring order.
//
// Nothing read from the target is trusted here beyond bounds: user space
// proves each code object against the fields this walk saw.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "python.h"

char LICENSE[] SEC("license") = "GPL";

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

// The BPF output event of each CPU, whose records go to that CPU's sample ring.
struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
} py_out SEC(".maps");

// One walk under construction per CPU (too big for the BPF stack), with the
// chunks of target memory it reads.
struct py_scratch {
  struct py_walk walk;
  __u8 frame[MICROSCOPE_PY_CHUNK];
  __u8 code[MICROSCOPE_PY_CHUNK];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct py_scratch);
} py_scratch SEC(".maps");

// Walks whose record did not fit in the ring, per CPU.
#include "lost_count.bpf.h"
#include "targets.bpf.h"

// Execs of followed processes, so that user space lays a new interpreter
// out as soon as it is mapped, not when its mapping record is processed.
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 16);
} py_execs SEC(".maps");

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

// One frame per bpf_loop step, leaf first.
struct walk_ctx {
  const struct py_process* proc;
  struct py_scratch* s;
  __u64 frame;
  __u32 n;
};

static long walk_step(__u64 i, void* data) {
  struct walk_ctx* c = data;
  const struct py_process* proc = c->proc;
  struct py_scratch* s = c->s;
  struct py_walk* w = &s->walk;
  if (c->frame == 0) return 1;
  if (bpf_probe_read_user(s->frame, sizeof(s->frame), (const void*)c->frame) != 0) {
    w->status = MICROSCOPE_PY_UNREADABLE;
    return 1;
  }
  __u64 code = chunk_word(s->frame, proc->frame_executable) & ~7ull;  // 3.14: a tagged _PyStackRef
  __u64 instr_ptr = chunk_word(s->frame, proc->frame_instr_ptr);
  __u8 owner = chunk_byte(s->frame, proc->frame_owner);
  const __u64 at = c->frame;
  c->frame = chunk_word(s->frame, proc->frame_previous);
  __u32 n = c->n;
  if (n >= MICROSCOPE_PY_MAX_FRAMES) {
    w->status = MICROSCOPE_PY_TRUNCATED;
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
    c->n = n + 1;
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
  }
  if (proc->frame_is_entry != MICROSCOPE_PY_ABSENT && chunk_byte(s->frame, proc->frame_is_entry))
    f->instr |= MICROSCOPE_PY_ENTRY;
  c->n = n + 1;
  return 0;
}

static __always_inline void walk_frames(const struct py_process* proc, struct py_scratch* s,
                                        __u64 frame) {
  struct walk_ctx c = {.proc = proc, .s = s, .frame = frame};
  bpf_loop(MICROSCOPE_PY_MAX_FRAMES + 1, walk_step, &c, 0);
  struct py_walk* w = &s->walk;
  if (c.frame != 0 && w->status == MICROSCOPE_PY_WALKED) w->status = MICROSCOPE_PY_TRUNCATED;
  w->nframes = c.n;
}

SEC("perf_event")
int walk_python(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  const struct py_process* proc = bpf_map_lookup_elem(&py_processes, &tgid);
  if (!proc) return 1;  // not laid out: the sample goes on alone
  __u32 zero = 0;
  struct py_scratch* s = bpf_map_lookup_elem(&py_scratch, &zero);
  if (!s) return 1;
  struct py_walk* w = &s->walk;
  w->magic = MICROSCOPE_PY_MAGIC;
  w->pid = tgid;
  w->tid = tid;
  w->status = MICROSCOPE_PY_WALKED;
  w->nframes = 0;
  w->tstate = thread_state(proc, tid, &w->status);
  if (w->tstate != 0) {
    __u64 frame = 0;
    int failed;
    if (proc->thread_current_frame != MICROSCOPE_PY_ABSENT) {
      failed = read_u64(&frame, w->tstate + proc->thread_current_frame);
    } else {
      __u64 cframe = 0;
      failed = read_u64(&cframe, w->tstate + proc->thread_cframe);
      if (!failed && cframe != 0) failed = read_u64(&frame, cframe + proc->cframe_current_frame);
    }
    if (failed)
      w->status = MICROSCOPE_PY_UNREADABLE;
    else
      walk_frames(proc, s, frame);
  }
  __u64 size = MICROSCOPE_PY_WALK_FIXED + (__u64)(w->nframes & 0xff) * sizeof(struct py_frame);
  if (size > sizeof(*w)) size = sizeof(*w);
  if (bpf_perf_event_output(ctx, &py_out, BPF_F_CURRENT_CPU, w, size) != 0) count_lost();
  return 1;  // 0 would drop the sample
}

// Forgotten at exec (another program, maybe another Python: laid out again
// when its interpreter is mapped) and at exit; a forked child is laid out
// as its parent until user space hears of it.
SEC("tp_btf/sched_process_exec")
int BPF_PROG(py_exec, struct task_struct* p) {
  __u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
  bpf_map_delete_elem(&py_processes, &tgid);
  bpf_map_delete_elem(&py_threads, &tid);
  if (followed_tgid(tgid)) bpf_ringbuf_output(&py_execs, &tgid, sizeof(tgid), 0);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(py_exit, struct task_struct* p, bool group_dead) {
  __u32 tid = BPF_CORE_READ(p, pid);
  bpf_map_delete_elem(&py_threads, &tid);
  if (group_dead) {
    __u32 tgid = BPF_CORE_READ(p, tgid);
    bpf_map_delete_elem(&py_processes, &tgid);
  }
  forget_if_group_dead(p, group_dead);
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(py_fork, struct task_struct* parent, struct task_struct* child) {
  __u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
  if (ptgid == ctgid) return 0;  // a thread
  struct py_process* proc = bpf_map_lookup_elem(&py_processes, &ptgid);
  if (proc) bpf_map_update_elem(&py_processes, &ctgid, proc, BPF_ANY);
  return 0;
}
