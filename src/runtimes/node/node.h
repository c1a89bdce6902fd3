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
  __u8 reserved[4];
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

/* walk_header.status of a V8 walk */
#define MICROSCOPE_V8_WALKED 0     /* the frame-pointer chain ended */
#define MICROSCOPE_V8_TRUNCATED 1  /* more frames (or steps) than the bounds */
#define MICROSCOPE_V8_UNREADABLE 2 /* a frame pointer's words failed to read */

/* A V8 walk (bpf/walk.h): the header's context[0] is the user stack
 * pointer the walk started from, context[1] the thread's current isolate
 * (0: none or not known). Only walks with a frame are sent. */
struct v8_walk {
  struct walk_header h;
  struct v8_frame frames[MICROSCOPE_V8_MAX_FRAMES];
};

#endif
