/* SPDX-License-Identifier: Apache-2.0 */
/* bench-mixed: one loop of mixed sizes, small to 64 KiB, with reallocs
 * (the shape of a single-threaded allocation test, written anew).
 *
 * Each thread keeps --slots live blocks; a step picks a random slot and
 * either frees its block and allocates a new one, or (one step in
 * --realloc) reallocs it to the new size.  Sizes are log-uniform from 8 B
 * to 64 KiB, so every path of an allocator takes its share: the small and
 * medium size classes, the larger blocks beyond them, and realloc moving a
 * block between them.  Each block's first and last byte are written and
 * checked. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct mixed_thread_s {
  long ops, slots, realloc_every, seed, index;
  long errors;
} mixed_thread_t;

/* Log-uniform in [8, 64 KiB]: a power of two from 2^3 to 2^15, then uniform up to the next. */
static size_t mixed_size(uint64_t *rng) {
  unsigned shift = 3 + (unsigned)(bench_rand(rng) % 13);
  return bench_rand_range(rng, (size_t)1 << shift, (size_t)2 << shift);
}

static unsigned char mixed_tag(size_t size) { return (unsigned char)(size * 7 + 1); }

static void *mixed_thread(void *arg) {
  mixed_thread_t *t = arg;
  uint64_t rng = bench_seed(t->seed, t->index);
  void **blocks = calloc((size_t)t->slots, sizeof *blocks);
  size_t *sizes = calloc((size_t)t->slots, sizeof *sizes);
  if (blocks == NULL || sizes == NULL) { perror("calloc"); exit(1); }
  bench_start_wait();
  for (long i = 0; i < t->ops; i++) {
    size_t s = (size_t)(bench_rand(&rng) % (uint64_t)t->slots), size = mixed_size(&rng);
    if (blocks[s] != NULL && !bench_check(blocks[s], sizes[s], mixed_tag(sizes[s]))) t->errors++;
    if (blocks[s] != NULL && t->realloc_every > 0 && bench_rand(&rng) % (uint64_t)t->realloc_every == 0) {
      void *moved = realloc(blocks[s], size);
      if (moved == NULL) { perror("realloc"); exit(1); }
      blocks[s] = moved;
    } else {
      free(blocks[s]);
      blocks[s] = malloc(size);
      if (blocks[s] == NULL) { perror("malloc"); exit(1); }
    }
    sizes[s] = size;
    bench_touch(blocks[s], size, mixed_tag(size));
  }
  for (long s = 0; s < t->slots; s++) free(blocks[s]);
  free(blocks);
  free(sizes);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, ops = 1000000, slots = 2000, realloc_every = 8, seed = 1;
  bench_opt_t opts[] = {
    { "threads", &threads,       "threads, each running the whole loop on its own blocks" },
    { "ops",     &ops,           "steps per thread" },
    { "slots",   &slots,         "live blocks per thread" },
    { "realloc", &realloc_every, "one step in this many reallocs the block instead (0: never)" },
    { "seed",    &seed,          "random seed" },
  };
  bench_parse(argc, argv, "A loop of mixed sizes from 8 B to 64 KiB, with reallocs, over a bounded live set.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || slots < 1) { fprintf(stderr, "bench-mixed: bad options\n"); return 2; }

  mixed_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  for (long i = 0; i < threads; i++)
    ts[i] = (mixed_thread_t){ .ops = ops, .slots = slots, .realloc_every = realloc_every, .seed = seed, .index = i };
  double seconds = bench_run_threads(threads, mixed_thread, ts, sizeof *ts);
  long errors = 0;
  for (long i = 0; i < threads; i++) errors += ts[i].errors;
  free(ts);
  return bench_report("mixed", threads, ops, seconds, errors);
}
