/* The V8 walker's maps and records, shared by its BPF walk
 * (node_walk.bpf.h) and its loader (walker.cc). Plain fixed-width C: both compilers must
 * lay it out alike. */
#ifndef MICROSCOPE_BPF_NODE_H
#define MICROSCOPE_BPF_NODE_H

#include "bpf/runtime_ids.h"
#include "bpf/walk.h"

/* JavaScript frames a walk has room for (struct v8_frame is 56 bytes); a
 * walk keeps at most its header's bound (bpf/walk.h) and follows at most
 * twice as many frame pointers (native and typed frames lie between). */
#define MICROSCOPE_V8_MAX_FRAMES (MICROSCOPE_WALK_ROOM / 56)
#define MICROSCOPE_V8_STEPS_PER_FRAME 2

/* What the walk reads in one process's V8 (its image's v8dbg_ symbols),
 * set by the loader when the image is mapped. */
#define MICROSCOPE_V8_FRAME_WORDS 8 /* read at once: fp - 56 up to fp + 8 */
struct v8_process {
  __u32 map_instance_type;   /* a Map's instance type (u16), from its start */
  __u16 type_function_first; /* instance types of JSFunctions */
  __u16 type_function_last;
  __u16 type_shared; /* SharedFunctionInfo's instance type */
  __u8 tag;          /* HeapObjectTag under HeapObjectTagMask */
  __u8 tag_mask;
  /* Frame slots, as indexes of the words read from fp - 56 (fp: index 7). */
  __u8 slot_function;
  __u8 slot_context; /* a JavaScript frame's context; a Smi marks other frames */
  __u8 slot_bytecode_array;
  __u8 slot_bytecode_offset;
  /* Object fields as indexes of the words read from an object's start. */
  __u8 word_map;
  __u8 word_shared; /* JSFunction -> SharedFunctionInfo */
  __u8 word_name;   /* SharedFunctionInfo -> name (or ScopeInfo) */
  __u8 word_script; /* SharedFunctionInfo -> Script */
  /* For the copies of functions that die young (struct v8_snapshot): a
   * ScopeInfo's instance type and layout (as V8Layout says), where a Smi's
   * value starts, and the Script's name field (a byte offset under
   * MICROSCOPE_V8_SNAP_OBJECT). */
  __u16 type_scope_info;
  __u8 scope_context_locals;
  __u8 scope_first_vars;
  __u8 smi_shift;   /* a Smi's value is the word shifted right by this */
  __u8 script_name; /* 0: not copied */
  __u8 reserved[6];
  /* Where the thread's current isolate pointer (V8's g_current_isolate_,
   * thread-local in the executable) lies from the thread pointer (fsbase);
   * 0: not known (V8 in a shared library, or no such symbol). */
  __s64 isolate_tls;
};
#define MICROSCOPE_V8_OBJECT_WORDS 6 /* read at once from an object's start */

/* v8_images: a V8 image file (its device, as the kernel numbers it:
 * major << 20 | minor, and inode) whose layout the loader knows; a process
 * that execs it is laid out at the exec, before its first sample. */
struct v8_image {
  __u64 dev;
  __u64 ino;
};

/* One JavaScript frame: the frame pointer it was found at and the words
 * read from it and its function, which user space proves before it names
 * the frame. */
struct v8_frame {
  __u64 fp;
  __u64 function;        /* the tagged JSFunction in the frame's function slot */
  __u64 shared;          /* its SharedFunctionInfo, */
  __u64 name;            /* the SFI's name (or ScopeInfo) */
  __u64 script;          /* and its Script, as the walk read them */
  __u64 bytecode_array;  /* the frame's bytecode array and offset slots (an */
  __u64 bytecode_offset; /* interpreted frame's; other words elsewhere) */
};

/* A function the walks had not seen (v8_seen: by process and
 * SharedFunctionInfo, with the name and script words the walk read as its
 * proof), copied by the walk that first meets it and sent to user space
 * (v8_snaps), so that a function that dies young (a process that exits
 * before user space reads it) is still named: the first bytes of each
 * object the naming reads (function_reader.h), and of the map that says
 * its type, by address. A region of size 0 was not read. User space reads
 * them as it reads the live process, proving each object by its map. */
#define MICROSCOPE_V8_SNAP_OBJECT 96 /* a SharedFunctionInfo, a Script */
#define MICROSCOPE_V8_SNAP_MAP 32    /* a map, up to its instance type */
#define MICROSCOPE_V8_SNAP_SCOPE 512 /* a ScopeInfo, up to its function name */
#define MICROSCOPE_V8_SNAP_STR 320   /* a string's header and characters */
#define MICROSCOPE_V8_SNAPS_PER_WALK 64
enum v8_snap_region {
  V8_SNAP_SHARED,
  V8_SNAP_SHARED_MAP,
  V8_SNAP_NAME, /* the SFI's name: a string, or its ScopeInfo */
  V8_SNAP_NAME_MAP,
  V8_SNAP_SCOPE_NAME, /* the ScopeInfo's function name */
  V8_SNAP_SCOPE_NAME_MAP,
  V8_SNAP_INFERRED, /* and its inferred name (read when the other is empty) */
  V8_SNAP_INFERRED_MAP,
  V8_SNAP_SCRIPT,
  V8_SNAP_SCRIPT_MAP,
  V8_SNAP_URL, /* the Script's name */
  V8_SNAP_URL_MAP,
  V8_SNAP_REGIONS
};
struct v8_seen_key {
  __u32 pid;
  __u32 reserved;
  __u64 shared;
};
struct v8_seen_value {
  __u64 name;
  __u64 script;
};

struct v8_snapshot {
  __u32 pid;
  __u32 copies; /* the copies of the walk that sent it so far (BPF's count) */
  __u64 shared; /* the proof fields: the SFI and the words the walk read */
  __u64 name;
  __u64 script;
  __u64 address[V8_SNAP_REGIONS]; /* each region's first byte in the process */
  __u16 size[V8_SNAP_REGIONS];
  __u8 shared_bytes[MICROSCOPE_V8_SNAP_OBJECT];
  __u8 shared_map[MICROSCOPE_V8_SNAP_MAP];
  __u8 name_bytes[MICROSCOPE_V8_SNAP_SCOPE];
  __u8 name_map[MICROSCOPE_V8_SNAP_MAP];
  __u8 scope_name[MICROSCOPE_V8_SNAP_STR];
  __u8 scope_name_map[MICROSCOPE_V8_SNAP_MAP];
  __u8 inferred[MICROSCOPE_V8_SNAP_STR];
  __u8 inferred_map[MICROSCOPE_V8_SNAP_MAP];
  __u8 script_bytes[MICROSCOPE_V8_SNAP_OBJECT];
  __u8 script_map[MICROSCOPE_V8_SNAP_MAP];
  __u8 url[MICROSCOPE_V8_SNAP_STR];
  __u8 url_map[MICROSCOPE_V8_SNAP_MAP];
  /* The BPF side's own scratch (its stack is too small): the key and
   * value it looks up and stores in v8_seen. */
  struct v8_seen_key key;
  struct v8_seen_value seen;
};
/* A thread's name as Node gives it (uv_thread_setname's argument, which
 * the system cuts to 15 bytes): a worker's `name` option on Node 24 on. */
#define MICROSCOPE_V8_THREAD_NAME 64
struct v8_thread_name {
  __u64 time; /* when it was given (CLOCK_MONOTONIC, the records' clock) */
  __u32 pid;
  __u32 tid;
  char name[MICROSCOPE_V8_THREAD_NAME];
};
/* walk_header.status of a V8 walk */
#define MICROSCOPE_V8_WALKED 0     /* the frame-pointer chain ended */
#define MICROSCOPE_V8_TRUNCATED 1  /* more frames (or steps) than the bounds */
#define MICROSCOPE_V8_UNREADABLE 2 /* a frame pointer's words failed to read */

/* A V8 walk (bpf/walk.h): the header's context[1] is the thread's current
 * isolate (0: none or not known); with MICROSCOPE_V8_INTERPRETER in its
 * flags, the sampled thread's r12 was the innermost frame's bytecode array
 * and context[0] is its r9 (the interpreter's registers: the bytecode
 * array and the offset of the bytecode whose handler runs, as the frame's
 * offset slot keeps it). Only walks with a frame are sent. */
#define MICROSCOPE_V8_INTERPRETER 1
/* Otherwise, with MICROSCOPE_V8_TOP in its flags, context[0] is the word on
 * top of the sampled thread's stack: the return address into the innermost
 * frame's code when the sample is in a builtin that made no frame of its own
 * (V8's profiler takes it so), to be proved by that code. */
#define MICROSCOPE_V8_TOP 2
struct v8_walk {
  struct walk_header h;
  struct v8_frame frames[MICROSCOPE_V8_MAX_FRAMES];
};

#endif
