/* SPDX-License-Identifier: Apache-2.0 */
/* bench-vv: the three multi-threaded workloads of the VVMalloc report (seed
 * 004, "Approach 2"): W1 ~128k ops per thread of mostly < 32 B requests, W2
 * 80k ops of mostly 3-12 KB, W3 80k ops of a mix from 4 B to 21 KB.
 *
 * Each thread owns a slot array of live blocks; an op picks a random slot,
 * frees its block if there is one and allocates a new block there. The live
 * set stays bounded while malloc and free interleave, and every thread does
 * the full op count, so the time grows with threads only where the allocator
 * does not scale (or the cores run out). */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct vv_band_s {
  unsigned weight;  /* percent of requests drawn from this band */
  size_t   lo, hi;  /* request size range in bytes, inclusive */
} vv_band_t;

typedef struct vv_workload_s {
  long      ops;       /* the report's ops per thread */
  long      slots;     /* live blocks per thread */
  vv_band_t bands[3];  /* weights sum to 100 */
} vv_workload_t;

static const vv_workload_t vv_workloads[3] = {
  { 128000, 1024, { { 90, 1, 32 },       { 10, 33, 256 } } },
  {  80000,  256, { { 90, 3072, 12288 }, { 10, 16, 3071 } } },
  {  80000,  256, { { 40, 4, 64 },       { 30, 65, 1024 }, { 30, 1025, 21504 } } },
};

typedef struct vv_thread_s {
  const vv_workload_t *w;
  long ops, slots, seed, index;
  long errors;
} vv_thread_t;

static size_t vv_pick_size(const vv_workload_t *w, uint64_t *rng) {
  unsigned p = (unsigned)(bench_rand(rng) % 100);
  const vv_band_t *b = w->bands;
  while (p >= b->weight) { p -= b->weight; b++; }
  return bench_rand_range(rng, b->lo, b->hi);
}

/* Differs between threads and, mostly, between blocks of one thread, so an
 * overlap of two live blocks shows. */
static unsigned char vv_tag(const vv_thread_t *t, size_t size) {
  return (unsigned char)(size * 31 + (size_t)t->index);
}

static void *vv_thread(void *arg) {
  vv_thread_t *t = arg;
  uint64_t rng = bench_seed(t->seed, t->index);
  void **blocks = calloc((size_t)t->slots, sizeof *blocks);
  size_t *sizes = calloc((size_t)t->slots, sizeof *sizes);
  if (blocks == NULL || sizes == NULL) { perror("calloc"); exit(1); }
  bench_start_wait();
  for (long i = 0; i < t->ops; i++) {
    size_t s = (size_t)(bench_rand(&rng) % (uint64_t)t->slots);
    if (blocks[s] != NULL) {
      if (!bench_check(blocks[s], sizes[s], vv_tag(t, sizes[s]))) t->errors++;
      free(blocks[s]);
    }
    sizes[s] = vv_pick_size(t->w, &rng);
    blocks[s] = malloc(sizes[s]);
    if (blocks[s] == NULL) { perror("malloc"); exit(1); }
    bench_touch(blocks[s], sizes[s], vv_tag(t, sizes[s]));
  }
  for (long s = 0; s < t->slots; s++) free(blocks[s]);
  free(blocks);
  free(sizes);
  return NULL;
}

int main(int argc, char **argv) {
  long workload = 1, threads = 1, ops = 0, slots = 0, seed = 1;
  bench_opt_t opts[] = {
    { "workload", &workload, "1, 2 or 3 (W1 small, W2 3-12 KB, W3 4 B-21 KB mix)" },
    { "threads",  &threads,  "worker threads, each doing the full op count" },
    { "ops",      &ops,      "ops per thread (0: the report's count for the workload)" },
    { "slots",    &slots,    "live blocks per thread (0: the workload's default)" },
    { "seed",     &seed,     "random seed" },
  };
  bench_parse(argc, argv, "The VVMalloc report's workloads W1/W2/W3: per-thread malloc/free churn over a bounded live set.",
              opts, sizeof opts / sizeof opts[0]);
  if (workload < 1 || workload > 3 || threads < 1) { fprintf(stderr, "bench-vv: bad --workload or --threads\n"); return 2; }
  const vv_workload_t *w = &vv_workloads[workload - 1];
  if (ops == 0) ops = w->ops;
  if (slots == 0) slots = w->slots;

  vv_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  for (long i = 0; i < threads; i++)
    ts[i] = (vv_thread_t){ .w = w, .ops = ops, .slots = slots, .seed = seed, .index = i };
  double seconds = bench_run_threads(threads, vv_thread, ts, sizeof *ts);
  long errors = 0;
  for (long i = 0; i < threads; i++) errors += ts[i].errors;
  free(ts);
  char name[8];
  snprintf(name, sizeof name, "w%ld", workload);
  return bench_report(name, threads, ops, seconds, errors);
}
