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

#endif
