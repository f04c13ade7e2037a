/* SPDX-License-Identifier: Apache-2.0 */
/* dist-load: one scheduler under many workers, as in the Myrmics paper's
 * Fig. 4e, where the scheduler's latency grew with the workers it served.
 *
 * Every worker, at once (a barrier starts each repetition), allocates and
 * frees 64 B objects in a region of its own: `calls` sys_alloc then as many
 * sys_free, timed as one batch. Worker 0 gathers each worker's ns per call
 * and prints, per repetition's median, the median and slowest worker and the
 * calls per second of all workers together. With MANYMALLOC_DIST_LEASE=0
 * every call is a round trip ("remote"); by default the calls stay on the
 * worker ("local"). Appends one JSON line to --out/load.jsonl.
 *
 *   mpirun -np W+1 ./dist-load [--out DIR] [--reps N] [--calls N]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manymalloc/myrmics.h"
#include "out.h"
#include "timing.h"

static void load_fail(const char *call) {
  fprintf(stderr, "dist-load: worker %d: %s failed: %s\n", sys_worker_id(), call,
          sys_strerror(sys_last_error()));
  exit(1);
}

/* One repetition on this worker: ns per call over calls allocations and
 * as many frees. */
static double load_once(rid_t r, void **obj, size_t calls) {
  if (sys_barrier() != 0) load_fail("sys_barrier");
  double t0 = bench_now_ns();
  for (size_t i = 0; i < calls; i++)
    if ((obj[i] = sys_alloc(64, r)) == NULL) load_fail("sys_alloc");
  for (size_t i = 0; i < calls; i++)
    if (sys_free(obj[i]) != 0) load_fail("sys_free");
  return (bench_now_ns() - t0) / (double)(2 * calls);
}

typedef struct load_result {
  double median_ns, slowest_ns, calls_per_s;
} load_result_t;

/* Worker 0: each repetition's per-worker numbers, reduced over repetitions
 * by their medians. */
static load_result_t load_reduce(const double *all, int workers, int reps) {
  double med[reps], slow[reps], rate[reps];
  for (int k = 0; k < reps; k++) {
    double row[workers], sum_rate = 0;
    for (int w = 0; w < workers; w++) {
      row[w] = all[w * reps + k];
      sum_rate += 1e9 / row[w];
    }
    med[k] = bench_median(row, (size_t)workers);
    slow[k] = row[workers - 1];
    rate[k] = sum_rate;
  }
  return (load_result_t){bench_median(med, (size_t)reps), bench_median(slow, (size_t)reps),
                         bench_median(rate, (size_t)reps)};
}

static void load_report(const char *dir, int workers, size_t calls, int reps, load_result_t r) {
  const char *lease = getenv("MANYMALLOC_DIST_LEASE");
  const char *mode = lease != NULL && strcmp(lease, "0") == 0 ? "remote" : "local";
  printf("dist-load, %s, %d workers: %.0f ns per call (median worker), %.0f (slowest), %.3g calls/s in all\n",
         mode, workers, r.median_ns, r.slowest_ns, r.calls_per_s);
  bench_out_dir("dist-load", dir);
  char path[4096];
  snprintf(path, sizeof path, "%s/load.jsonl", dir);
  FILE *f = fopen(path, "a");
  if (f == NULL) load_fail("fopen of load.jsonl");
  fprintf(f, "{\"mode\": \"%s\", \"workers\": %d, \"calls\": %zu, \"reps\": %d, \"median_ns\": %.1f, "
             "\"slowest_ns\": %.1f, \"calls_per_s\": %.1f}\n",
          mode, workers, calls, reps, r.median_ns, r.slowest_ns, r.calls_per_s);
  bench_out_close("dist-load", f, "load.jsonl");
}

int myrmics_main(int argc, char **argv) {
  const char *out = ".";
  int reps = 5;
  size_t calls = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--out") == 0) out = argv[i + 1];
    else if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--calls") == 0) calls = (size_t)atol(argv[i + 1]);
  }
  if (reps < 1 || calls < 1) {
    fprintf(stderr, "usage: dist-load [--out DIR] [--reps N >= 1] [--calls N >= 1]\n");
    return 2;
  }
  int workers = sys_num_workers(), me = sys_worker_id();
  rid_t r = sys_ralloc(0, 0);
  void **obj = malloc(calls * sizeof *obj);
  double *mine = malloc((size_t)(reps + 1) * sizeof *mine), *all = NULL;
  if (r < 0 || obj == NULL || mine == NULL) load_fail("setup");
  for (int k = 0; k <= reps; k++) mine[k] = load_once(r, obj, calls);   /* [0]: warm-up */
  if (me == 0 && (all = malloc((size_t)workers * (size_t)reps * sizeof *all)) == NULL) load_fail("malloc");
  MPI_Gather(mine + 1, reps, MPI_DOUBLE, all, reps, MPI_DOUBLE, 0, sys_worker_comm());
  if (me == 0) load_report(out, workers, calls, reps, load_reduce(all, workers, reps));
  sys_rfree(r);
  free(obj), free(mine), free(all);
  return 0;
}
