// The budget's sample gate (record --budget): the one program on the
// sampling events (PERF_EVENT_IOC_SET_BPF; threads that inherit the events
// run it too). It keeps one sample in gate_config.keep_one_in, chosen at
// random so that no rhythm of the program lines up with it, and drops the
// rest before the kernel writes them (returning 0): no ring space, no stack
// copy, nothing to unwind. A kept sample goes on to the runtimes' walker
// when one is loaded (a tail call through gate_next) and walks are on.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

struct gate_config {
  __u32 keep_one_in;  // 0 or 1: every sample
  __u32 walks;        // 0: kept samples skip the runtime walker
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct gate_config);
} gate_config SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} gate_next SEC(".maps");

// Samples kept and dropped, per CPU.
struct gate_count {
  __u64 kept;
  __u64 dropped;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct gate_count);
} gate_counts SEC(".maps");

static __always_inline void count(int dropped) {
  __u32 zero = 0;
  struct gate_count* n = bpf_map_lookup_elem(&gate_counts, &zero);
  if (!n) return;
  if (dropped)
    n->dropped += 1;
  else
    n->kept += 1;
}

SEC("perf_event")
int gate(struct bpf_perf_event_data* ctx) {
  __u32 zero = 0;
  struct gate_config* c = bpf_map_lookup_elem(&gate_config, &zero);
  __u32 keep = c ? c->keep_one_in : 1;
  if (keep > 1 && bpf_get_prandom_u32() % keep != 0) {
    count(1);
    return 0;
  }
  count(0);
  if (!c || c->walks) bpf_tail_call(ctx, &gate_next, 0);
  return 1;  // no walker, or walks off: the sample goes on alone
}
