/* SPDX-License-Identifier: Apache-2.0 */
/* bench-large: big buffers replaced one at a time (the malloc-large
 * pattern, written anew).
 *
 * Each thread keeps up to `slots` blocks of min..max bytes (5-25 MiB by
 * default, above every allocator's size classes) and, `iters` times, picks
 * a slot at random, frees the block there and allocates one of a new size
 * in its place, writing a byte in each 4 KiB of it, as a program that fills
 * a buffer would.  The slots start empty, so the first `slots` rounds only
 * allocate.  What this measures is what the allocator does with memory
 * that big: an allocator that maps every block afresh and unmaps it at free
 * has each of its pages faulted in (and zeroed by the kernel) every time;
 * one that keeps freed memory for the next big block does not. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

#define LARGE_PAGE 4096

typedef struct large_thread_s {
  long iters, slots, min, max, seed, index;
  long errors;
} large_thread_t;

typedef struct large_slot_s {
  unsigned char *block;
  size_t size;
  unsigned char tag;
} large_slot_t;

static void large_write(large_slot_t *s) {
  for (size_t at = 0; at < s->size; at += LARGE_PAGE) s->block[at] = s->tag;
  bench_touch(s->block, s->size, s->tag);
}

static void *large_thread(void *arg) {
  large_thread_t *t = arg;
  uint64_t rng = bench_seed(t->seed, t->index);
  large_slot_t *slots = calloc((size_t)t->slots, sizeof *slots);
  if (slots == NULL) { perror("calloc"); exit(1); }
  bench_start_wait();
  for (long i = 0; i < t->iters; i++) {
    large_slot_t *s = &slots[i < t->slots ? i : (long)(bench_rand(&rng) % (uint64_t)t->slots)];
    if (s->block != NULL) {
      if (!bench_check(s->block, s->size, s->tag)) t->errors++;
      free(s->block);
    }
    s->size = bench_rand_range(&rng, (size_t)t->min, (size_t)t->max);
    s->tag = (unsigned char)(i + 1);
    s->block = malloc(s->size);
    if (s->block == NULL) { perror("malloc"); exit(1); }
    large_write(s);
  }
  for (long i = 0; i < t->slots; i++) {
    if (slots[i].block == NULL) continue;
    if (!bench_check(slots[i].block, slots[i].size, slots[i].tag)) t->errors++;
    free(slots[i].block);
  }
  free(slots);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, iters = 500, slots = 20, min = 5L << 20, max = 25L << 20, seed = 1;
  bench_opt_t opts[] = {
    { "threads", &threads, "worker threads" },
    { "iters",   &iters,   "blocks each thread allocates (each but the first `slots` replacing one)" },
    { "slots",   &slots,   "blocks a thread keeps at once" },
    { "min",     &min,     "smallest block in bytes" },
    { "max",     &max,     "largest block in bytes" },
    { "seed",    &seed,    "random seed" },
  };
  bench_parse(argc, argv, "Big buffers: live blocks of several MiB replaced one at a time and written through.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || slots < 1 || min < 1 || max < min) { fprintf(stderr, "bench-large: bad options\n"); return 2; }

  large_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  if (ts == NULL) { perror("calloc"); return 1; }
  for (long i = 0; i < threads; i++)
    ts[i] = (large_thread_t){ .iters = iters, .slots = slots, .min = min, .max = max, .seed = seed, .index = i };
  double seconds = bench_run_threads(threads, large_thread, ts, sizeof *ts);
  long errors = 0;
  for (long i = 0; i < threads; i++) errors += ts[i].errors;
  free(ts);
  return bench_report("large", threads, iters, seconds, errors);
}
