/* microscope probes: a program's own zones, marks, labels and counters, on
 * the same timeline as the samples `microscope record --probes` takes.
 *
 * Header-only C11 (and C++; MICROSCOPE_ZONE is a scoped zone there). Link
 * with -pthread on C libraries older than glibc 2.34.
 *
 *   MICROSCOPE_ZONE_BEGIN(z, "parse");  ...  MICROSCOPE_ZONE_END(z);
 *   MICROSCOPE_ZONE("parse");                  (C++: ends with the scope)
 *   MICROSCOPE_MARK("frame done");
 *   MICROSCOPE_LABEL("route", "/api/users", 10);   MICROSCOPE_LABEL_INT("request", 42);
 *   MICROSCOPE_LABEL_CLEAR("route");
 *   MICROSCOPE_COUNTER("queue depth", 17.0);
 *
 * Names are string literals: each use is a static site, kept in the ELF
 * section "microscope_sites" with its kind, name, file and line, where the
 * recorder finds it without running anything. Sites named at run time
 * (interpreters, generated names) come from microscope_site_define, a table
 * of MICROSCOPE_RUNTIME_SITES sites per program module.
 *
 * Cost: a site no recorder enabled is one byte load and a branch. An
 * enabled site writes 2 to 3 words into a ring of its thread (allocated on
 * its first record and never freed) and reads the time stamp counter. No
 * call ever blocks or fails: a full ring drops the record and counts it,
 * and when the recorder has stopped answering for its timeout, the module
 * switches every site off by itself.
 *
 * Define MICROSCOPE_DISABLE to compile every macro to nothing.
 *
 * The layout below is read by the recorder from another process: it is an
 * ABI, versioned by MICROSCOPE_ABI_VERSION, and the recorder refuses a
 * module whose version it does not know. docs/probes.md describes it. */
#ifndef MICROSCOPE_H_
#define MICROSCOPE_H_

#include <stddef.h>
#include <stdint.h>

#define MICROSCOPE_ABI_VERSION 1u

/* Site kinds (plain digits: the assembler reads them too). */
#define MICROSCOPE_KIND_ZONE 1
#define MICROSCOPE_KIND_MARK 2
#define MICROSCOPE_KIND_LABEL 3
#define MICROSCOPE_KIND_COUNTER 4

/* A site: 16 bytes, then its name and file, each ending in NUL; `size` is
 * the whole entry's, a multiple of 8. `enabled` is written by the recorder. */
struct microscope_site {
  uint32_t magic; /* MICROSCOPE_SITE_MAGIC */
  uint8_t kind;
  uint8_t enabled;
  uint16_t size;
  uint32_t line;
  uint16_t name_len; /* bytes, without the NUL */
  uint16_t file_len;
} __attribute__((aligned(8)));
#define MICROSCOPE_SITE_MAGIC 0x5453534du /* "MSST" */

#if !defined(MICROSCOPE_DISABLE) || defined(MICROSCOPE_ABI_ONLY)

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Under strict -std=c11 the C library hides what POSIX and Linux add:
 * what this header uses of it, declared with the C library's own types. */
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS 0x20
#endif
#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC 1
int clock_gettime(int, struct timespec*); /* clockid_t is int */
#endif
long syscall(long, ...);
int nanosleep(const struct timespec*, struct timespec*);

/* Record operations: the top byte but one of a record's first word. */
#define MICROSCOPE_OP_BEGIN 1u
#define MICROSCOPE_OP_END 2u
#define MICROSCOPE_OP_MARK 3u
#define MICROSCOPE_OP_COUNTER 4u     /* + the value as an IEEE double */
#define MICROSCOPE_OP_LABEL_INT 5u   /* + the value */
#define MICROSCOPE_OP_LABEL_TEXT 6u  /* + byte count, then the bytes in words */
#define MICROSCOPE_OP_LABEL_CLEAR 7u
#define MICROSCOPE_OP_THREAD 8u /* site 0; + tid: the ring's thread from here on */

#define MICROSCOPE_CLOCK_TSC 1u       /* x86-64 time stamp counter */
#define MICROSCOPE_CLOCK_MONOTONIC 2u /* CLOCK_MONOTONIC nanoseconds */

#define MICROSCOPE_RING_WORDS 32768u /* 256 KiB of records per thread */
#define MICROSCOPE_RUNTIME_SITES 4096u
#define MICROSCOPE_RUNTIME_SITE_SIZE 256u
#define MICROSCOPE_LABEL_TEXT_MAX 120u /* bytes of a label's text kept */
#define MICROSCOPE_SELECTION_SIZE 512u

/* A thread's ring: a 256-byte header, then MICROSCOPE_RING_WORDS words. A
 * record is a header word (bits 0-47: the site's address; 48-55: the
 * operation; 56-63: the record's words), the time, then its operands. The
 * thread writes words at `head` and publishes them by storing `head`; the
 * recorder reads up to `head` and stores `tail`. Counts run on; a word's
 * place is its count modulo the size. */
struct microscope_ring {
  uint64_t magic; /* MICROSCOPE_RING_MAGIC */
  uint64_t next;  /* the module's next ring (address), 0 at the end */
  uint32_t words;
  uint32_t owner; /* the tid holding it; 0: free for another thread */
  uint32_t clock; /* MICROSCOPE_CLOCK_* */
  uint32_t reserved;
  uint64_t dropped; /* records the thread could not write (ring full) */
  uint8_t pad0[24];
  uint64_t head;
  uint8_t pad1[56];
  uint64_t tail;
  uint8_t pad2[120];
};
#define MICROSCOPE_RING_MAGIC 0x474e495250435353ull /* "SSCPRING" */

/* One per module (executable or shared library) that uses this header, in
 * the ELF section "microscope_ctl", where the recorder finds it. */
struct microscope_ctl {
  uint64_t magic; /* MICROSCOPE_CTL_MAGIC */
  uint32_t version;
  uint32_t size;          /* sizeof(struct microscope_ctl) */
  uint64_t rings;         /* the first ring (address), 0: none yet */
  uint64_t runtime_sites; /* the run-time site table (address), 0: none yet */
  uint32_t runtime_count; /* run-time sites claimed (may pass the table: refused) */
  uint32_t state;         /* MICROSCOPE_STATE_* */
  uint64_t threads_refused; /* threads that got no ring (out of memory) */
  /* Written by the recorder. */
  uint64_t heartbeat; /* CLOCK_MONOTONIC ns of the recorder's last drain */
  uint32_t timeout_ms; /* reader loss: no heartbeat for this long */
  uint32_t reader;     /* the recorder's pid, 0: none */
  /* Sites to enable as they are defined: names and NAME* prefixes, each
   * ending in '\n'; "*\n" for all. */
  char selection[MICROSCOPE_SELECTION_SIZE];
};
#define MICROSCOPE_CTL_MAGIC 0x4c544350435353ull /* "SSCPCTL" */
#define MICROSCOPE_STATE_IDLE 0u
#define MICROSCOPE_STATE_RECORDING 1u /* set by the recorder */
#define MICROSCOPE_STATE_LOST 2u      /* set here: the recorder stopped answering */

#ifndef MICROSCOPE_ABI_ONLY

#define MICROSCOPE__HIDDEN __attribute__((weak, visibility("hidden")))

MICROSCOPE__HIDDEN struct microscope_ctl microscope__ctl __attribute__((section("microscope_ctl"), used)) = {
    MICROSCOPE_CTL_MAGIC, MICROSCOPE_ABI_VERSION, sizeof(struct microscope_ctl), 0, 0, 0, 0, 0, 0, 0, 0, {0}};
MICROSCOPE__HIDDEN __thread struct microscope_ring* microscope__ring;
MICROSCOPE__HIDDEN pthread_once_t microscope__once = PTHREAD_ONCE_INIT;
MICROSCOPE__HIDDEN pthread_key_t microscope__key;

/* The module's static sites, when it has any. */
extern struct microscope_site __start_microscope_sites[] __attribute__((weak, visibility("hidden")));
extern struct microscope_site __stop_microscope_sites[] __attribute__((weak, visibility("hidden")));

static inline uint64_t microscope__monotonic(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#if defined(__x86_64__)
#define MICROSCOPE__CLOCK MICROSCOPE_CLOCK_TSC
static inline uint64_t microscope__now(void) { return __builtin_ia32_rdtsc(); }
#else
#define MICROSCOPE__CLOCK MICROSCOPE_CLOCK_MONOTONIC
static inline uint64_t microscope__now(void) { return microscope__monotonic(); }
#endif

static inline int microscope_site_enabled(const struct microscope_site* site) {
  return site != NULL && __atomic_load_n(&site->enabled, __ATOMIC_RELAXED) != 0;
}

/* Sets each static site of this module on or off, as `on` says of it. */
static inline void microscope__set_static_sites(int (*on)(const struct microscope_site*)) {
  char* s = (char*)__start_microscope_sites;
  char* end = (char*)__stop_microscope_sites;
  while (s != NULL && s + sizeof(struct microscope_site) <= end) {
    struct microscope_site* site = (struct microscope_site*)s;
    if (site->magic != MICROSCOPE_SITE_MAGIC || site->size < sizeof(struct microscope_site)) {
      s += 8; /* padding between objects' sections */
      continue;
    }
    __atomic_store_n(&site->enabled, (uint8_t)(on(site) != 0), __ATOMIC_RELAXED);
    s += site->size;
  }
}

static inline int microscope__never(const struct microscope_site* site) {
  (void)site;
  return 0;
}

/* Switches off every site of this module: the recorder is gone. */
static inline void microscope__switch_off(void) {
  __atomic_store_n(&microscope__ctl.state, MICROSCOPE_STATE_LOST, __ATOMIC_RELAXED);
  microscope__set_static_sites(microscope__never);
  char* table = (char*)(uintptr_t)__atomic_load_n(&microscope__ctl.runtime_sites, __ATOMIC_ACQUIRE);
  uint32_t count = __atomic_load_n(&microscope__ctl.runtime_count, __ATOMIC_ACQUIRE);
  if (count > MICROSCOPE_RUNTIME_SITES) count = MICROSCOPE_RUNTIME_SITES;
  for (uint32_t i = 0; table != NULL && i < count; ++i) {
    struct microscope_site* site = (struct microscope_site*)(table + i * MICROSCOPE_RUNTIME_SITE_SIZE);
    __atomic_store_n(&site->enabled, 0, __ATOMIC_RELAXED);
  }
}

static inline void microscope__release(void* ring) {
  struct microscope_ring* r = (struct microscope_ring*)ring;
  __atomic_store_n(&r->owner, 0, __ATOMIC_RELEASE);
  microscope__ring = NULL;
}

/* After fork the child's rings are copies the recorder already read: the
 * child starts a list of its own. */
static inline void microscope__forked(void) {
  __atomic_store_n(&microscope__ctl.rings, 0, __ATOMIC_RELAXED);
  microscope__ring = NULL;
}

/* Whether a recorder is listening to this module now: a program that must
 * not lose its first records waits for it (the recorder finds a launched
 * program's modules some milliseconds after they are mapped). */
static inline int microscope_recording(void) {
  if (__atomic_load_n(&microscope__ctl.state, __ATOMIC_ACQUIRE) != MICROSCOPE_STATE_RECORDING) return 0;
  const uint64_t beat = __atomic_load_n(&microscope__ctl.heartbeat, __ATOMIC_RELAXED);
  const uint64_t timeout = (uint64_t)__atomic_load_n(&microscope__ctl.timeout_ms, __ATOMIC_RELAXED) * 1000000u;
  return microscope__monotonic() - beat <= timeout;
}

/* At exit, while a recorder listens, waits (200 ms at most) for it to take
 * what the rings hold: the process's memory goes with it. */
static inline void microscope__drain_at_exit(void) {
  for (int i = 0; i < 200 && microscope_recording(); ++i) {
    int pending = 0;
    const struct microscope_ring* r =
        (const struct microscope_ring*)(uintptr_t)__atomic_load_n(&microscope__ctl.rings, __ATOMIC_ACQUIRE);
    for (; r != NULL; r = (const struct microscope_ring*)(uintptr_t)r->next)
      pending |= __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) != __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    if (!pending) return;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

static inline void microscope__init_once(void) {
  pthread_key_create(&microscope__key, microscope__release);
  pthread_atfork(NULL, NULL, microscope__forked);
  atexit(microscope__drain_at_exit);
}

static inline uint64_t* microscope__words(struct microscope_ring* r) { return (uint64_t*)(r + 1); }

/* The ring is full: the record is dropped, and when the recorder has not
 * drained for its timeout, every site of the module goes off. */
static inline void microscope__full(struct microscope_ring* r) {
  __atomic_store_n(&r->dropped, r->dropped + 1, __ATOMIC_RELAXED);
  uint64_t beat = __atomic_load_n(&microscope__ctl.heartbeat, __ATOMIC_RELAXED);
  uint64_t timeout = (uint64_t)__atomic_load_n(&microscope__ctl.timeout_ms, __ATOMIC_RELAXED) * 1000000u;
  if (microscope__monotonic() - beat > timeout) microscope__switch_off();
}

/* Writes one record: header, time, then `count` operand words. */
static inline void microscope__put(struct microscope_ring* r, uint64_t site, uint64_t op, uint64_t time,
                                   const uint64_t* operands, uint64_t count) {
  const uint64_t words = 2 + count;
  const uint64_t head = r->head; /* only this thread writes it */
  if (__builtin_expect(head + words - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) > r->words, 0)) {
    microscope__full(r);
    return;
  }
  uint64_t* data = microscope__words(r);
  const uint64_t mask = r->words - 1;
  data[head & mask] = site | (op << 48) | (words << 56);
  data[(head + 1) & mask] = time;
  for (uint64_t i = 0; i < count; ++i) data[(head + 2 + i) & mask] = operands[i];
  __atomic_store_n(&r->head, head + words, __ATOMIC_RELEASE);
}

/* The calling thread's ring: a free one already drained, else a new one. */
static inline struct microscope_ring* microscope__claim(void) {
  pthread_once(&microscope__once, microscope__init_once);
  const uint32_t tid = (uint32_t)syscall(SYS_gettid);
  struct microscope_ring* r =
      (struct microscope_ring*)(uintptr_t)__atomic_load_n(&microscope__ctl.rings, __ATOMIC_ACQUIRE);
  for (; r != NULL; r = (struct microscope_ring*)(uintptr_t)r->next) {
    uint32_t free_owner = 0;
    if (__atomic_load_n(&r->owner, __ATOMIC_ACQUIRE) != 0 ||
        __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) != r->head)
      continue;
    if (__atomic_compare_exchange_n(&r->owner, &free_owner, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      break;
  }
  if (r == NULL) {
    const size_t bytes = sizeof(struct microscope_ring) + (size_t)MICROSCOPE_RING_WORDS * 8u;
    void* m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      __atomic_fetch_add(&microscope__ctl.threads_refused, 1, __ATOMIC_RELAXED);
      return NULL;
    }
    r = (struct microscope_ring*)m;
    r->words = MICROSCOPE_RING_WORDS;
    r->owner = tid;
    r->clock = MICROSCOPE__CLOCK;
    r->magic = MICROSCOPE_RING_MAGIC;
    uint64_t first = __atomic_load_n(&microscope__ctl.rings, __ATOMIC_RELAXED);
    do {
      r->next = first;
    } while (!__atomic_compare_exchange_n(&microscope__ctl.rings, &first, (uint64_t)(uintptr_t)r, 1,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
  }
  const uint64_t operand = tid;
  microscope__put(r, 0, MICROSCOPE_OP_THREAD, microscope__now(), &operand, 1);
  microscope__ring = r;
  pthread_setspecific(microscope__key, r);
  return r;
}

static inline void microscope__record(const struct microscope_site* site, uint64_t op, uint64_t time,
                                      const uint64_t* operands, uint64_t count) {
  struct microscope_ring* r = microscope__ring;
  if (__builtin_expect(r == NULL, 0)) {
    r = microscope__claim();
    if (r == NULL) return;
  }
  microscope__put(r, (uint64_t)(uintptr_t)site, op, time, operands, count);
}

/* A zone in progress: its site, and whether its beginning was recorded
 * (its end is recorded exactly when it was, so ends always have a begin). */
typedef struct {
  const struct microscope_site* site;
  int active;
} microscope_zone_ctx;

static inline microscope_zone_ctx microscope_zone_begin(const struct microscope_site* site) {
  microscope_zone_ctx ctx = {site, 0};
  if (__builtin_expect(microscope_site_enabled(site), 0)) {
    ctx.active = 1;
    microscope__record(site, MICROSCOPE_OP_BEGIN, microscope__now(), NULL, 0);
  }
  return ctx;
}

static inline void microscope_zone_end(microscope_zone_ctx ctx) {
  if (__builtin_expect(ctx.active, 0)) {
    microscope__record(ctx.site, MICROSCOPE_OP_END, microscope__now(), NULL, 0);
  }
}

static inline void microscope_mark(const struct microscope_site* site) {
  if (__builtin_expect(microscope_site_enabled(site), 0))
    microscope__record(site, MICROSCOPE_OP_MARK, microscope__now(), NULL, 0);
}

static inline void microscope_counter(const struct microscope_site* site, double value) {
  if (__builtin_expect(microscope_site_enabled(site), 0)) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    microscope__record(site, MICROSCOPE_OP_COUNTER, microscope__now(), &bits, 1);
  }
}

static inline void microscope_label_int(const struct microscope_site* site, int64_t value) {
  if (__builtin_expect(microscope_site_enabled(site), 0)) {
    const uint64_t operand = (uint64_t)value;
    microscope__record(site, MICROSCOPE_OP_LABEL_INT, microscope__now(), &operand, 1);
  }
}

/* The label's value is `size` bytes of `text` (the first
 * MICROSCOPE_LABEL_TEXT_MAX are kept). */
static inline void microscope_label_text(const struct microscope_site* site, const char* text, size_t size) {
  if (__builtin_expect(microscope_site_enabled(site), 0)) {
    uint64_t operands[1 + MICROSCOPE_LABEL_TEXT_MAX / 8];
    if (size > MICROSCOPE_LABEL_TEXT_MAX) size = MICROSCOPE_LABEL_TEXT_MAX;
    memset(operands, 0, sizeof(operands));
    operands[0] = size;
    memcpy(&operands[1], text, size);
    microscope__record(site, MICROSCOPE_OP_LABEL_TEXT, microscope__now(), operands, 1 + (size + 7) / 8);
  }
}

static inline void microscope_label_clear(const struct microscope_site* site) {
  if (__builtin_expect(microscope_site_enabled(site), 0))
    microscope__record(site, MICROSCOPE_OP_LABEL_CLEAR, microscope__now(), NULL, 0);
}

/* Whether the recorder's selection names `name`. */
static inline int microscope__selected(const char* name, size_t size) {
  const char* line = microscope__ctl.selection;
  const char* end = line + MICROSCOPE_SELECTION_SIZE;
  while (line < end && *line != '\0') {
    const char* stop = (const char*)memchr(line, '\n', (size_t)(end - line));
    if (stop == NULL) return 0;
    const size_t n = (size_t)(stop - line);
    if (n > 0 && line[n - 1] == '*') {
      if (size >= n - 1 && memcmp(name, line, n - 1) == 0) return 1;
    } else if (n == size && memcmp(name, line, n) == 0) {
      return 1;
    }
    line = stop + 1;
  }
  return 0;
}

/* A launched program's recorder (`record --probes SEL -- PROG`) sets
 * MICROSCOPE_PROBES_READER (its pid) and MICROSCOPE_PROBES (SEL) in the
 * program's environment: each module switches on the sites SEL names
 * before main, so that what they write before the recorder finds the
 * module (some milliseconds) waits in the rings for it. The recorder has
 * MICROSCOPE_EARLY_TIMEOUT_MS to come; after that a full ring switches the
 * module off, as when a recorder stops answering. */
#define MICROSCOPE_EARLY_TIMEOUT_MS 5000u
static inline int microscope__site_selected(const struct microscope_site* site) {
  return microscope__selected((const char*)(site + 1), site->name_len);
}
MICROSCOPE__HIDDEN void microscope__early(void) __attribute__((constructor));
MICROSCOPE__HIDDEN void microscope__early(void) {
  /* Once per module (each file that includes this header registers it). */
  if (__atomic_load_n(&microscope__ctl.state, __ATOMIC_ACQUIRE) != MICROSCOPE_STATE_IDLE ||
      __atomic_load_n(&microscope__ctl.reader, __ATOMIC_RELAXED) != 0)
    return;
  const char* reader = getenv("MICROSCOPE_PROBES_READER");
  const char* selection = getenv("MICROSCOPE_PROBES");
  if (reader == NULL || selection == NULL) return;
  char* end = NULL;
  const unsigned long pid = strtoul(reader, &end, 10);
  if (end == reader || *end != '\0' || pid == 0 || pid > 0x3fffffffu) return;
  /* A recorder long gone (the environment outlived it) is not waited for
   * (EPERM: it runs, as another user). */
  if (syscall(SYS_kill, (long)pid, 0L) != 0 && errno == ESRCH) return;
  /* SEL as record --probes takes it: all, or names and NAME* prefixes
   * between commas; here one per line, as the recorder writes them. */
  char lines[MICROSCOPE_SELECTION_SIZE];
  size_t n = 0;
  for (const char* item = selection;;) {
    const char* comma = strchr(item, ',');
    const size_t size = comma != NULL ? (size_t)(comma - item) : strlen(item);
    if (size == 0 || memchr(item, '\n', size) != NULL) return;
    const int all = size == 3 && memcmp(item, "all", 3) == 0;
    if (n + (all ? 1 : size) + 1 >= sizeof(lines)) return;
    memcpy(lines + n, all ? "*" : item, all ? 1 : size);
    n += all ? 1 : size;
    lines[n++] = '\n';
    if (comma == NULL) break;
    item = comma + 1;
  }
  lines[n] = '\0';
  memcpy(microscope__ctl.selection, lines, strlen(lines) + 1);
  __atomic_store_n(&microscope__ctl.heartbeat, microscope__monotonic(), __ATOMIC_RELAXED);
  __atomic_store_n(&microscope__ctl.timeout_ms, MICROSCOPE_EARLY_TIMEOUT_MS, __ATOMIC_RELAXED);
  __atomic_store_n(&microscope__ctl.reader, (uint32_t)pid, __ATOMIC_RELAXED);
  microscope__set_static_sites(microscope__site_selected);
  __atomic_store_n(&microscope__ctl.state, MICROSCOPE_STATE_RECORDING, __ATOMIC_RELEASE);
}

/* A site named at run time, in the module's table of
 * MICROSCOPE_RUNTIME_SITES (a name and file together keep
 * MICROSCOPE_RUNTIME_SITE_SIZE - 18 bytes, the file's end first cut).
 * Each call defines a new site: callers keep what it returns. NULL when
 * the table is full or has no memory; the other calls take NULL and do
 * nothing. Enabled at once when a recorder listening selects it. */
static inline struct microscope_site* microscope_site_define(uint32_t kind, const char* name,
                                                             const char* file, uint32_t line) {
  char* table = (char*)(uintptr_t)__atomic_load_n(&microscope__ctl.runtime_sites, __ATOMIC_ACQUIRE);
  if (table == NULL) {
    const size_t bytes = (size_t)MICROSCOPE_RUNTIME_SITES * MICROSCOPE_RUNTIME_SITE_SIZE;
    void* m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    uint64_t none = 0;
    if (__atomic_compare_exchange_n(&microscope__ctl.runtime_sites, &none, (uint64_t)(uintptr_t)m, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      table = (char*)m;
    } else {
      munmap(m, bytes);
      table = (char*)(uintptr_t)none;
    }
  }
  const uint32_t index = __atomic_fetch_add(&microscope__ctl.runtime_count, 1, __ATOMIC_ACQ_REL);
  if (index >= MICROSCOPE_RUNTIME_SITES) return NULL;
  struct microscope_site* site = (struct microscope_site*)(table + (size_t)index * MICROSCOPE_RUNTIME_SITE_SIZE);
  char* text = (char*)(site + 1);
  const size_t room = MICROSCOPE_RUNTIME_SITE_SIZE - sizeof(struct microscope_site) - 2;
  size_t name_len = name != NULL ? strlen(name) : 0;
  size_t file_len = file != NULL ? strlen(file) : 0;
  if (name_len > room) name_len = room;
  if (file_len > room - name_len) {
    file += file_len - (room - name_len);
    file_len = room - name_len;
  }
  if (name_len > 0) memcpy(text, name, name_len);
  text[name_len] = '\0';
  if (file_len > 0) memcpy(text + name_len + 1, file, file_len);
  text[name_len + 1 + file_len] = '\0';
  site->kind = (uint8_t)kind;
  site->size = MICROSCOPE_RUNTIME_SITE_SIZE;
  site->line = line;
  site->name_len = (uint16_t)name_len;
  site->file_len = (uint16_t)file_len;
  site->enabled = __atomic_load_n(&microscope__ctl.state, __ATOMIC_ACQUIRE) == MICROSCOPE_STATE_RECORDING &&
                  microscope__selected(text, name_len);
  __atomic_store_n(&site->magic, MICROSCOPE_SITE_MAGIC, __ATOMIC_RELEASE);
  return site;
}

#define MICROSCOPE__CAT2(a, b) a##b
#define MICROSCOPE__CAT(a, b) MICROSCOPE__CAT2(a, b)

#define MICROSCOPE__STR2(x) #x
#define MICROSCOPE__STR(x) MICROSCOPE__STR2(x)

/* A static site: `var` is set to its address. The site is written into the
 * section by the assembler, not declared as a variable: a variable in a
 * named section cannot be both in an inline C++ function (a COMDAT group)
 * and in a plain one of the same file (GCC refuses the mix). Each copy of
 * the code (inlining, templates) makes a copy of the site; the recorder
 * counts copies with the same kind, name, file and line as one site. */
#define MICROSCOPE__SITE_TEXT(kind_, name_)                                            \
  ".pushsection microscope_sites,\"aw\"\n"                                             \
  ".balign 8\n"                                                                        \
  ".Lmicroscope_site%=:\n"                                                             \
  ".long 0x5453534d\n"                                                                 \
  ".byte " MICROSCOPE__STR(kind_) ", 0\n"                                              \
  ".short .Lmicroscope_end%= - .Lmicroscope_site%=\n"                                  \
  ".long " MICROSCOPE__STR(__LINE__) "\n"                                              \
  ".short .Lmicroscope_file%= - .Lmicroscope_name%= - 1\n"                             \
  ".short .Lmicroscope_tail%= - .Lmicroscope_file%= - 1\n"                             \
  ".Lmicroscope_name%=: .asciz " MICROSCOPE__STR(name_) "\n"                           \
  ".Lmicroscope_file%=: .asciz " MICROSCOPE__STR(__FILE__) "\n"                        \
  ".Lmicroscope_tail%=: .balign 8\n"                                                   \
  ".Lmicroscope_end%=:\n"                                                              \
  ".popsection\n"
#if defined(__x86_64__)
#define MICROSCOPE__SITE(var, kind_, name_)                                            \
  const struct microscope_site* var;                                                   \
  (void)sizeof("" name_); /* a string literal */                                       \
  __asm__(MICROSCOPE__SITE_TEXT(kind_, name_) "lea .Lmicroscope_site%=(%%rip), %0" : "=r"(var))
#elif defined(__aarch64__)
#define MICROSCOPE__SITE(var, kind_, name_)                                            \
  const struct microscope_site* var;                                                   \
  (void)sizeof("" name_); /* a string literal */                                       \
  __asm__(MICROSCOPE__SITE_TEXT(kind_, name_)                                          \
          "adrp %0, .Lmicroscope_site%=\n"                                             \
          "add %0, %0, :lo12:.Lmicroscope_site%=" : "=r"(var))
#else
#error "microscope.h: static sites are written for x86-64 and aarch64 only"
#endif

#define MICROSCOPE__AT(name_, kind_, call)                                     \
  do {                                                                         \
    MICROSCOPE__SITE(microscope__site, kind_, name_);                          \
    call;                                                                      \
  } while (0)

/* A zone of the code between MICROSCOPE_ZONE_BEGIN(ctx, "name") and
 * MICROSCOPE_ZONE_END(ctx), in the same scope. */
#define MICROSCOPE_ZONE_BEGIN(ctx, name_)                                           \
  MICROSCOPE__SITE(MICROSCOPE__CAT(microscope__site_, ctx), MICROSCOPE_KIND_ZONE, name_); \
  microscope_zone_ctx ctx = microscope_zone_begin(MICROSCOPE__CAT(microscope__site_, ctx))
#define MICROSCOPE_ZONE_END(ctx) microscope_zone_end(ctx)

#define MICROSCOPE_MARK(name_) \
  MICROSCOPE__AT(name_, MICROSCOPE_KIND_MARK, microscope_mark(microscope__site))
#define MICROSCOPE_COUNTER(name_, value) \
  MICROSCOPE__AT(name_, MICROSCOPE_KIND_COUNTER, microscope_counter(microscope__site, (value)))
#define MICROSCOPE_LABEL(key, text, size) \
  MICROSCOPE__AT(key, MICROSCOPE_KIND_LABEL, microscope_label_text(microscope__site, (text), (size)))
#define MICROSCOPE_LABEL_INT(key, value) \
  MICROSCOPE__AT(key, MICROSCOPE_KIND_LABEL, microscope_label_int(microscope__site, (value)))
#define MICROSCOPE_LABEL_CLEAR(key) \
  MICROSCOPE__AT(key, MICROSCOPE_KIND_LABEL, microscope_label_clear(microscope__site))

#endif /* MICROSCOPE_ABI_ONLY */

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && !defined(MICROSCOPE_ABI_ONLY)
namespace microscope {

/* A zone that ends with its scope; MICROSCOPE_ZONE("name") makes one. */
class Zone {
 public:
  explicit Zone(const microscope_site* site) : ctx_(microscope_zone_begin(site)) {}
  ~Zone() { microscope_zone_end(ctx_); }
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

 private:
  microscope_zone_ctx ctx_;
};

}  // namespace microscope

#define MICROSCOPE_ZONE(name_)                                                                  \
  MICROSCOPE__SITE(MICROSCOPE__CAT(microscope__site_, __LINE__), MICROSCOPE_KIND_ZONE, name_); \
  ::microscope::Zone MICROSCOPE__CAT(microscope__zone_, __LINE__)(                              \
      MICROSCOPE__CAT(microscope__site_, __LINE__))
#endif /* __cplusplus */

#else /* MICROSCOPE_DISABLE: every macro is nothing, every call does nothing. */

typedef struct {
  const struct microscope_site* site;
  int active;
} microscope_zone_ctx;
static inline int microscope_site_enabled(const struct microscope_site* site) { (void)site; return 0; }
static inline int microscope_recording(void) {
  return 0;
}
static inline struct microscope_site* microscope_site_define(uint32_t kind, const char* name, const char* file,
                                                             uint32_t line) {
  (void)kind, (void)name, (void)file, (void)line;
  return NULL;
}
static inline microscope_zone_ctx microscope_zone_begin(const struct microscope_site* site) {
  microscope_zone_ctx ctx = {site, 0};
  return ctx;
}
static inline void microscope_zone_end(microscope_zone_ctx ctx) { (void)ctx; }
static inline void microscope_mark(const struct microscope_site* site) { (void)site; }
static inline void microscope_counter(const struct microscope_site* site, double value) { (void)site, (void)value; }
static inline void microscope_label_int(const struct microscope_site* site, int64_t value) { (void)site, (void)value; }
static inline void microscope_label_text(const struct microscope_site* site, const char* text, size_t size) {
  (void)site, (void)text, (void)size;
}
static inline void microscope_label_clear(const struct microscope_site* site) { (void)site; }

#define MICROSCOPE_ZONE_BEGIN(ctx, name_) ((void)0)
#define MICROSCOPE_ZONE_END(ctx) ((void)0)
#define MICROSCOPE_ZONE(name_) ((void)0)
#define MICROSCOPE_MARK(name_) ((void)0)
#define MICROSCOPE_COUNTER(name_, value) ((void)0)
#define MICROSCOPE_LABEL(key, text, size) ((void)0)
#define MICROSCOPE_LABEL_INT(key, value) ((void)0)
#define MICROSCOPE_LABEL_CLEAR(key) ((void)0)

#endif /* MICROSCOPE_DISABLE */
#endif /* MICROSCOPE_H_ */
