/* SPDX-License-Identifier: Apache-2.0 */
/* bench-stress: many threads of random sizes that come and go, some of
 * their blocks freed by other threads (the shape of a stress test, written
 * anew for timing).
 *
 * --threads N workers are alive at once; each lives for a random number of
 * steps around --ops and is then joined and replaced by a new thread, until
 * --lives threads have lived per worker slot: threads start and exit all
 * through the run, not in generations.  A step replaces a random one of the
 * thread's live blocks (free + malloc of a size drawn mostly small, some
 * medium, a few up to 64 KiB); one step in --share also swaps one of them
 * with a random cell of a table every thread shares, so that block is freed
 * later by whichever thread takes it, maybe after its allocator exited.  A
 * thread that exits frees half its blocks and leaves the rest in the table.
 * The time includes the threads' creation and exit: what this stresses is
 * the allocator's heap set-up, hand-over and remote frees together.  With N
 * above the core count the threads also share cores (oversubscription). */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define STRESS_TABLE 4096   /* cells of the shared table */

typedef struct stress_worker_s {
  long ops, slots, share, seed, index, life;
  long errors;
} stress_worker_t;

static _Atomic(size_t *) stress_table[STRESS_TABLE];

/* 89% 16-256 B, 10% up to 4 KiB, 1% up to 64 KiB. */
static size_t stress_size(uint64_t *rng) {
  unsigned p = (unsigned)(bench_rand(rng) % 100);
  if (p < 89) return bench_rand_range(rng, 16, 256);
  if (p < 99) return bench_rand_range(rng, 257, 4096);
  return bench_rand_range(rng, 4097, 65536);
}

/* A block carries its size in its first word and the size's low byte in its
 * last byte, so whichever thread frees it can check it. */
static size_t *stress_alloc(uint64_t *rng) {
  size_t size = stress_size(rng);
  size_t *b = malloc(size);
  if (b == NULL) { perror("malloc"); exit(1); }
  b[0] = size;
  ((unsigned char *)b)[size - 1] = (unsigned char)size;
  return b;
}

static void stress_free(stress_worker_t *w, size_t *b) {
  if (b == NULL) return;
  if (b[0] < 16 || b[0] > 65536 || ((unsigned char *)b)[b[0] - 1] != (unsigned char)b[0]) w->errors++;
  free(b);
}

static void stress_swap(size_t **slot, uint64_t *rng) {
  size_t cell = (size_t)(bench_rand(rng) % STRESS_TABLE);
  *slot = atomic_exchange_explicit(&stress_table[cell], *slot, memory_order_acq_rel);
}

static void *stress_thread(void *arg) {
  stress_worker_t *w = arg;
  uint64_t rng = bench_seed(w->seed + w->life, w->index);
  size_t **live = calloc((size_t)w->slots, sizeof *live);
  if (live == NULL) { perror("calloc"); exit(1); }
  long steps = (long)bench_rand_range(&rng, (size_t)w->ops / 2, (size_t)w->ops * 3 / 2);
  for (long i = 0; i < steps; i++) {
    size_t **slot = &live[bench_rand(&rng) % (uint64_t)w->slots];
    stress_free(w, *slot);
    *slot = stress_alloc(&rng);
    if (w->share > 0 && bench_rand(&rng) % (uint64_t)w->share == 0) stress_swap(slot, &rng);
  }
  for (long s = 0; s < w->slots; s++) {
    if (s % 2 == 0 && live[s] != NULL) stress_swap(&live[s], &rng);
    stress_free(w, live[s]);
  }
  free(live);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, lives = 20, ops = 100000, slots = 500, share = 16, seed = 1;
  bench_opt_t opts[] = {
    { "threads", &threads, "worker threads alive at once" },
    { "lives",   &lives,   "threads started one after another in each worker slot" },
    { "ops",     &ops,     "steps of a thread's life, on average (half to 1.5 times)" },
    { "slots",   &slots,   "live blocks per thread" },
    { "share",   &share,   "one step in this many swaps a block with the shared table (0: never)" },
    { "seed",    &seed,    "random seed" },
  };
  bench_parse(argc, argv, "Many threads that come and go, random sizes, some blocks freed by other threads.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || lives < 1 || ops < 2 || slots < 1) { fprintf(stderr, "bench-stress: bad options\n"); return 2; }

  stress_worker_t *ws = calloc((size_t)threads, sizeof *ws);
  pthread_t *tids = calloc((size_t)threads, sizeof *tids);
  for (long i = 0; i < threads; i++)
    ws[i] = (stress_worker_t){ .ops = ops, .slots = slots, .share = share, .seed = seed, .index = i };
  uint64_t t0 = bench_now_ns();
  for (long i = 0; i < threads; i++)
    if (pthread_create(&tids[i], NULL, stress_thread, &ws[i]) != 0) { perror("pthread_create"); return 1; }
  /* Lives differ in length, so joining the slots in turn restarts each
   * while the others still run. */
  for (long life = 1; life < lives; life++) {
    for (long i = 0; i < threads; i++) {
      pthread_join(tids[i], NULL);
      ws[i].life = life;
      if (pthread_create(&tids[i], NULL, stress_thread, &ws[i]) != 0) { perror("pthread_create"); return 1; }
    }
  }
  for (long i = 0; i < threads; i++) pthread_join(tids[i], NULL);
  double seconds = (double)(bench_now_ns() - t0) * 1e-9;
  long errors = 0;
  stress_worker_t main_side = { 0 };
  for (size_t c = 0; c < STRESS_TABLE; c++) stress_free(&main_side, atomic_load(&stress_table[c]));
  for (long i = 0; i < threads; i++) errors += ws[i].errors;
  free(tids);
  free(ws);
  return bench_report("stress", threads, lives * ops, seconds, errors + main_side.errors);
}
