/* SPDX-License-Identifier: Apache-2.0 */
/* bench-spawn: many short-lived threads.
 *
 * Each generation starts --threads threads that allocate a burst of blocks,
 * free half of them, leave the other half for the thread of the same index
 * in the next generation to free, and exit. The allocator pays its thread
 * start-up and tear-down costs over and over, must take back the memory of
 * dead threads, and sees frees of blocks whose allocating thread is gone.
 * Thread creation is part of the measured time: it is what this stresses. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct spawn_thread_s {
  void **left;     /* blocks left by the previous generation; refilled for the next */
  long burst, min, max, seed, index;
  long errors;
} spawn_thread_t;

static void *spawn_thread(void *arg) {
  spawn_thread_t *t = arg;
  uint64_t rng = bench_seed(t->seed, t->index);
  long keep = t->burst / 2;
  for (long i = 0; i < keep; i++) {
    size_t *b = t->left[i];
    if (b == NULL) continue;
    if (((unsigned char *)b)[b[0] - 1] != (unsigned char)b[0]) t->errors++;
    free(b);
  }
  for (long i = 0; i < t->burst; i++) {
    size_t size = bench_rand_range(&rng, (size_t)t->min, (size_t)t->max);
    size_t *b = malloc(size);
    if (b == NULL) { perror("malloc"); exit(1); }
    b[0] = size;
    ((unsigned char *)b)[size - 1] = (unsigned char)size;
    if (i < keep) t->left[i] = b;
    else free(b);
  }
  t->seed++;
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, generations = 200, burst = 2000, min = 16, max = 2048, seed = 1;
  bench_opt_t opts[] = {
    { "threads",     &threads,     "threads alive at once (one generation)" },
    { "generations", &generations, "generations of threads started one after another" },
    { "burst",       &burst,       "blocks each thread allocates (half are left to the next generation)" },
    { "min",         &min,         "smallest request in bytes (>= 16)" },
    { "max",         &max,         "largest request in bytes" },
    { "seed",        &seed,        "random seed" },
  };
  bench_parse(argc, argv, "Many short-lived threads, each allocating a burst and leaving blocks to later threads.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || min < 16 || max < min) { fprintf(stderr, "bench-spawn: bad options\n"); return 2; }

  spawn_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  pthread_t *tids = calloc((size_t)threads, sizeof *tids);
  for (long i = 0; i < threads; i++)
    ts[i] = (spawn_thread_t){ .left = calloc((size_t)(burst / 2 + 1), sizeof(void *)), .burst = burst,
                              .min = min, .max = max, .seed = seed, .index = i };
  uint64_t t0 = bench_now_ns();
  for (long g = 0; g < generations; g++) {
    for (long i = 0; i < threads; i++)
      if (pthread_create(&tids[i], NULL, spawn_thread, &ts[i]) != 0) { perror("pthread_create"); return 1; }
    for (long i = 0; i < threads; i++) pthread_join(tids[i], NULL);
  }
  double seconds = (double)(bench_now_ns() - t0) * 1e-9;
  long errors = 0;
  for (long i = 0; i < threads; i++) {
    for (long k = 0; k < burst / 2; k++) free(ts[i].left[k]);
    free(ts[i].left);
    errors += ts[i].errors;
  }
  free(tids);
  free(ts);
  return bench_report("spawn", threads, generations, seconds, errors);
}
