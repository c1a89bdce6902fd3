// Events that did not fit in a program's ring buffer: counted per CPU in
// the map `lost`, never silently gone; the loader adds the CPUs' counts
// (ReadPerCpu). Include once per BPF object, after the libbpf headers.
#ifndef MICROSCOPE_BPF_LOST_COUNT_H
#define MICROSCOPE_BPF_LOST_COUNT_H

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lost SEC(".maps");

static __always_inline void count_lost(void) {
  __u32 zero = 0;
  __u64 *n = bpf_map_lookup_elem(&lost, &zero);
  if (n) *n += 1;
}

#endif
