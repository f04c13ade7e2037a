/* SPDX-License-Identifier: Apache-2.0 */
/* bench-churn: server-style random churn with blocks handed across threads
 * (the pattern of the Larson server benchmark, written anew).
 *
 * Each thread keeps a slot array of live blocks of random sizes and, in each
 * round, replaces random slots' blocks (free + malloc). Between rounds every
 * thread hands a fraction of its slots, blocks included, to the next thread,
 * which frees them later in its own churn: most frees are local, a steady
 * share are frees of memory another thread allocated, as in a server whose
 * requests are allocated by one worker and released by another. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct churn_thread_s {
  long index, threads, rounds, ops, slots, handoff, min, max, seed;
  void **blocks;    /* slots live blocks, owned by this thread during a round */
  size_t *sizes;
  long errors;
} churn_thread_t;

static churn_thread_t *churn_threads;
static pthread_barrier_t churn_round;

/* Rotates the first `handoff` percent of every thread's slots, blocks
 * included, to the next thread. One thread does it between two barriers,
 * while nobody churns, so the exchange needs no other synchronization. */
static void churn_hand_over(churn_thread_t *t) {
  if (pthread_barrier_wait(&churn_round) == PTHREAD_BARRIER_SERIAL_THREAD) {
    long n = t->slots * t->handoff / 100;
    for (long s = 0; s < n; s++) {
      void *b = churn_threads[t->threads - 1].blocks[s];
      size_t z = churn_threads[t->threads - 1].sizes[s];
      for (long i = t->threads - 1; i > 0; i--) {
        churn_threads[i].blocks[s] = churn_threads[i - 1].blocks[s];
        churn_threads[i].sizes[s] = churn_threads[i - 1].sizes[s];
      }
      churn_threads[0].blocks[s] = b;
      churn_threads[0].sizes[s] = z;
    }
  }
  pthread_barrier_wait(&churn_round);
}

static void *churn_thread(void *arg) {
  churn_thread_t *t = arg;
  uint64_t rng = bench_seed(t->seed, t->index);
  bench_start_wait();
  for (long s = 0; s < t->slots; s++) {
    t->sizes[s] = bench_rand_range(&rng, (size_t)t->min, (size_t)t->max);
    t->blocks[s] = malloc(t->sizes[s]);
    bench_touch(t->blocks[s], t->sizes[s], (unsigned char)t->sizes[s]);
  }
  for (long r = 0; r < t->rounds; r++) {
    for (long i = 0; i < t->ops; i++) {
      size_t s = (size_t)(bench_rand(&rng) % (uint64_t)t->slots);
      if (!bench_check(t->blocks[s], t->sizes[s], (unsigned char)t->sizes[s])) t->errors++;
      free(t->blocks[s]);
      t->sizes[s] = bench_rand_range(&rng, (size_t)t->min, (size_t)t->max);
      t->blocks[s] = malloc(t->sizes[s]);
      if (t->blocks[s] == NULL) { perror("malloc"); exit(1); }
      bench_touch(t->blocks[s], t->sizes[s], (unsigned char)t->sizes[s]);
    }
    churn_hand_over(t);
  }
  for (long s = 0; s < t->slots; s++) free(t->blocks[s]);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, rounds = 20, ops = 100000, slots = 1000, handoff = 50, min = 8, max = 1000, seed = 1;
  bench_opt_t opts[] = {
    { "threads", &threads, "worker threads" },
    { "rounds",  &rounds,  "churn rounds; blocks change hands after each" },
    { "ops",     &ops,     "free+malloc pairs per thread per round" },
    { "slots",   &slots,   "live blocks per thread" },
    { "handoff", &handoff, "percent of the slots handed to the next thread per round" },
    { "min",     &min,     "smallest request in bytes" },
    { "max",     &max,     "largest request in bytes" },
    { "seed",    &seed,    "random seed" },
  };
  bench_parse(argc, argv, "Server-style churn: random sizes, a share of the blocks freed by another thread.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || slots < 1 || min < 1 || max < min || handoff > 100) { fprintf(stderr, "bench-churn: bad options\n"); return 2; }

  churn_threads = calloc((size_t)threads, sizeof *churn_threads);
  for (long i = 0; i < threads; i++) {
    churn_threads[i] = (churn_thread_t){ .index = i, .threads = threads, .rounds = rounds, .ops = ops,
      .slots = slots, .handoff = handoff, .min = min, .max = max, .seed = seed,
      .blocks = calloc((size_t)slots, sizeof(void *)), .sizes = calloc((size_t)slots, sizeof(size_t)) };
  }
  pthread_barrier_init(&churn_round, NULL, (unsigned)threads);
  double seconds = bench_run_threads(threads, churn_thread, churn_threads, sizeof *churn_threads);
  long errors = 0;
  for (long i = 0; i < threads; i++) {
    errors += churn_threads[i].errors;
    free(churn_threads[i].blocks);
    free(churn_threads[i].sizes);
  }
  free(churn_threads);
  return bench_report("churn", threads, rounds * ops, seconds, errors);
}
