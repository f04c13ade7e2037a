/* SPDX-License-Identifier: Apache-2.0 */
/* bench-simple: tight loops of small mallocs and frees (the shape of
 * glibc's malloc micro-benchmarks, written anew).
 *
 * Each thread, for every size of 16, 32, 64, 128 and 256 bytes and every
 * batch of 25, 100, 400 and 1600 blocks, --iters times allocates the batch
 * and frees it again in the order it came, writing each block's first and
 * last byte.  Nothing outlives a loop, so the time is the allocator's own
 * cost of a malloc/free pair at a fixed size, with the live set as small as
 * a few cache lines or as large as a few pages; threads share nothing. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

static const size_t simple_sizes[] = { 16, 32, 64, 128, 256 };
static const long simple_batches[] = { 25, 100, 400, 1600 };
#define SIMPLE_COUNT(a) (sizeof (a) / sizeof (a)[0])

typedef struct simple_thread_s {
  long iters, index;
  long errors;
} simple_thread_t;

static void simple_loop(simple_thread_t *t, void **blocks, size_t size, long batch) {
  unsigned char tag = (unsigned char)(size + (size_t)batch + (size_t)t->index);
  for (long i = 0; i < t->iters; i++) {
    for (long k = 0; k < batch; k++) {
      blocks[k] = malloc(size);
      if (blocks[k] == NULL) { perror("malloc"); exit(1); }
      bench_touch(blocks[k], size, tag);
    }
    for (long k = 0; k < batch; k++) {
      if (!bench_check(blocks[k], size, tag)) t->errors++;
      free(blocks[k]);
    }
  }
}

static void *simple_thread(void *arg) {
  simple_thread_t *t = arg;
  void **blocks = calloc(1600, sizeof *blocks);
  if (blocks == NULL) { perror("calloc"); exit(1); }
  bench_start_wait();
  for (size_t s = 0; s < SIMPLE_COUNT(simple_sizes); s++)
    for (size_t b = 0; b < SIMPLE_COUNT(simple_batches); b++)
      simple_loop(t, blocks, simple_sizes[s], simple_batches[b]);
  free(blocks);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, iters = 1000;
  bench_opt_t opts[] = {
    { "threads", &threads, "threads, each running every loop" },
    { "iters",   &iters,   "times each (size, batch) loop runs" },
  };
  bench_parse(argc, argv, "Tight malloc/free loops of small fixed sizes, batches of 25 to 1600 blocks.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1) { fprintf(stderr, "bench-simple: bad options\n"); return 2; }

  simple_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  for (long i = 0; i < threads; i++) ts[i] = (simple_thread_t){ .iters = iters, .index = i };
  double seconds = bench_run_threads(threads, simple_thread, ts, sizeof *ts);
  long errors = 0;
  for (long i = 0; i < threads; i++) errors += ts[i].errors;
  free(ts);
  long per_iter = 0;
  for (size_t b = 0; b < SIMPLE_COUNT(simple_batches); b++) per_iter += simple_batches[b];
  return bench_report("simple", threads, iters * per_iter * (long)SIMPLE_COUNT(simple_sizes), seconds, errors);
}
