// Time off CPU of the followed processes' threads (tp_btf/sched_switch).
//
// At switch-out the start time and state go into `starts`. At switch-in the
// interval's length is known: shorter than min_ns, it is only counted
// (`shorts`); otherwise it waits to be sent with its stacks.
//
// Stacks are taken in the thread's own context, where its user registers
// and memory are at hand. A thread that blocked in a system call (sleeping
// or uninterruptible) sends its interval at that call's exit
// (tp_btf/sys_exit): no user code has run since the switch-out, so its user
// registers and stack are those of the switch-out; the kernel stack is taken
// at switch-in (bpf_get_task_stack: the saved stack of the blocked thread).
// (fexit/schedule would also cover sleeps outside system calls, but this
// kernel refuses to attach there.) A thread that blocked outside a system
// call (a page fault) sends its interval at its next switch-out, with its
// user stack only if its user registers are still those of the switch-in.
// A preempted thread sends its interval at switch-in, from sched_switch,
// with its saved registers (bpf_task_pt_regs) and its user stack only when
// the outgoing task shares its address space.
//
// A switch-in can go untraced: some kernels trace nothing while certain
// tasks are current (a VM's agent; sched_switch fires in the outgoing
// task's context), and a program skipped as recursive sees nothing either.
// A thread found running with its interval open (at a system call's exit,
// or at its next switch-out) was switched in unseen: the interval is closed
// then, its end set back by the CPU time the thread was charged since its
// switch-out, and marked as a bound (SWITCH_IN_UNSEEN), without a kernel
// stack; its user stack is kept when the system call's exit is that of the
// very entry it blocked in.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "offcpu.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 min_ns = 20000;
const volatile __u32 ustack_size = 16384;
// Set when stack_ends and stack_vmas are the stack copier's: each copy is
// then sized as the samples' are (stack_extent.bpf.h), ustack_size only
// where a stack's mapping is not found; otherwise every copy is ustack_size.
const volatile __u8 sized_by_walks = 0;

#include "runtimes.bpf.h"
#include "stack_extent.bpf.h"
#include "targets.bpf.h"
#include "user_stack.bpf.h"

// Entries are about 1.2 KiB (the kernel stack rides along): allocated as
// threads appear, not all up front.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);  // tid
  __type(value, struct offcpu_start);
} starts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct offcpu_short_key);
  __type(value, struct offcpu_short);
} shorts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 25);  // 32 MiB
} events SEC(".maps");

// One event under construction per CPU (a per-CPU array's values are limited
// to 32 KiB; this one is larger). Programs here run with migration off.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);  // set to the number of CPUs by the loader
  __type(key, __u32);
  __type(value, struct offcpu_event);
} scratch SEC(".maps");

// The thread a walk walks, made in a per-CPU slot rather than on the
// stack: sched_switch's program, with the walks' calls, is at the
// verifier's 512 bytes of stack.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct walk_thread);
} walk_threads SEC(".maps");

// Walks the runtimes' frames of thread `tid` of `task` (its registers in
// e) into e's tail.
static __always_inline void walk_event_thread(struct offcpu_event* e, struct task_struct* task,
                                              __u32 pid, __u32 tid, __u8 blocked) {
  __u32 zero = 0;
  struct walk_thread* t = bpf_map_lookup_elem(&walk_threads, &zero);
  if (!t) return;
  t->task = task;
  t->fp = e->regs[6];
  t->sp = e->regs[7];
  t->r9 = 0;
  t->r12 = 0;
  t->pid = pid;
  t->tid = tid;
  t->blocked = blocked;
  e->walk_size = walk_runtimes_into(e->tail, t);
}

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct offcpu_lost);
} lost SEC(".maps");

// A new interval is built here (too big for the BPF stack), then copied in.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct offcpu_start);
} fresh SEC(".maps");

static __always_inline int followed(struct task_struct* t) {
  return followed_tgid(BPF_CORE_READ(t, tgid));
}

static __always_inline void count_lost(__u64 ns, int untracked) {
  __u32 zero = 0;
  struct offcpu_lost* l = bpf_map_lookup_elem(&lost, &zero);
  if (!l) return;
  if (untracked) {
    l->untracked += 1;
  } else {
    l->count += 1;
    l->total_ns += ns;
  }
}

static __always_inline void fill_regs(struct offcpu_event* e, struct pt_regs* r) {
  read_user_regs(e->regs, r);
  e->has_regs = 1;
}

// How much of the user stack of the thread e names, of `task` (whose
// address space is loaded: the current task, or the incoming one that
// shares it), to copy: kept in e->ustack_size until the copy.
static __always_inline void plan_event_stack(struct offcpu_event* e, struct task_struct* task) {
  e->ustack_size = traced_copy_size(sized_by_walks, task, &e->tid, e->regs[7], ustack_size);
}

// After the walk, if any (the stack goes after it in the tail), as planned.
static __always_inline void copy_event_stack(struct offcpu_event* e) {
  __u8* at = e->tail + (e->walk_size & MICROSCOPE_EVENT_PART_MASK);
  e->ustack_size = e->has_regs ? copy_user_stack(at, e->regs[7], e->ustack_size) : 0;
}

static __always_inline void send(struct offcpu_event* e) {
  __u64 bytes = MICROSCOPE_OFFCPU_FIXED_SIZE + (e->walk_size & MICROSCOPE_EVENT_PART_MASK) +
                (e->ustack_size & MICROSCOPE_EVENT_PART_MASK);
  // The reader polls on a timer; wake it early only when a lot is waiting.
  __u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= (4 << 20) ? BPF_RB_FORCE_WAKEUP
                                                                           : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&events, e, bytes, flags) != 0) {
    count_lost(e->start_ns != 0 ? e->end_ns - e->start_ns : 0, 0);
  }
}

// Fills the event's fixed fields from the interval (not regs, user stack).
static __always_inline void begin_event(struct offcpu_event* e, struct offcpu_start* s, __u32 pid,
                                        __u32 tid) {
  e->start_ns = s->start_ns;
  e->end_ns = s->end_ns;
  e->time_ns = bpf_ktime_get_ns();
  e->pid = pid;
  e->tid = tid;
  e->waker_tid = s->waker_tid;
  e->waker_pid = s->waker_pid;
  __builtin_memcpy(e->waker_comm, s->waker_comm, sizeof(e->waker_comm));
  e->state = s->state;
  e->flags = s->flags;
  __u32 k = s->kstack_size;
  if (k > sizeof(e->kstack)) k = sizeof(e->kstack);
  e->kstack_size = k;
  if (k > 0) bpf_probe_read_kernel(e->kstack, k & 0x3ff, s->kstack);
}

// Sends the pending interval of the current thread with its kernel stack
// from the switch-in and its user registers and stack as they are now,
// when they are still those of the switch-in (no user code ran since).
static __always_inline void send_from_own_context(struct offcpu_start* s, __u32 pid, __u32 tid) {
  __u32 cpu = bpf_get_smp_processor_id();
  struct offcpu_event* e = bpf_map_lookup_elem(&scratch, &cpu);
  if (!e) return;
  struct task_struct* task = bpf_get_current_task_btf();
  e->has_regs = 0;
  e->ustack_size = 0;
  e->walk_size = 0;
  int unchanged = 0;
  if (BPF_CORE_READ(task, mm) && s->has_regs) {
    fill_regs(e, (struct pt_regs*)bpf_task_pt_regs(task));
    // No user code ran since the switch-in: its stack is that of then.
    unchanged = e->regs[7] == s->regs[7] && e->regs[8] == s->regs[8];
    // Otherwise it returned to user space since (it blocked outside a
    // system call, in a page fault): its registers then, and no stack.
    if (!unchanged) __builtin_memcpy(e->regs, s->regs, sizeof(e->regs));
  }
  begin_event(e, s, pid, tid);
  bpf_get_current_comm(e->comm, sizeof(e->comm));
  if (unchanged) plan_event_stack(e, task);
  if (s->has_regs) {  // where its interpreted code blocked
    walk_event_thread(e, task, pid, tid, 1);
  }
  if (unchanged) copy_event_stack(e);
  if (e->ustack_size == 0) e->flags |= MICROSCOPE_OFFCPU_NO_USER_STACK;
  send(e);
}

// A thread's entry stays in `starts` between its intervals, closed.
static __always_inline int is_open(struct offcpu_start* s) {
  return s->start_ns != 0 || (s->flags & MICROSCOPE_OFFCPU_CUT_AT_START);
}

static __always_inline void open_interval(struct offcpu_start* s, __u64 now, __u32 pid,
                                          __u8 state) {
  // A wakeup can be traced before the sleeper's switch-out (try_to_wake_up
  // fires sched_waking, then waits for the sleeper to leave its CPU): keep a
  // waker seen just before a sleep; a preemption has none.
  int early = (s->flags & MICROSCOPE_OFFCPU_EARLY_WAKER) && state != MICROSCOPE_STATE_PREEMPTED &&
              now - s->waker_ns < 1000000;
  s->start_ns = now;
  s->end_ns = 0;
  s->pid = pid;
  if (!early) {
    s->waker_tid = 0;
    s->waker_pid = 0;
    s->waker_comm[0] = 0;
  }
  s->state = state;
  s->flags = 0;
  s->kstack_size = 0;
  s->has_regs = 0;
}

// What closing an interval whose switch-in is not traced needs: the
// thread's CPU time, and its user SP and IP (those of its kernel entry).
static __always_inline void note_switch_out(struct offcpu_start* s, struct task_struct* t) {
  s->out_runtime = BPF_CORE_READ(t, se.sum_exec_runtime);
  struct pt_regs* r = (struct pt_regs*)bpf_task_pt_regs(t);
  s->out_sp = BPF_CORE_READ(r, sp);
  s->out_ip = BPF_CORE_READ(r, ip);
}

// The running thread `t`'s interval is open: its switch-in was not traced.
// It was switched in at most the CPU time it was charged since its
// switch-out before `now` (the charge lags by up to a tick, never leads).
static __always_inline void close_unseen(struct offcpu_start* s, struct task_struct* t, __u64 now) {
  __u64 ran = BPF_CORE_READ(t, se.sum_exec_runtime) - s->out_runtime;
  s->end_ns = now - s->start_ns > ran ? now - ran : s->start_ns;
  s->flags |= MICROSCOPE_OFFCPU_SWITCH_IN_UNSEEN;
  s->kstack_size = 0;
  s->has_regs = 0;
}

static __always_inline void count_short(__u32 tid, struct offcpu_start* s, __u64 delta) {
  struct offcpu_short_key key = {.tid = tid, .state = s->state};
  struct offcpu_short* c = bpf_map_lookup_elem(&shorts, &key);
  if (c) {
    __sync_fetch_and_add(&c->count, 1);
    __sync_fetch_and_add(&c->total_ns, delta);
  } else {
    struct offcpu_short fresh = {.count = 1, .total_ns = delta, .pid = s->pid};
    bpf_map_update_elem(&shorts, &key, &fresh, BPF_NOEXIST);
  }
}

// An interval close_unseen closed: counted if short, sent otherwise.
static __always_inline void send_unseen(struct offcpu_start* s, __u32 pid, __u32 tid) {
  __u64 delta = s->end_ns - s->start_ns;
  if (delta < min_ns) {
    count_short(tid, s, delta);
  } else {
    send_from_own_context(s, pid, tid);
  }
}

static __always_inline void close_interval(struct offcpu_start* s) {
  s->start_ns = 0;
  s->end_ns = 0;
  s->flags = 0;
}

static __always_inline __u8 state_of(bool preempt, unsigned int prev_state) {
  if (preempt || (prev_state & 0xff) == 0) return MICROSCOPE_STATE_PREEMPTED;
  if (prev_state & 1) return MICROSCOPE_STATE_SLEEPING;         // TASK_INTERRUPTIBLE
  if (prev_state & 2) return MICROSCOPE_STATE_UNINTERRUPTIBLE;  // TASK_UNINTERRUPTIBLE
  return MICROSCOPE_STATE_OTHER;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct* prev, struct task_struct* next,
             unsigned int prev_state) {
  __u64 now = bpf_ktime_get_ns();
  if (followed(prev)) {
    __u32 tid = BPF_CORE_READ(prev, pid);
    __u32 pid = BPF_CORE_READ(prev, tgid);
    struct offcpu_start* old = bpf_map_lookup_elem(&starts, &tid);
    if (old && is_open(old)) {
      if (old->end_ns != 0) {
        // Switched in but not yet sent: the thread is switching out again
        // before schedule() returned, so its stacks are still those of that
        // interval (a preempted one was sent at switch-in).
        send_from_own_context(old, pid, tid);
      } else if (old->start_ns != 0) {
        close_unseen(old, prev, now);  // it has run since: no stacks of the block
        send_unseen(old, pid, tid);
      }
    }
    if (BPF_CORE_READ(prev, exit_state) != 0 || (prev_state & 0x80) != 0) {  // TASK_DEAD
      bpf_map_delete_elem(&starts, &tid);
    } else if (old) {
      // Reuse the thread's entry in place: copying a whole entry (with its
      // kernel stack) at every switch would cost more than the rest.
      open_interval(old, now, pid, state_of(preempt, prev_state));
      note_switch_out(old, prev);
    } else {
      __u32 zero = 0;
      struct offcpu_start* s = bpf_map_lookup_elem(&fresh, &zero);
      if (s) {
        s->flags = 0;
        open_interval(s, now, pid, state_of(preempt, prev_state));
        note_switch_out(s, prev);
        if (bpf_map_update_elem(&starts, &tid, s, BPF_ANY) != 0) count_lost(0, 1);
      }
    }
  }
  if (!followed(next)) return 0;
  __u32 tid = BPF_CORE_READ(next, pid);
  struct offcpu_start* s = bpf_map_lookup_elem(&starts, &tid);
  // No open interval: a new thread, or one off CPU since before the
  // recording (the loader seeds those).
  if (!s || !is_open(s)) return 0;
  s->end_ns = now;
  __u64 delta = s->start_ns != 0 ? now - s->start_ns : min_ns;
  if (delta < min_ns && !(s->flags & MICROSCOPE_OFFCPU_CUT_AT_START)) {
    count_short(tid, s, delta);
    close_interval(s);
    return 0;
  }
  // The blocked thread's kernel stack, saved at its switch-out.
  long k = bpf_get_task_stack(next, s->kstack, sizeof(s->kstack), 0);
  s->kstack_size = k > 0 ? (__u32)k : 0;
  struct pt_regs* regs = 0;
  if (BPF_CORE_READ(next, mm)) {
    regs = (struct pt_regs*)bpf_task_pt_regs(next);
    read_user_regs(s->regs, regs);
    s->has_regs = 1;
  }
  if (s->state != MICROSCOPE_STATE_PREEMPTED) return 0;  // sent from its own context
  // Preempted: it resumes wherever it was. Send it now, with its saved
  // registers; its user memory is readable here only in the address space
  // that is loaded, the outgoing task's.
  __u32 cpu = bpf_get_smp_processor_id();
  struct offcpu_event* e = bpf_map_lookup_elem(&scratch, &cpu);
  if (!e) return 0;
  e->has_regs = 0;
  e->ustack_size = 0;
  e->walk_size = 0;
  if (regs) {
    fill_regs(e, regs);
    if (BPF_CORE_READ(next, mm) == BPF_CORE_READ(prev, mm)) {
      e->tid = tid;  // begun below; the copy's size is looked up by it
      plan_event_stack(e, next);
      // Preempted in its own code: its rbp is its own.
      walk_event_thread(e, next, s->pid, tid, 0);
      copy_event_stack(e);
    }
  }
  begin_event(e, s, s->pid, tid);
  BPF_CORE_READ_STR_INTO(&e->comm, next, comm);
  if (e->ustack_size == 0) e->flags |= MICROSCOPE_OFFCPU_NO_USER_STACK;
  send(e);
  close_interval(s);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_thread_exit, struct task_struct* p, bool group_dead) {
  forget_if_group_dead(p, group_dead);
  return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct* p) {
  if (!followed(p)) return 0;
  __u32 tid = BPF_CORE_READ(p, pid);
  struct offcpu_start* s = bpf_map_lookup_elem(&starts, &tid);
  if (!s) return 0;
  if (is_open(s)) {
    if (s->end_ns != 0) return 0;  // already switched in
  } else {
    if (s->end_ns != 0) return 0;               // switched in, not yet sent
    s->flags |= MICROSCOPE_OFFCPU_EARLY_WAKER;  // the switch-out is still to come
  }
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  s->waker_tid = (__u32)pid_tgid;
  s->waker_pid = pid_tgid >> 32;
  s->waker_ns = bpf_ktime_get_ns();
  bpf_get_current_comm(s->waker_comm, sizeof(s->waker_comm));
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs* regs, long ret) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tid = (__u32)pid_tgid;
  struct offcpu_start* s = bpf_map_lookup_elem(&starts, &tid);
  if (!s) return 0;
  if (s->end_ns == 0) {
    // Closed, or off CPU since before the recording (seeded: it is caught at
    // its next switch).
    if (s->start_ns == 0) return 0;
    // Running with its interval open: switched in unseen.
    struct task_struct* task = bpf_get_current_task_btf();
    close_unseen(s, task, bpf_ktime_get_ns());
    struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
    if (BPF_CORE_READ(regs, sp) == s->out_sp && BPF_CORE_READ(regs, ip) == s->out_ip) {
      // The exit of the entry it blocked in: no user code ran since.
      read_user_regs(s->regs, regs);
      s->has_regs = 1;
    }
    send_unseen(s, pid_tgid >> 32, tid);
  } else {
    send_from_own_context(s, pid_tgid >> 32, tid);
  }
  close_interval(s);
  return 0;
}
