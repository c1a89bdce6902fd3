/* The stand-in runtime's layouts (tests/runtimes/toy): what its program
 * keeps in memory (toy_vm), what its BPF walk keeps per process and writes
 * per frame, shared by toy_walk.bpf.h, source.cc and program.c. Plain
 * fixed-width C: all three compilers must lay it out alike. */
#ifndef MICROSCOPE_TOY_H
#define MICROSCOPE_TOY_H

#define TOY_MAGIC 0x21796f74u /* "toy!" */
#define TOY_MAX_FRAMES 32

/* The program's one interpreter state, at its symbol toy_vm: `depth`
 * functions running, their names' addresses outermost first. */
struct toy_vm {
  __u32 magic;
  __u32 depth;
  __u64 names[TOY_MAX_FRAMES];
};

/* toy_processes: where a process's toy_vm is. */
struct toy_process {
  __u64 vm;
};

/* A frame of the walk record (bpf/walk.h): the function's name's address.
 * The toy writes them outermost first, as its stack holds them. */
struct toy_frame {
  __u64 name;
};

/* walk_header.status */
#define TOY_WALKED 0
#define TOY_UNREADABLE 1 /* toy_vm not readable, or not a toy_vm */
#define TOY_TOO_DEEP 2   /* more than TOY_MAX_FRAMES: the outermost kept */

#endif
