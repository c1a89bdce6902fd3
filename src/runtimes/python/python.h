/* The CPython walker's maps and records, shared by its BPF walk
 * (python_walk.bpf.h) and its loader (walker.cc). Plain fixed-width C: both
 * compilers must lay it out alike. */
#ifndef MICROSCOPE_BPF_PYTHON_H
#define MICROSCOPE_BPF_PYTHON_H

#include "bpf/runtime_ids.h"
#include "bpf/walk.h"

/* Python frames a walk has room for (struct py_frame is 32 bytes); a walk
 * keeps at most its header's bound (bpf/walk.h). */
#define MICROSCOPE_PY_MAX_FRAMES (MICROSCOPE_WALK_ROOM / 32)
#define MICROSCOPE_PY_SEARCH 64 /* thread states (and interpreters) searched */
#define MICROSCOPE_PY_ABSENT 0xffffffffu
/* Bytes read at once from a frame (from its start) and from a code object
 * (from code_lo): every offset the walker reads there lies inside. */
#define MICROSCOPE_PY_CHUNK 128

/* Where one process's interpreter keeps what the walk reads (its release's
 * Layout), set by the loader when the interpreter module is mapped; offsets
 * are MICROSCOPE_PY_ABSENT where the release has no such field. */
struct py_process {
  __u64 runtime;   /* address of _PyRuntime */
  __u64 pidns_dev; /* the process's pid namespace (0: the recorder's own) */
  __u64 pidns_ino;
  __u32 generation; /* bumped by each refresh of the thread map */
  __u32 runtime_interpreters_head;
  __u32 interp_next;
  __u32 interp_threads_head;
  __u32 thread_next;
  __u32 thread_native_id;
  __u32 thread_current_frame; /* 3.13 on */
  __u32 thread_cframe;        /* 3.11, 3.12: through the _PyCFrame */
  __u32 cframe_current_frame;
  __u32 frame_previous;
  __u32 frame_executable;
  __u32 frame_instr_ptr;
  __u32 frame_owner;
  __u32 frame_is_entry; /* 3.11 */
  __u32 code_lo;        /* the least of the three code offsets below */
  __u32 code_firstlineno;
  __u32 code_filename;
  __u32 code_qualname;
  __u32 code_adaptive;
  /* Owners of frames that run no Python code (3.12 on: the C stack's shim,
   * which ends an activation; 3.14 on: the interpreter's base frame);
   * 0xff: none. */
  __u8 owner_cstack;
  __u8 owner_interpreter;
  __u8 gil; /* MICROSCOPE_PY_GIL_*: where the GIL's holder is */
  __u8 reserved;
  __u32 thread_interp;
  __u32 gil_holder;  /* from the runtime (3.11), the interpreter (3.13 on) or the GIL (3.12) */
  __u32 gil_locked;  /* an int, 1 when held (not 3.11) */
  __u32 gil_pointer; /* 3.12: the interpreter's pointer to its GIL */
  /* Where a code object keeps its line table (a bytes object), inside its
   * first MICROSCOPE_PY_SNAP_CODE bytes; MICROSCOPE_PY_ABSENT: code objects
   * are not copied (struct py_code_snapshot). */
  __u32 code_linetable;
  __u32 reserved2;
};
#define MICROSCOPE_PY_GIL_NONE 0
#define MICROSCOPE_PY_GIL_RUNTIME 1    /* 3.11: the holder's thread state in _PyRuntime */
#define MICROSCOPE_PY_GIL_INTERP 2     /* 3.13 on: in the interpreter's own GIL */
#define MICROSCOPE_PY_GIL_INTERP_PTR 3 /* 3.12: behind the interpreter's ceval.gil */

/* py_images: an interpreter executable (its device, as the kernel numbers
 * it: major << 20 | minor, and inode) the loader laid a process out for;
 * a process that execs it is laid out at the exec, before its first
 * sample: `process` with its runtime at the link-time address, moved by
 * the exec's bias (its mm's start_code less text_vaddr, the least address
 * of the file's executable segments). */
struct py_image {
  __u64 dev;
  __u64 ino;
};
struct py_image_layout {
  struct py_process process;
  __u64 text_vaddr;
};

/* py_threads: a thread's state, refreshed from user space, or found by the
 * walk (tstate 0: searched in vain at this generation). */
struct py_thread {
  __u64 tstate;
  __u64 native_id;   /* as the target's pid namespace sees it */
  __u64 searched_ns; /* tstate 0: when the search found none (tried again 10 ms on) */
  __u32 generation;
  __u32 reserved;
};
#define MICROSCOPE_PY_RESEARCH_NS 10000000ull

/* walk_header.status of a Python walk */
#define MICROSCOPE_PY_WALKED 0     /* frames[0..nframes) are the thread's */
#define MICROSCOPE_PY_NO_THREAD 1  /* no thread state has this thread's id */
#define MICROSCOPE_PY_SEVERAL 2    /* more than one thread state has it */
#define MICROSCOPE_PY_PAST_BOUND 3 /* not among the thread states searched */
#define MICROSCOPE_PY_UNREADABLE 4 /* target memory failed to read (frames so far kept) */
#define MICROSCOPE_PY_TRUNCATED 5  /* more frames than the walk keeps */

/* py_frame.instr: the instruction's byte offset from the code's first
 * instruction (co_code_adaptive), or MICROSCOPE_PY_NO_INSTR; ENTRY marks
 * the last (outermost) frame of an eval loop activation (3.11: is_entry).
 * A frame with SHIM is not Python code but the shim an activation of the
 * eval loop pushed below its frames (3.12 on): `code` is the shim's own
 * address, a local of that activation's native frame. */
#define MICROSCOPE_PY_ENTRY 0x80000000u
#define MICROSCOPE_PY_SHIM 0x40000000u
#define MICROSCOPE_PY_NO_INSTR 0x3fffffffu

struct py_frame {
  __u64 code;        /* the code object, as the frame names it */
  __u64 qualname;    /* and, as the walk read them, its co_qualname, */
  __u64 filename;    /* co_filename */
  __s32 firstlineno; /* and co_firstlineno: the proof that user space reads the same object */
  __u32 instr;
};

/* A Python walk (bpf/walk.h): the header's context[0] is the thread state,
 * its flags MICROSCOPE_PY_GIL_KNOWN and MICROSCOPE_PY_HOLDS_GIL. */
struct py_walk {
  struct walk_header h;
  struct py_frame frames[MICROSCOPE_PY_MAX_FRAMES];
};

#define MICROSCOPE_PY_GIL_KNOWN 1
#define MICROSCOPE_PY_HOLDS_GIL 2

/* A code object the walks had not seen (py_seen: by process and address,
 * with the proof fields), copied by the walk that first meets it and sent
 * to user space (py_snaps), so that code that dies young (a module's body
 * freed after its import, a process that exits) is still named: the first
 * bytes of the code object and of its co_qualname, co_filename and
 * co_linetable objects, as the walk read them (each size 0: unreadable).
 * User space reads them as it reads the live process, proving each object
 * by its type. */
#define MICROSCOPE_PY_SNAP_CODE 256
#define MICROSCOPE_PY_SNAP_STR 320
#define MICROSCOPE_PY_SNAP_TABLE 512
#define MICROSCOPE_PY_SNAPS_PER_WALK 64 /* code objects copied per walk at most */
struct py_code_snapshot {
  __u32 pid;
  __u16 code_size;
  __u16 qualname_size;
  __u16 filename_size;
  __u16 table_size;
  __s32 first_line; /* co_firstlineno, as the walk read it: a proof field */
  __u64 code;
  __u64 qualname;
  __u64 filename;
  __u64 table;
  __u8 code_bytes[MICROSCOPE_PY_SNAP_CODE];
  __u8 qualname_bytes[MICROSCOPE_PY_SNAP_STR];
  __u8 filename_bytes[MICROSCOPE_PY_SNAP_STR];
  __u8 table_bytes[MICROSCOPE_PY_SNAP_TABLE];
};
struct py_seen_key {
  __u32 pid;
  __u32 reserved;
  __u64 code;
};
struct py_seen_value {
  __u64 qualname;
  __u64 filename;
  __s32 first_line;
  __u32 reserved;
};

#endif
