/* SPDX-License-Identifier: Apache-2.0 */
/* dist-latency: how long the dist allocator's object calls take as worker 0
 * sees them, through include/manymalloc/myrmics.h alone.
 *
 * Each repetition, in one region: sys_alloc(64) timed call by call (the
 * median) and in one batch (the mean), sys_free the same two ways, and
 * sys_balloc of 1000 objects (ns per object). The result is the median over
 * the repetitions, after one untimed warm-up repetition that brings the
 * region its first slabs. Run it twice: with MANYMALLOC_DIST_LEASE=0 every
 * call is a round trip to the scheduler ("remote"); by default 64 B objects
 * come from slabs leased to the worker ("local"). Writes
 * latency_<mode>.json into --out and prints a table with the goals.
 *
 *   mpirun -np 2 ./dist-latency [--out DIR] [--reps N] [--calls N]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manymalloc/myrmics.h"
#include "out.h"
#include "timing.h"

#define LAT_SIZE   64
#define LAT_BALLOC 1000
#define LAT_BALLOC_CALLS 10 /* sys_balloc calls per repetition */

/* What a repetition measures, in ns: indices into lat_metrics_t.v. */
enum {
  ALLOC_MEDIAN, FREE_MEDIAN,  /* one call timed at a time, the median */
  ALLOC_P99, FREE_P99,        /* and the 99th percentile: the median hides a slow tail */
  ALLOC_BATCH, FREE_BATCH,    /* per call over a batch of calls */
  BALLOC,                     /* per object of sys_balloc(LAT_BALLOC) */
  LAT_NMETRICS
};
typedef struct lat_metrics {
  double v[LAT_NMETRICS];
} lat_metrics_t;
/* Their keys in latency_<mode>.json. */
static const char *const lat_keys[LAT_NMETRICS] = {
  "alloc_median_ns", "free_median_ns", "alloc_p99_ns", "free_p99_ns",
  "alloc_batch_ns", "free_batch_ns", "balloc_ns_per_object"};

typedef struct lat_goal {
  const char *what;
  double value, limit;                /* ns; met when value <= limit */
} lat_goal_t;

/* After bench_median (v sorted): the 99th percentile. */
static double lat_p99(const double *v, size_t n) { return v[n * 99 / 100]; }

static void lat_fail(const char *call) {
  fprintf(stderr, "dist-latency: %s failed: %s\n", call, sys_strerror(sys_last_error()));
  exit(1);
}

/* ---------------------------------------------------------------------------
 * One repetition
 * ------------------------------------------------------------------------- */

/* sys_alloc, then sys_free, each call timed on its own: the medians and
 * 99th percentiles. */
static void lat_single(rid_t r, void **obj, double *dt, size_t n, lat_metrics_t *m) {
  for (size_t i = 0; i < n; i++) {
    double t0 = bench_now_ns();
    obj[i] = sys_alloc(LAT_SIZE, r);
    dt[i] = bench_now_ns() - t0;
    if (obj[i] == NULL) lat_fail("sys_alloc");
  }
  m->v[ALLOC_MEDIAN] = bench_median(dt, n);
  m->v[ALLOC_P99] = lat_p99(dt, n);
  for (size_t i = 0; i < n; i++) {
    double t0 = bench_now_ns();
    int rc = sys_free(obj[i]);
    dt[i] = bench_now_ns() - t0;
    if (rc != 0) lat_fail("sys_free");
  }
  m->v[FREE_MEDIAN] = bench_median(dt, n);
  m->v[FREE_P99] = lat_p99(dt, n);
}

/* The same calls back to back, one clock read around all of them: the
 * local path is too fast for a clock read per call not to dominate. */
static void lat_batch(rid_t r, void **obj, size_t n, lat_metrics_t *m) {
  double t0 = bench_now_ns();
  for (size_t i = 0; i < n; i++) obj[i] = sys_alloc(LAT_SIZE, r);
  m->v[ALLOC_BATCH] = (bench_now_ns() - t0) / (double)n;
  for (size_t i = 0; i < n; i++)
    if (obj[i] == NULL) lat_fail("sys_alloc");
  int bad = 0;
  t0 = bench_now_ns();
  for (size_t i = 0; i < n; i++) bad |= sys_free(obj[i]);
  m->v[FREE_BATCH] = (bench_now_ns() - t0) / (double)n;
  if (bad) lat_fail("sys_free");
}

/* sys_balloc(LAT_BALLOC) LAT_BALLOC_CALLS times, each freed untimed: the
 * median ns per object. */
static void lat_balloc(rid_t r, void **obj, lat_metrics_t *m) {
  double per[LAT_BALLOC_CALLS];
  for (int k = 0; k < LAT_BALLOC_CALLS; k++) {
    double t0 = bench_now_ns();
    int rc = sys_balloc(LAT_SIZE, r, LAT_BALLOC, obj);
    per[k] = (bench_now_ns() - t0) / LAT_BALLOC;
    if (rc != 0) lat_fail("sys_balloc");
    for (int i = 0; i < LAT_BALLOC; i++)
      if (sys_free(obj[i]) != 0) lat_fail("sys_free");
  }
  m->v[BALLOC] = bench_median(per, LAT_BALLOC_CALLS);
}

/* reps repetitions after a warm-up: each metric's median over them. */
static lat_metrics_t lat_measure(rid_t r, size_t calls, int reps) {
  size_t cap = calls > LAT_BALLOC ? calls : LAT_BALLOC;
  void **obj = malloc(cap * sizeof(*obj));
  double *dt = malloc(calls * sizeof(*dt));
  lat_metrics_t *rep = malloc((size_t)(reps + 1) * sizeof(*rep)), result;
  if (obj == NULL || dt == NULL || rep == NULL) {
    fprintf(stderr, "dist-latency: out of memory\n");
    exit(1);
  }
  for (int k = 0; k <= reps; k++) {
    lat_single(r, obj, dt, calls, &rep[k]);
    lat_batch(r, obj, calls, &rep[k]);
    lat_balloc(r, obj, &rep[k]);
  }
  double col[reps];
  for (int j = 0; j < LAT_NMETRICS; j++) {
    for (int k = 0; k < reps; k++) col[k] = rep[k + 1].v[j];
    result.v[j] = bench_median(col, (size_t)reps);
  }
  free(obj), free(dt), free(rep);
  return result;
}

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

/* The goals that this mode's numbers answer: the round trip of a
 * scheduler call (remote), the per-object cost of the local path, and
 * sys_balloc(1000) in either mode. */
static int lat_goals(int remote, const lat_metrics_t *m, lat_goal_t *g) {
  int n = 0;
  if (remote) g[n++] = (lat_goal_t){"sys_alloc round trip, median", m->v[ALLOC_MEDIAN], 5000};
  else {
    g[n++] = (lat_goal_t){"local sys_alloc, per object", m->v[ALLOC_BATCH], 100};
    g[n++] = (lat_goal_t){"local sys_free, per object", m->v[FREE_BATCH], 100};
  }
  g[n++] = (lat_goal_t){"sys_balloc(1000), per object", m->v[BALLOC], 100};
  return n;
}

static void lat_print(const char *mode, const lat_metrics_t *m, const lat_goal_t *g, int ngoals) {
  printf("dist-latency, %s (ns, median of repetitions)\n", mode);
  printf("  %-34s %10s %10s\n", "", "sys_alloc", "sys_free");
  printf("  %-34s %10.0f %10.0f\n", "one call timed at a time, median", m->v[ALLOC_MEDIAN], m->v[FREE_MEDIAN]);
  printf("  %-34s %10.0f %10.0f\n", "one call timed at a time, p99", m->v[ALLOC_P99], m->v[FREE_P99]);
  printf("  %-34s %10.1f %10.1f\n", "batch of calls, per call", m->v[ALLOC_BATCH], m->v[FREE_BATCH]);
  printf("  %-34s %10.1f\n", "sys_balloc(1000), per object", m->v[BALLOC]);
  for (int i = 0; i < ngoals; i++)
    printf("  goal %s <= %.0f ns: %s (%.1f ns)\n", g[i].what, g[i].limit,
           g[i].value <= g[i].limit ? "met" : "NOT met", g[i].value);
}

static void lat_write_json(const char *dir, const char *mode, size_t calls, int reps,
                           const lat_metrics_t *m, const lat_goal_t *g, int ngoals) {
  char name[64];
  snprintf(name, sizeof name, "latency_%s.json", mode);
  FILE *f = bench_out_open("dist-latency", dir, name);
  fprintf(f, "{\"mode\": \"%s\", \"size\": %d, \"calls\": %zu, \"reps\": %d, \"balloc_objects\": %d,\n",
          mode, LAT_SIZE, calls, reps, LAT_BALLOC);
  for (int j = 0; j < LAT_NMETRICS; j++) fprintf(f, " \"%s\": %.2f,\n", lat_keys[j], m->v[j]);
  fprintf(f, " \"goals\": [");
  for (int i = 0; i < ngoals; i++)
    fprintf(f, "%s\n  {\"what\": \"%s\", \"value\": %.2f, \"limit\": %.0f, \"met\": %s}", i ? "," : "",
            g[i].what, g[i].value, g[i].limit, g[i].value <= g[i].limit ? "true" : "false");
  fprintf(f, "]}\n");
  bench_out_close("dist-latency", f, name);
}

/* ---------------------------------------------------------------------------
 * Options and main
 * ------------------------------------------------------------------------- */

static void lat_usage(const char *prog) {
  fprintf(stderr, "usage: %s [--out DIR (.)] [--reps N (5)] [--calls N (10000)]\n", prog);
  exit(2);
}

static long lat_count(const char *prog, const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v <= 0) lat_usage(prog);
  return v;
}

static void lat_parse(int argc, char **argv, const char **out, int *reps, size_t *calls) {
  if (argc % 2 == 0) lat_usage(argv[0]);   /* every option takes a value */
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--out") == 0) *out = argv[i + 1];
    else if (strcmp(argv[i], "--reps") == 0) *reps = (int)lat_count(argv[0], argv[i + 1]);
    else if (strcmp(argv[i], "--calls") == 0) *calls = (size_t)lat_count(argv[0], argv[i + 1]);
    else lat_usage(argv[0]);
  }
}

int myrmics_main(int argc, char **argv) {
  const char *out = ".";
  int reps = 5;
  size_t calls = 10000;
  lat_parse(argc, argv, &out, &reps, &calls);
  if (sys_worker_id() != 0) return 0;   /* one worker measures; the others only end */
  bench_out_dir("dist-latency", out);
  const char *lease = getenv("MANYMALLOC_DIST_LEASE");
  const char *mode = lease != NULL && strcmp(lease, "0") == 0 ? "remote" : "local";
  rid_t r = sys_ralloc(0, 0);
  if (r < 0) lat_fail("sys_ralloc");
  lat_metrics_t m = lat_measure(r, calls, reps);
  if (sys_rfree(r) != 0) lat_fail("sys_rfree");
  lat_goal_t goals[3];
  int ngoals = lat_goals(mode[0] == 'r', &m, goals);
  lat_print(mode, &m, goals, ngoals);
  lat_write_json(out, mode, calls, reps, &m, goals, ngoals);
  return 0;
}
