/* Process exits, shared by bpf/exits.bpf.c and its loader
 * (src/record/bpf_exits.cc). Plain fixed-width C. */
#ifndef MICROSCOPE_BPF_EXITS_H
#define MICROSCOPE_BPF_EXITS_H

/* The end of a followed process: its last thread left. */
struct exit_event {
  __u64 time_ns;   /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
  __u32 pid;       /* the process (tgid) */
  __s32 exit_code; /* as wait() reports it: status << 8, or the signal (| 0x80 with a core) */
};

/* A thread of a followed process leaves (with thread_times, record
 * --level 0): what the scheduler counted for it over its life, read from
 * its task_struct at sched_process_exit. */
struct thread_end_event {
  __u64 time_ns;      /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
  __u64 start_ns;     /* task->start_time: its fork (CLOCK_MONOTONIC) */
  __u64 on_cpu_ns;    /* task->se.sum_exec_runtime */
  __u64 run_delay_ns; /* task->sched_info.run_delay: runnable, waiting for a CPU */
  __u64 timeslices;   /* task->sched_info.pcount: times it ran on a CPU */
  __u64 voluntary;    /* task->nvcsw: switches out by blocking */
  __u32 pid;          /* the process (tgid) */
  __u32 tid;
};

#endif
