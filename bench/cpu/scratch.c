/* SPDX-License-Identifier: Apache-2.0 */
/* bench-scratch: passive false sharing of small objects handed between
 * threads (the cache-scratch pattern, written anew).
 *
 * The main thread allocates one small object per worker back to back, so
 * they likely share cache lines, and hands object i to worker i. Each worker
 * frees it, then repeatedly allocates an object of the same size, writes it
 * many times and frees it. An allocator that gives the freed object back to
 * the worker that freed it keeps the workers writing into the main thread's
 * shared cache lines; one that serves each thread from its own memory does
 * not, and the time stays flat as workers are added. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct scratch_thread_s {
  unsigned char *first;  /* the object the main thread allocated for us */
  long size, iters, writes;
  long errors;
} scratch_thread_t;

static void scratch_write(volatile unsigned char *obj, long size, long writes) {
  for (long w = 0; w < writes; w++)
    for (long b = 0; b < size; b++) obj[b]++;
}

static void *scratch_thread(void *arg) {
  scratch_thread_t *t = arg;
  bench_start_wait();
  free(t->first);
  for (long i = 0; i < t->iters; i++) {
    unsigned char *obj = malloc((size_t)t->size);
    if (obj == NULL) { perror("malloc"); exit(1); }
    for (long b = 0; b < t->size; b++) obj[b] = 0;
    scratch_write(obj, t->size, t->writes);
    if (obj[0] != (unsigned char)t->writes || obj[t->size - 1] != (unsigned char)t->writes) t->errors++;
    free(obj);
  }
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, size = 8, iters = 1000, writes = 1000;
  bench_opt_t opts[] = {
    { "threads", &threads, "worker threads" },
    { "size",    &size,    "object size in bytes" },
    { "iters",   &iters,   "malloc/write/free rounds per thread" },
    { "writes",  &writes,  "passes of writes over the object per round" },
  };
  bench_parse(argc, argv, "Passive false sharing: small objects allocated by one thread, written by others.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || size < 1) { fprintf(stderr, "bench-scratch: bad options\n"); return 2; }

  scratch_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  for (long i = 0; i < threads; i++) {
    ts[i] = (scratch_thread_t){ .first = malloc((size_t)size), .size = size, .iters = iters, .writes = writes };
    if (ts[i].first == NULL) { perror("malloc"); return 1; }
  }
  double seconds = bench_run_threads(threads, scratch_thread, ts, sizeof *ts);
  long errors = 0;
  for (long i = 0; i < threads; i++) errors += ts[i].errors;
  free(ts);
  return bench_report("scratch", threads, iters, seconds, errors);
}
