/* SPDX-License-Identifier: Apache-2.0 */
/* bench-xmalloc: many-to-many exchange of blocks between threads (the
 * pattern of xmalloc-test, written anew).
 *
 * Every thread, at random, either allocates a batch of blocks and puts it on
 * a shared pool, or takes a batch some thread put there and frees its blocks.
 * Unlike bench-prodcons no thread is tied to one partner: blocks go from any
 * thread to any other, and each thread both allocates and frees remotely.
 * The pool moves whole batches under one mutex, so it is taken once per 64
 * blocks and costs little next to malloc/free. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

#define XM_BATCH 64          /* blocks per batch */
#define XM_POOL_MAX 4096     /* batches on the pool before threads must take */

typedef struct xm_batch_s {
  struct xm_batch_s *next;
  size_t *blocks[XM_BATCH];  /* each holds its size in its first word */
} xm_batch_t;

typedef struct xm_thread_s {
  long ops, min, max, seed, index;
  long errors;
} xm_thread_t;

static struct {
  pthread_mutex_t lock;
  xm_batch_t *top;
  long count;
} xm_pool = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };

static void xm_push(xm_batch_t *b) {
  pthread_mutex_lock(&xm_pool.lock);
  b->next = xm_pool.top;
  xm_pool.top = b;
  xm_pool.count++;
  pthread_mutex_unlock(&xm_pool.lock);
}

/* Takes a batch when `want` or when the pool is full; NULL means produce. */
static xm_batch_t *xm_pop(bool want) {
  pthread_mutex_lock(&xm_pool.lock);
  xm_batch_t *b = (want || xm_pool.count >= XM_POOL_MAX) ? xm_pool.top : NULL;
  if (b != NULL) { xm_pool.top = b->next; xm_pool.count--; }
  pthread_mutex_unlock(&xm_pool.lock);
  return b;
}

static xm_batch_t *xm_produce(xm_thread_t *t, uint64_t *rng) {
  xm_batch_t *b = malloc(sizeof *b);
  if (b == NULL) { perror("malloc"); exit(1); }
  for (int i = 0; i < XM_BATCH; i++) {
    size_t size = bench_rand_range(rng, (size_t)t->min, (size_t)t->max);
    size_t *p = malloc(size);
    if (p == NULL) { perror("malloc"); exit(1); }
    p[0] = size;
    ((unsigned char *)p)[size - 1] = (unsigned char)size;
    b->blocks[i] = p;
  }
  return b;
}

static long xm_consume(xm_batch_t *b) {
  long errors = 0;
  for (int i = 0; i < XM_BATCH; i++) {
    size_t *p = b->blocks[i];
    if (((unsigned char *)p)[p[0] - 1] != (unsigned char)p[0]) errors++;
    else free(p);
  }
  free(b);
  return errors;
}

static void *xm_thread(void *arg) {
  xm_thread_t *t = arg;
  uint64_t rng = bench_seed(t->seed, t->index);
  bench_start_wait();
  for (long done = 0; done < t->ops; done += XM_BATCH) {
    xm_batch_t *b = xm_pop(bench_rand(&rng) & 1);
    if (b != NULL) t->errors += xm_consume(b);
    else xm_push(xm_produce(t, &rng));
  }
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, ops = 1000000, min = 16, max = 1024, seed = 1;
  bench_opt_t opts[] = {
    { "threads", &threads, "worker threads" },
    { "ops",     &ops,     "blocks each thread allocates or frees (in batches of 64)" },
    { "min",     &min,     "smallest request in bytes (>= 16)" },
    { "max",     &max,     "largest request in bytes" },
    { "seed",    &seed,    "random seed" },
  };
  bench_parse(argc, argv, "Many-to-many: batches of blocks allocated by any thread, freed by any other.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || min < 16 || max < min) { fprintf(stderr, "bench-xmalloc: bad options\n"); return 2; }

  xm_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  for (long i = 0; i < threads; i++)
    ts[i] = (xm_thread_t){ .ops = ops, .min = min, .max = max, .seed = seed, .index = i };
  double seconds = bench_run_threads(threads, xm_thread, ts, sizeof *ts);
  long errors = 0;
  for (long i = 0; i < threads; i++) errors += ts[i].errors;
  for (xm_batch_t *b; (b = xm_pop(true)) != NULL;) errors += xm_consume(b);
  free(ts);
  return bench_report("xmalloc", threads, ops, seconds, errors);
}
