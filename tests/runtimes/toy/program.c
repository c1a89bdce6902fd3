/* The stand-in runtime's program (tests/runtimes/toy): a toy interpreter
 * whose functions are names on a shadow stack (toy_vm, which the toy's BPF
 * walk reads), run by toy_eval, one native activation per toy call. A fixed
 * amount of work: main() calls outer() ROUNDS times (argv[1], default 300),
 * and outer() runs work_a() three times and work_b() once, each the same
 * loop; then sleeper() sleeps 20 x 10 ms in nanosleep. */
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "toy.h"

struct toy_vm toy_vm = {TOY_MAGIC, 0, {0}};

enum { MAIN, OUTER, WORK_A, WORK_B, SLEEPER };
static const char* const kNames[] = {"main", "outer", "work_a", "work_b", "sleeper"};
static long rounds = 300;
static volatile uint64_t sink;

__attribute__((noinline)) void toy_eval(int fn);

static inline __attribute__((always_inline)) void call(int fn) {
  toy_vm.names[toy_vm.depth] = (__u64)(uintptr_t)kNames[fn];
  __atomic_store_n(&toy_vm.depth, toy_vm.depth + 1, __ATOMIC_RELEASE);
  toy_eval(fn);
  __atomic_store_n(&toy_vm.depth, toy_vm.depth - 1, __ATOMIC_RELEASE);
}

__attribute__((noinline)) void toy_eval(int fn) {
  switch (fn) {
    case MAIN:
      for (long r = 0; r < rounds; ++r) call(OUTER);
      call(SLEEPER);
      break;
    case OUTER:
      for (int i = 0; i < 3; ++i) call(WORK_A);
      call(WORK_B);
      break;
    case WORK_A:
    case WORK_B:
      for (uint64_t i = 0; i < 250000; ++i) sink += i;
      break;
    case SLEEPER:
      for (int i = 0; i < 20; ++i) {
        struct timespec ms10 = {0, 10 * 1000 * 1000};
        nanosleep(&ms10, NULL);
      }
      break;
  }
  __asm__ volatile("" ::: "memory");  // no tail call: one activation per toy call
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atol(argv[1]);
  call(MAIN);
  printf("toy: %ld rounds\n", rounds);
  return 0;
}
