// The runtime walkers: one program on the sampler's own perf events
// (attached with PERF_EVENT_IOC_SET_BPF, so threads that inherit the events
// run it too; an event runs one program), in the sampled thread's context.
// It walks the thread's frames of the runtime its process was laid out for
// (runtimes.bpf.h). The walk goes as one record (walk.h) into the sample's
// own ring (a BPF output event per CPU redirected there), just before the
// sample itself: user space pairs the two in ring order.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

// This object alone carries the runtimes' own programs beside the walk
// (Node's thread names).
#define MICROSCOPE_SAMPLER_OBJECT
#include "runtimes.bpf.h"

char LICENSE[] SEC("license") = "GPL";

// The BPF output event of each CPU, whose records go to that CPU's sample ring.
struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
} walk_out SEC(".maps");

// One walk under construction per CPU (too big for the BPF stack, and for
// a per-CPU array's 32 KiB values). Programs on perf events run with
// preemption off.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);  // set to the number of CPUs by the loader
  __type(key, __u32);
  __type(value, struct runtime_walk);
} walk_scratch SEC(".maps");

// Walks whose record did not fit in the ring, per CPU.
#include "lost_count.bpf.h"
#include "targets.bpf.h"

// Execs of followed processes, so that user space lays a new interpreter
// out as soon as it is mapped, not when its mapping record is processed.
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 16);
} execs SEC(".maps");

// Returns 1 whatever happens: 0 would drop the sample. A process no walker
// laid out, or a walk with nothing to send, lets the sample go on alone.
SEC("perf_event")
int walk_runtimes_at_sample(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 cpu = bpf_get_smp_processor_id();
  struct runtime_walk* w = bpf_map_lookup_elem(&walk_scratch, &cpu);
  if (!w) return 1;
  struct walk_thread t = {.task = bpf_get_current_task_btf(), .pid = id >> 32, .tid = (__u32)id};
  if ((ctx->regs.ip >> 47) == 0) {  // the sample interrupted user code
    t.fp = ctx->regs.bp;
    t.sp = ctx->regs.sp;
    t.r9 = ctx->regs.r9;
    t.r12 = ctx->regs.r12;
  } else {  // in the kernel: the user registers it saved on entry
    struct pt_regs* user = (struct pt_regs*)bpf_task_pt_regs(t.task);
    t.fp = BPF_CORE_READ(user, bp);
    t.sp = BPF_CORE_READ(user, sp);
    t.r9 = BPF_CORE_READ(user, r9);
    t.r12 = BPF_CORE_READ(user, r12);
  }
  if (!walk_runtimes(w, &t)) return 1;
  __u64 size = MICROSCOPE_WALK_FIXED + (__u64)w->h.nframes * w->h.frame_size;
  if (size > sizeof(*w)) size = sizeof(*w);
  if (bpf_perf_event_output(ctx, &walk_out, BPF_F_CURRENT_CPU, w, size) != 0) count_lost();
  return 1;
}

// The recorder's own process (its tgid, as the targets map's are: the
// loader sets it). It never reads a child's stops (it waits for exits only,
// by pidfd and by waitpid without WUNTRACED), whatever its threads' signal
// masks are at the moment: glibc blocks every signal in a thread for the
// instant it creates another thread or process, and a launched program's
// exec that came in that instant went unheld (a CI run: 0 held, 74 samples
// before the walker).
const volatile __u32 recorder_tgid = 0;

// Whether a stop of `p` goes unheard by its parent: the parent is the
// recorder, or SIGCHLD is ignored, handled with SA_NOCLDSTOP, or left at
// its default and not blocked (a parent that blocks it reads it through
// signalfd or sigwaitinfo). A parent that hears stops may take one for the
// child's end: perf record then stops reading its rings and loses every
// sample of its workload.
static __always_inline int parent_deaf_to_stops(struct task_struct* p) {
  struct task_struct* parent = BPF_CORE_READ(p, real_parent);
  if (parent && recorder_tgid != 0 && BPF_CORE_READ(parent, tgid) == recorder_tgid) return 1;
  struct sighand_struct* hand = parent ? BPF_CORE_READ(parent, sighand) : 0;
  if (!hand) return 0;
  __u64 handler = 0, flags = 0;
  if (bpf_core_read(&handler, sizeof(handler), &hand->action[17 - 1].sa.sa_handler) != 0 ||
      bpf_core_read(&flags, sizeof(flags), &hand->action[17 - 1].sa.sa_flags) != 0)
    return 0;
  if (handler == 1 /* SIG_IGN */ || (flags & 1 /* SA_NOCLDSTOP */)) return 1;
  if (handler != 0 /* SIG_DFL */) return 0;
  __u64 blocked = 0;
  if (bpf_core_read(&blocked, sizeof(blocked), &parent->blocked.sig[0]) != 0) return 0;
  return (blocked & (1ull << (17 - 1))) == 0;
}

// Each runtime's maps follow execs, exits and forks (runtimes.bpf.h); the
// execs of followed processes also go to user space, and one that a
// runtime needs laid out first is held: stopped (SIGSTOP, before its first
// instruction) until user space has laid it out and continues it, unless
// its parent would hear of the stop.
SEC("tp_btf/sched_process_exec")
int BPF_PROG(runtime_exec, struct task_struct* p) {
  __u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
  const int wanted = runtimes_exec(p, tgid, tid);
  const int deaf = wanted && parent_deaf_to_stops(p);
  if (!followed_tgid(tgid)) return 0;
  // Room first: a process is held only when user space will hear of it.
  struct runtime_exec_event* e = bpf_ringbuf_reserve(&execs, sizeof(*e), 0);
  if (!e) return 0;
  e->tgid = tgid;
  e->held = 0;
  e->unheld = 0;
  e->reserved = 0;
  if (wanted && !deaf) {
    e->unheld = 1;
  } else if (wanted) {
    const long sent = bpf_send_signal(19 /* SIGSTOP */);
    e->held = sent == 0;
    e->unheld = (__s32)sent;
  }
  bpf_ringbuf_submit(e, 0);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(runtime_exit, struct task_struct* p, bool group_dead) {
  runtimes_exit(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, pid), group_dead);
  forget_if_group_dead(p, group_dead);
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(runtime_fork, struct task_struct* parent, struct task_struct* child) {
  __u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
  if (ptgid == ctgid) return 0;  // a thread
  runtimes_fork(ptgid, ctgid);
  return 0;
}
