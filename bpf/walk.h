/* The one record every runtime's BPF walker writes (bpf/runtimes.bpf.h),
 * at a sample (into the sample's own ring, just before the sample), an
 * off-CPU interval or a slow system call (inside their events): a header
 * all runtimes share (with the runtime's number, bpf/runtime_ids.h), then
 * `nframes` frames of the runtime's own layout,
 * `frame_size` bytes each, leaf first. User space reads the header once
 * (src/record/walk_record.h) and hands the frames to the runtime whose
 * number it carries. Plain fixed-width C: both compilers must lay it out
 * alike. */
#ifndef MICROSCOPE_BPF_WALK_H
#define MICROSCOPE_BPF_WALK_H

#define MICROSCOPE_WALK_MAGIC 0x6b6c6177u /* "walk", record version 1 */

/* Bytes of frames a walk has room for: each runtime's frame bound is this
 * over its frame's size. */
#define MICROSCOPE_WALK_ROOM 4096

struct walk_header {
  __u32 magic; /* MICROSCOPE_WALK_MAGIC; 0: no walk */
  __u8 runtime;
  __u8 status; /* the runtime's own: why the walk ended */
  __u16 nframes;
  __u32 pid;
  __u32 tid;
  __u16 frame_size;
  __u8 flags; /* the runtime's own */
  __u8 reserved[5];
  __u64 context[2]; /* the runtime's own (CPython: the thread state; V8: sp, isolate) */
};

/* Any runtime's walk, as the programs that take stacks hold one. */
struct runtime_walk {
  struct walk_header h;
  __u8 frames[MICROSCOPE_WALK_ROOM];
};

#define MICROSCOPE_WALK_FIXED sizeof(struct walk_header)

#endif
