/* SPDX-License-Identifier: Apache-2.0 */
/* The program that test_purge runs: how much of the memory of freed blocks
 * stays resident under the MANYMALLOC_PURGE_DELAY of its environment (read
 * when the allocator starts, hence a process of its own).
 * It allocates and writes 24 MiB in blocks of 512 KiB (spans, about seven
 * span segments), frees them all, and prints the KiB of those blocks that
 * are resident (mincore) three times, one line: right after the frees;
 * after sleeping 200 ms and one more malloc (a slow path, where memory
 * whose delay is over goes back); after mm_collect.
 * `purge_child thread` does the allocating and freeing in a thread that
 * exits before the first count.  `purge_child reuse` has a second thread,
 * started after the first exited, allocate and write as much again, and
 * prints the page faults that second thread took.  `purge_child growth`
 * frees 3 MiB of spans, grows the span after them in place over fresh
 * memory from 256 KiB to 896 KiB, 64 KiB at a time, and prints the KiB of the
 * freed 3 MiB still resident; `purge_child growth wait` prints them after
 * 200 ms and a malloc instead.  `purge_child large [MIB [COUNT [KEPT]]]`
 * allocates KEPT blocks (0) of MIB MiB (6), mappings of their own, that stay
 * in use unwritten, then allocates and writes COUNT more (1) and frees them
 * (the cache of large mappings keeps what it may), and prints the same three
 * counts over those.  `purge_child large-fresh MIB COUNT KEPT` does the
 * same with COUNT blocks that are calloc'd (never from the cache), written
 * and freed one after another, KEPT (up to 32) in use meanwhile.
 * `purge_child large-reuse MIB [MID]` keeps six blocks
 * of MIB MiB in use, writes and frees a seventh, then (with MID) writes and
 * frees a block of MID MiB, then writes an eighth of MIB MiB and prints the
 * page faults that took and the usable KiB of the MID block (0 without).
 * `purge_child large-split` keeps six blocks of 24 MiB in use, writes and
 * frees a seventh, allocates a block of 8 MiB, writes one of 11 MiB and
 * prints the usable KiB of the first and the page faults the second took.
 * `purge_child large-split-header` writes the thread's heap where an 8 MiB
 * block's split of a freed 24 MiB mapping puts the rest's header, takes
 * that rest for a block of 11 MiB, frees it and prints the large blocks
 * counted before and after that free.
 * `purge_child large-evict` keeps eight blocks of 24 MiB in use, writes six
 * of 10 MiB and one of 30 MiB, frees them (the 30 MiB one last), writes
 * another of 30 MiB and prints the page faults that took.
 * `purge_child large-best` keeps eight blocks of 24 MiB in use, allocates
 * blocks of 9, 20 and 12 MiB, frees them in that order and prints the usable KiB of the
 * block of 11 MiB allocated next.
 * `purge_child large-bulk THREADS [KIB [COUNT]]` writes COUNT blocks (80)
 * of KIB KiB (1280: 100 MiB in all, more than the 64 MiB that the cache
 * takes from a lone thread), frees them all, and prints the
 * same three counts over them; with THREADS 2 another thread holds a heap
 * meanwhile.
 * `purge_child large-mapped MIB` allocates a block of MIB MiB, unwritten,
 * frees it and prints the KiB of mappings that the free gave back to the OS
 * (mm_stats_t.bytes_mapped before and after).
 * `purge_child hugepages` prints whether the mappings of a malloc'd and of
 * a calloc'd block of 8 MiB, and of a block malloc'd at 2 MiB before and
 * after realloc grows it to 8 MiB, are advised for transparent huge pages
 * ("hg" among the VmFlags of /proc/self/smaps): 1 or 0 each. */
#define _GNU_SOURCE
#include <manymalloc/manymalloc.h>

#include "resident.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_SIZE ((size_t)512 * 1024)
#define BLOCKS     48

static void *blocks[BLOCKS];

/* KiB of [p, p + size) resident; 0 where unmapped. */
static size_t resident_kib_of(void *p, size_t size) {
  return resident_pages(p, size) * (MM_TEST_OS_PAGE / 1024);
}

/* KiB resident of `count` blocks of `size` bytes each. */
static size_t resident_kib(void **of, int count, size_t size) {
  size_t kib = 0;
  for (int i = 0; i < count; i++) kib += resident_kib_of(of[i], size);
  return kib;
}

/* Allocates `count` blocks of `size` bytes that stay in use, unwritten;
 * false when one could not be had. */
static bool hold(void **blocks_held, int count, size_t size) {
  for (int i = 0; i < count; i++)
    if ((blocks_held[i] = mm_malloc(size)) == NULL) return false;
  return true;
}

static void release(void **blocks_held, int count) {
  for (int i = 0; i < count; i++) mm_free(blocks_held[i]);
}

static void *fill_and_free(void *arg) {
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = mm_malloc(BLOCK_SIZE);
    if (blocks[i] == NULL) return NULL;
    memset(blocks[i], 0x5a, BLOCK_SIZE);
  }
  if (arg != NULL) return arg; /* reuse: the faults are counted, the blocks stay */
  release(blocks, BLOCKS);
  return blocks;
}

static void *fill_counting_faults(void *arg) {
  struct rusage before, after;
  getrusage(RUSAGE_THREAD, &before);
  void *ok = fill_and_free(arg);
  getrusage(RUSAGE_THREAD, &after);
  *(long *)arg = after.ru_minflt - before.ru_minflt;
  if (ok != NULL) release(blocks, BLOCKS);
  return ok;
}

static void *in_thread(void *(*fn)(void *), void *arg) {
  pthread_t t;
  void *result = NULL;
  if (pthread_create(&t, NULL, fn, arg) != 0 || pthread_join(t, &result) != 0) return NULL;
  return result;
}

static void pause_then_slow_path(size_t size);

static int growth(bool wait) {
  const size_t block = (size_t)1 << 20, step = (size_t)64 << 10;
  char *freed[3];
  for (int i = 0; i < 3; i++) {
    if ((freed[i] = mm_malloc(block)) == NULL) return 2;
    memset(freed[i], 0x5a, block);
  }
  char *grown = mm_malloc(4 * step);
  if (grown == NULL) return 2;
  for (int i = 0; i < 3; i++) mm_free(freed[i]);
  for (size_t size = 5 * step, k = 0; size <= 14 * step; size += step, k++) { /* to the segment's end */
    char *p = mm_realloc(grown, size);
    if (p != grown) return 3; /* the run after it is free and untouched: in place */
    memset(p + size - step, 0x5a, step);
    mm_free(mm_malloc(160 + 32 * k)); /* a class's first malloc: the slow path, where growth is matched */
  }
  if (wait) pause_then_slow_path(1024);
  printf("%zu\n", resident_kib_of(freed[0], 3 * block));
  mm_free(grown);
  return 0;
}

static void pause_then_slow_path(size_t size) {
  nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
  mm_free(mm_malloc(size)); /* the first block of its class: a slow path, where memory whose delay is over goes back */
}

/* Prints the KiB of the freed blocks `of` resident now, after 200 ms and a
 * malloc of `slow_size` bytes, and after mm_collect, on one line. */
static void print_resident_after_free(void **of, int count, size_t size, size_t slow_size) {
  size_t after_free = resident_kib(of, count, size);
  pause_then_slow_path(slow_size);
  size_t after_delay = resident_kib(of, count, size);
  mm_collect();
  size_t after_collect = resident_kib(of, count, size);
  printf("%zu %zu %zu\n", after_free, after_delay, after_collect);
}

#define LARGE_MAX 8

static int large(size_t mib, int count, int kept) {
  const size_t size = mib << 20;
  void *p[LARGE_MAX], *live[LARGE_MAX];
  if (count < 1 || count > LARGE_MAX || kept < 0 || kept > LARGE_MAX) return 2;
  void *heap_first = mm_malloc(16); /* the heap and its segment exist before the blocks, not after them */
  if (heap_first == NULL || !hold(live, kept, size)) return 2;
  for (int i = 0; i < count; i++) {
    if ((p[i] = mm_malloc(size)) == NULL) return 2;
    memset(p[i], 0x5a, size);
  }
  release(p, count);
  print_resident_after_free(p, count, size, 5000);
  release(live, kept);
  mm_free(heap_first);
  return 0;
}

#define FRESH_KEPT_MAX 32

static int large_fresh(size_t mib, int count, int kept) {
  const size_t size = mib << 20;
  void *p[LARGE_MAX], *live[FRESH_KEPT_MAX];
  if (count < 1 || count > LARGE_MAX || kept < 0 || kept > FRESH_KEPT_MAX) return 2;
  void *heap_first = mm_malloc(16);
  if (heap_first == NULL || !hold(live, kept, size)) return 2;
  for (int i = 0; i < count; i++) {
    if ((p[i] = mm_calloc(1, size)) == NULL) return 2;
    memset(p[i], 0x5a, size);
    mm_free(p[i]);
  }
  print_resident_after_free(p, count, size, 5000);
  release(live, kept);
  mm_free(heap_first);
  return 0;
}

/* Faults in 4 KiB pages over the block, so that their count says how much
 * was not resident whatever the kernel's transparent huge pages do. */
static void *small_pages(void *block, size_t size) {
  if (block != NULL) {
    uintptr_t from = (uintptr_t)block / MM_TEST_OS_PAGE * MM_TEST_OS_PAGE;
    madvise((void *)from, (uintptr_t)block + size - from, MADV_NOHUGEPAGE);
  }
  return block;
}

/* A new block of `size` bytes in 4 KiB pages, written through; NULL when
 * malloc fails. */
static void *written_block(size_t size) {
  void *block = small_pages(mm_malloc(size), size);
  if (block != NULL) memset(block, 0xa5, size);
  return block;
}

/* Page faults that writing a new block of `size` bytes takes; -1 when
 * malloc fails.  The block stays in *out. */
static long faults_to_write(size_t size, void **out) {
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  void *block = written_block(size);
  if (block == NULL) return -1;
  getrusage(RUSAGE_SELF, &after);
  *out = block;
  return after.ru_minflt - before.ru_minflt;
}

static int large_reuse(size_t mib, size_t mid_mib) {
  const size_t size = mib << 20;
  void *live[6];
  if (!hold(live, 6, size)) return 2;
  void *first = written_block(size);
  if (first == NULL) return 2;
  mm_free(first);
  size_t mid_usable_kib = 0;
  if (mid_mib > 0) {
    void *mid = written_block(mid_mib << 20);
    if (mid == NULL) return 2;
    mid_usable_kib = mm_malloc_usable_size(mid) >> 10;
    mm_free(mid);
  }
  void *second;
  long faults = faults_to_write(size, &second);
  if (faults < 0) return 2;
  printf("%ld %zu\n", faults, mid_usable_kib);
  mm_free(second);
  release(live, 6);
  return 0;
}

static int large_split(void) {
  void *live[6], *small, *next;
  if (!hold(live, 6, (size_t)24 << 20)) return 2;
  if ((small = written_block((size_t)24 << 20)) == NULL) return 2;
  mm_free(small);
  if ((small = mm_malloc((size_t)8 << 20)) == NULL) return 2;
  long faults = faults_to_write((size_t)11 << 20, &next);
  if (faults < 0) return 2;
  printf("%zu %ld\n", mm_malloc_usable_size(small) >> 10, faults);
  mm_free(next);
  mm_free(small);
  release(live, 6);
  return 0;
}

/* The rest of a split mapping starts a header of its own, where the freed
 * block's bytes lay: here the one a block's header must never hold, the
 * thread's heap (the first word of any small block's segment header). */
static int large_split_header(void) {
  const size_t segment = (size_t)4 << 20, header = 4096;
  void *live[6], *small = mm_malloc(16), *big, *front, *rest_block;
  if (small == NULL || !hold(live, 6, (size_t)24 << 20)) return 2;
  uintptr_t heap = *(const uintptr_t *)(((uintptr_t)small - 1) & ~(uintptr_t)(segment - 1));
  if ((big = mm_calloc(1, (size_t)24 << 20)) == NULL) return 2;
  *(uintptr_t *)((uint8_t *)big - header + 3 * segment) = heap; /* the rest of an 8 MiB split */
  mm_free(big);
  if ((front = mm_malloc((size_t)8 << 20)) == NULL || (rest_block = mm_malloc((size_t)11 << 20)) == NULL) return 2;
  mm_stats_t before, after;
  mm_stats_get(&before);
  mm_free(rest_block);
  mm_stats_get(&after);
  printf("%zu %zu\n", before.large_blocks, after.large_blocks);
  mm_free(front);
  mm_free(small);
  release(live, 6);
  return 0;
}

static int large_evict(void) {
  void *live[8], *freed[6], *big, *next;
  if (!hold(live, 8, (size_t)24 << 20)) return 2;
  for (int i = 0; i < 6; i++)
    if ((freed[i] = written_block((size_t)10 << 20)) == NULL) return 2;
  if ((big = written_block((size_t)30 << 20)) == NULL) return 2;
  release(freed, 6);
  mm_free(big);
  long faults = faults_to_write((size_t)30 << 20, &next);
  if (faults < 0) return 2;
  printf("%ld\n", faults);
  mm_free(next);
  release(live, 8);
  return 0;
}

static int large_best(void) {
  void *live[8];
  if (!hold(live, 8, (size_t)24 << 20)) return 2;
  const size_t freed_mib[3] = {9, 20, 12};
  void *freed[3];
  for (int i = 0; i < 3; i++) {
    if ((freed[i] = mm_malloc(freed_mib[i] << 20)) == NULL) return 2;
    memset(freed[i], 0x5a, freed_mib[i] << 20);
  }
  release(freed, 3);
  char *next = mm_malloc((size_t)11 << 20);
  if (next == NULL) return 2;
  printf("%zu\n", mm_malloc_usable_size(next) >> 10);
  mm_free(next);
  release(live, 8);
  return 0;
}

#define BULK_MAX 80

static pthread_barrier_t bulk_step;

/* A thread with a heap of its own from the first step (its heap made) to
 * the second (the bulk frees counted). */
static void *hold_a_heap(void *arg) {
  void *p = mm_malloc(16);
  pthread_barrier_wait(&bulk_step);
  pthread_barrier_wait(&bulk_step);
  mm_free(p);
  return arg;
}

static int large_bulk(int threads, size_t kib, int count) {
  void *p[BULK_MAX];
  const size_t size = kib << 10;
  pthread_t helper;
  bool helped = threads == 2;
  void *heap_first = mm_malloc(16); /* the heap and its segment exist before the blocks */
  if (heap_first == NULL || threads < 1 || threads > 2 || count < 1 || count > BULK_MAX) return 2;
  if (helped && (pthread_barrier_init(&bulk_step, NULL, 2) != 0 || pthread_create(&helper, NULL, hold_a_heap, NULL) != 0))
    return 2;
  if (helped) pthread_barrier_wait(&bulk_step);
  for (int i = 0; i < count; i++)
    if ((p[i] = written_block(size)) == NULL) return 2;
  release(p, count);
  print_resident_after_free(p, count, size, 5000);
  if (helped) {
    pthread_barrier_wait(&bulk_step);
    if (pthread_join(helper, NULL) != 0) return 2;
    pthread_barrier_destroy(&bulk_step);
  }
  mm_free(heap_first);
  return 0;
}

static int large_mapped(size_t mib) {
  mm_stats_t before, after;
  void *block = mm_malloc(mib << 20);
  if (block == NULL) return 2;
  mm_stats_get(&before);
  mm_free(block);
  mm_stats_get(&after);
  printf("%zu\n", before.bytes_mapped > after.bytes_mapped ? (before.bytes_mapped - after.bytes_mapped) >> 10 : 0);
  return 0;
}

/* Whether the mapping holding `p` has `flag` among its VmFlags. */
static int mapping_has_flag(const void *p, const char *flag) {
  FILE *smaps = fopen("/proc/self/smaps", "r");
  if (smaps == NULL) return -1;
  char line[512];
  int found = -1, inside = 0;
  while (found < 0 && fgets(line, sizeof line, smaps) != NULL) {
    unsigned long start, end;
    if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = (uintptr_t)p >= start && (uintptr_t)p < end;
    } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      char pattern[8];
      snprintf(pattern, sizeof pattern, " %s", flag);
      const char *at = strstr(line, pattern);
      found = at != NULL && (at[strlen(pattern)] == ' ' || at[strlen(pattern)] == '\n');
    }
  }
  fclose(smaps);
  return found;
}

static int hugepages(void) {
  const size_t size = (size_t)8 << 20;
  char *grown = mm_malloc(2 << 20);
  int small = grown == NULL ? -1 : mapping_has_flag(grown, "hg");
  if (grown == NULL || (grown = mm_realloc(grown, size)) == NULL) return 2;
  char *plain = mm_malloc(size), *zeroed = mm_calloc(1, size);
  if (plain == NULL || zeroed == NULL) return 2;
  printf("%d %d %d %d\n", mapping_has_flag(plain, "hg"), mapping_has_flag(zeroed, "hg"), small,
         mapping_has_flag(grown, "hg"));
  mm_free(plain);
  mm_free(zeroed);
  mm_free(grown);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "growth") == 0) return growth(argc > 2 && strcmp(argv[2], "wait") == 0);
  if (strcmp(mode, "hugepages") == 0) return hugepages();
  if (strcmp(mode, "large-best") == 0) return large_best();
  if (strcmp(mode, "large-split") == 0) return large_split();
  if (strcmp(mode, "large-evict") == 0) return large_evict();
  if (strcmp(mode, "large-split-header") == 0) return large_split_header();
  if (strcmp(mode, "large") == 0) return large(argc > 2 ? strtoul(argv[2], NULL, 10) : 6, argc > 3 ? atoi(argv[3]) : 1,
                                              argc > 4 ? atoi(argv[4]) : 0);
  if (strcmp(mode, "large-mapped") == 0 && argc > 2) return large_mapped(strtoul(argv[2], NULL, 10));
  if (strcmp(mode, "large-fresh") == 0 && argc > 4) return large_fresh(strtoul(argv[2], NULL, 10), atoi(argv[3]), atoi(argv[4]));
  if (strcmp(mode, "large-bulk") == 0)
    return large_bulk(argc > 2 ? atoi(argv[2]) : 1, argc > 3 ? strtoul(argv[3], NULL, 10) : 1280, argc > 4 ? atoi(argv[4]) : BULK_MAX);
  if (strcmp(mode, "large-reuse") == 0)
    return large_reuse(argc > 2 ? strtoul(argv[2], NULL, 10) : 32, argc > 3 ? strtoul(argv[3], NULL, 10) : 0);
  bool threaded = strcmp(mode, "thread") == 0 || strcmp(mode, "reuse") == 0;
  if ((threaded ? in_thread(fill_and_free, NULL) : fill_and_free(NULL)) == NULL) return 2;
  if (strcmp(mode, "reuse") == 0) {
    long faults = -1;
    if (in_thread(fill_counting_faults, &faults) == NULL) return 2;
    printf("%ld\n", faults);
    return 0;
  }
  print_resident_after_free(blocks, BLOCKS, BLOCK_SIZE, 64 * 1024);
  return 0;
}
