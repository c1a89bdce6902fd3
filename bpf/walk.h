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
 * over its frame's size (JavaScript 1,168 frames, Python 2,045). A walk at
 * a sample goes as one BPF output record, whose perf record (header,
 * identifier, tid, time, cpu, raw size: 44 bytes) has a 16-bit size: the
 * header and frames must fit in 65,484 bytes. */
#define MICROSCOPE_WALK_ROOM 65440

struct walk_header {
  __u32 magic; /* MICROSCOPE_WALK_MAGIC; 0: no walk */
  __u8 runtime;
  __u8 status; /* the runtime's own: why the walk ended */
  __u16 nframes;
  __u32 pid;
  __u32 tid;
  __u16 frame_size;
  __u8 flags; /* the runtime's own */
  __u8 reserved;
  __u16 bound; /* the most frames this walk could keep */
  __u8 reserved2[2];
  __u64 context[2]; /* the runtime's own (CPython: the thread state; V8: r9 or 0, isolate) */
};

/* Any runtime's walk, as the programs that take stacks hold one. */
struct runtime_walk {
  struct walk_header h;
  __u8 frames[MICROSCOPE_WALK_ROOM];
};

#define MICROSCOPE_WALK_FIXED sizeof(struct walk_header)

/* The frames a walk keeps unless the loader says otherwise (walk_max_frames in
 * bpf/walk_thread.h, set from record --runtime-frames). */
#define MICROSCOPE_WALK_FRAMES_DEFAULT 1024

/* An exec of a followed process, as the sampler tells user space. */
struct runtime_exec_event {
  __u32 tgid;
  __u32 held; /* 1: stopped (SIGSTOP) until user space lays it out and continues it */
  /* Why a process a runtime wanted held was not: 1 its parent hears its
     stops, else bpf_send_signal's error (negative); 0 when held or not wanted. */
  __s32 unheld;
  __u32 reserved;
};

#endif
