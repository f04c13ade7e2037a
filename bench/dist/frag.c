/* SPDX-License-Identifier: Apache-2.0 */
/* dist-frag: the fragmentation experiment of the Myrmics paper (Sect. 6.2,
 * Fig. 4a-c) on one region of mmd_core, serial, no MPI.
 *
 * Each run owns a fresh scheduler state with one region under the root. A
 * seeded random sequence allocates an object with probability p, else frees
 * a live object chosen at random; every K steps a sample records the bytes
 * the program asked for and the region's full and partial slabs. The runs:
 *   a  192 B objects, p = 0.6 throughout
 *   b  192 B objects, phases alternating p = 0.8 and p = 0.3
 *   c  as b, each size drawn from {64, 192, 1024, 1536, 4096, 50048}
 * Writes frag_<run>.csv (the samples) and frag.json (per run: final counts,
 * the partial/full slab ratio over the second half of the run, and the
 * issue's goal for run a) into --out, and prints the same.
 *
 *   dist-frag [--out DIR] [--scale F] [--seed N]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "out.h"
#include "region.h"

#define FRAG_SPACE   (64ull << 30)   /* global space: far more than any run touches */
#define FRAG_MAX_RID ((rid_t)1 << 20)
#define FRAG_SAMPLES 600             /* samples per run, about */
#define FRAG_GOAL    0.05            /* the issue: run a's partial slabs < 5% of its full slabs */

static const uint32_t sizes_one[] = {192};
static const uint32_t sizes_six[] = {64, 192, 1024, 1536, 4096, 50048};

typedef struct frag_run {
  const char *name, *title;
  double p[2];              /* allocation probability in even and odd phases */
  uint64_t steps;
  uint64_t phase_steps;     /* steps per phase (unscaled) */
  const uint32_t *sizes;
  unsigned nsizes;
} frag_run_t;

/* Steps such that each run ends with tens of thousands of live objects:
 * run a grows by 0.2 objects a step, b and c by 0.1 a step on average. */
static const frag_run_t frag_runs[] = {
  {"a", "192 B, p = 0.6", {0.6, 0.6}, 300000, 300000, sizes_one, 1},
  {"b", "192 B, phases p = 0.8 / 0.3", {0.8, 0.3}, 300000, 30000, sizes_one, 1},
  {"c", "six sizes, phases p = 0.8 / 0.3", {0.8, 0.3}, 300000, 30000, sizes_six, 6},
};
#define FRAG_NRUNS (sizeof(frag_runs) / sizeof(frag_runs[0]))

typedef struct frag_obj {
  uint64_t off;
  uint32_t size;
} frag_obj_t;

typedef struct frag_sample {
  uint64_t step, requested;
  double p;
  mmd_pool_counts_t c;
} frag_sample_t;

typedef struct frag_result {
  uint64_t steps, requested;
  mmd_pool_counts_t last;
  double max_ratio, mean_ratio, seconds;
} frag_result_t;

/* ---------------------------------------------------------------------------
 * Random numbers (splitmix64: seeded, the same sequence on every machine)
 * ------------------------------------------------------------------------- */

static uint64_t frag_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double frag_unit(uint64_t *s) { return (double)(frag_rand(s) >> 11) * 0x1p-53; }

static uint64_t frag_below(uint64_t *s, uint64_t n) { return (uint64_t)(frag_unit(s) * (double)n); }

/* ---------------------------------------------------------------------------
 * One run
 * ------------------------------------------------------------------------- */

static void frag_die(const char *what, const char *run, int code) {
  fprintf(stderr, "dist-frag: run %s: %s failed (%d)\n", run, what, code);
  exit(1);
}

/* One step: an allocation with probability p (always while nothing is
 * live), else the free of a random live object, which the last one
 * replaces in the array. Returns the change in requested bytes. */
static int64_t frag_step(mmd_regions_t *R, mmd_region_t *g, const frag_run_t *run, double p,
                         frag_obj_t *live, uint64_t *nlive, uint64_t *rng) {
  if (*nlive == 0 || frag_unit(rng) < p) {
    frag_obj_t *o = &live[(*nlive)++];
    o->size = run->sizes[frag_below(rng, run->nsizes)];
    int rc = mmd_region_alloc(R, g, o->size, &o->off);
    if (rc != 0) frag_die("mmd_region_alloc", run->name, rc);
    return o->size;
  }
  uint64_t i = frag_below(rng, *nlive);
  frag_obj_t o = live[i];
  live[i] = live[--*nlive];
  int32_t notify;   /* a worker leasing the slab: none here, nothing is leased */
  int rc = mmd_region_free(R, o.off, &notify);
  if (rc != 0) frag_die("mmd_region_free", run->name, rc);
  return -(int64_t)o.size;
}

/* The region's partial slabs over its full ones; before any slab is full,
 * each partial slab counts as 100%. */
static double frag_ratio(const mmd_pool_counts_t *c) {
  return (double)c->slabs_partial / (double)(c->slabs_full ? c->slabs_full : 1);
}

/* Steps the run and fills samples[] (one every interval steps and one at
 * the end); returns how many. */
static size_t frag_walk(const frag_run_t *run, uint64_t steps, uint64_t phase, uint64_t seed,
                        frag_sample_t *samples, frag_result_t *res) {
  mmd_regions_t R;
  int rc = mmd_regions_init(&R, FRAG_SPACE, FRAG_MAX_RID, true);
  if (rc != 0) frag_die("mmd_regions_init", run->name, rc);
  rid_t rid = mmd_region_create(&R, 0, 0);
  if (rid < 0) frag_die("mmd_region_create", run->name, (int)rid);
  mmd_region_t *g = mmd_region_get(&R, rid);
  frag_obj_t *live = malloc(steps * sizeof(*live));
  if (live == NULL) frag_die("malloc", run->name, -errno);

  uint64_t nlive = 0, requested = 0, rng = seed, interval = steps / FRAG_SAMPLES + 1, subregions;
  size_t n = 0;
  for (uint64_t s = 1; s <= steps; s++) {
    double p = run->p[(s - 1) / phase % 2];
    requested += frag_step(&R, g, run, p, live, &nlive, &rng);
    if (s % interval == 0 || s == steps) {
      frag_sample_t *x = &samples[n++];
      x->step = s, x->requested = requested, x->p = p;
      mmd_region_counts(g, 0, &x->c, &subregions);
    }
  }
  res->steps = steps, res->requested = requested, res->last = samples[n - 1].c;
  free(live);
  mmd_regions_destroy(&R);
  return n;
}

/* The partial/full ratio's maximum and mean over the second half of the
 * run: the first half holds the start-up, where a few slabs are all there
 * is and one partial slab is a large fraction. */
static void frag_window(const frag_sample_t *samples, size_t n, frag_result_t *res) {
  double sum = 0;
  size_t k = 0;
  res->max_ratio = 0;
  for (size_t i = 0; i < n; i++) {
    if (samples[i].step <= res->steps / 2) continue;
    double r = frag_ratio(&samples[i].c);
    res->max_ratio = r > res->max_ratio ? r : res->max_ratio;
    sum += r, k++;
  }
  res->mean_ratio = k ? sum / (double)k : 0;
}

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

static void frag_write_csv(const char *dir, const frag_run_t *run, const frag_sample_t *s, size_t n) {
  char name[64];
  snprintf(name, sizeof name, "frag_%s.csv", run->name);
  FILE *f = bench_out_open("dist-frag", dir, name);
  fprintf(f, "step,p_alloc,live_objects,requested_bytes,slot_bytes,slabs_full,slabs_partial,slabs_free\n");
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%llu,%.2f,%llu,%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)s[i].step, s[i].p,
            (unsigned long long)s[i].c.live_objects, (unsigned long long)s[i].requested,
            (unsigned long long)s[i].c.live_bytes, (unsigned long long)s[i].c.slabs_full,
            (unsigned long long)s[i].c.slabs_partial, (unsigned long long)s[i].c.slabs_free);
  bench_out_close("dist-frag", f, name);
}

static void frag_json_run(FILE *f, const frag_run_t *run, const frag_result_t *r, int last) {
  fprintf(f, "  {\"run\": \"%s\", \"title\": \"%s\", \"csv\": \"frag_%s.csv\", \"steps\": %llu,"
             " \"live_objects\": %llu, \"requested_bytes\": %llu, \"slot_bytes\": %llu,"
             " \"slabs_full\": %llu, \"slabs_partial\": %llu, \"slabs_free\": %llu,"
             " \"max_ratio\": %.6f, \"mean_ratio\": %.6f, \"seconds\": %.3f}%s\n",
          run->name, run->title, run->name, (unsigned long long)r->steps,
          (unsigned long long)r->last.live_objects, (unsigned long long)r->requested,
          (unsigned long long)r->last.live_bytes, (unsigned long long)r->last.slabs_full,
          (unsigned long long)r->last.slabs_partial, (unsigned long long)r->last.slabs_free,
          r->max_ratio, r->mean_ratio, r->seconds, last ? "" : ",");
}

/* frag.json: every run's result, and the goal judged on run a. */
static void frag_write_json(const char *dir, double scale, uint64_t seed, const frag_result_t *res) {
  FILE *f = bench_out_open("dist-frag", dir, "frag.json");
  fprintf(f, "{\"scale\": %g, \"seed\": %llu, \"window\": \"second half of the steps\",\n\"runs\": [\n",
          scale, (unsigned long long)seed);
  for (size_t i = 0; i < FRAG_NRUNS; i++) frag_json_run(f, &frag_runs[i], &res[i], i + 1 == FRAG_NRUNS);
  fprintf(f, "],\n\"goal\": {\"what\": \"run a: partial slabs < 5%% of full slabs (max over the second half)\","
             " \"value\": %.6f, \"limit\": %g, \"met\": %s}}\n",
          res[0].max_ratio, FRAG_GOAL, res[0].max_ratio < FRAG_GOAL ? "true" : "false");
  bench_out_close("dist-frag", f, "frag.json");
}

static void frag_print(const frag_run_t *run, const frag_result_t *r) {
  printf("run %s (%s): %llu steps in %.2f s, %llu live objects, %llu full / %llu partial slabs; "
         "partial/full over the second half: max %.2f%%, mean %.2f%%\n",
         run->name, run->title, (unsigned long long)r->steps, r->seconds,
         (unsigned long long)r->last.live_objects, (unsigned long long)r->last.slabs_full,
         (unsigned long long)r->last.slabs_partial, 100 * r->max_ratio, 100 * r->mean_ratio);
}

/* ---------------------------------------------------------------------------
 * Options and main
 * ------------------------------------------------------------------------- */

static void frag_usage(const char *prog) {
  fprintf(stderr, "usage: %s [--out DIR (.)] [--scale F (1: steps times F)] [--seed N (1)]\n", prog);
  exit(2);
}

static void frag_parse(int argc, char **argv, const char **out, double *scale, uint64_t *seed) {
  if (argc % 2 == 0) frag_usage(argv[0]);   /* every option takes a value */
  for (int i = 1; i < argc; i += 2) {
    const char *opt = argv[i], *val = argv[i + 1];
    char *end = NULL;
    if (strcmp(opt, "--out") == 0) {
      *out = val;
      continue;
    }
    if (strcmp(opt, "--scale") == 0) *scale = strtod(val, &end);
    else if (strcmp(opt, "--seed") == 0) *seed = strtoull(val, &end, 0);
    if (end == NULL || end == val || *end != '\0' || !(*scale > 0)) frag_usage(argv[0]);
  }
}

/* n times scale, at least 1. */
static uint64_t frag_scaled(uint64_t n, double scale) {
  uint64_t m = (uint64_t)(scale * (double)n + 0.5);
  return m ? m : 1;
}

static double frag_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  const char *out = ".";
  double scale = 1;
  uint64_t seed = 1;
  frag_parse(argc, argv, &out, &scale, &seed);
  bench_out_dir("dist-frag", out);
  frag_result_t res[FRAG_NRUNS];
  frag_sample_t *samples = malloc((FRAG_SAMPLES + 2) * sizeof(*samples));
  if (samples == NULL) return 1;
  for (size_t i = 0; i < FRAG_NRUNS; i++) {
    const frag_run_t *run = &frag_runs[i];
    uint64_t steps = frag_scaled(run->steps, scale), phase = frag_scaled(run->phase_steps, scale);
    double t0 = frag_now();
    size_t n = frag_walk(run, steps, phase, seed + i, samples, &res[i]);
    res[i].seconds = frag_now() - t0;
    frag_window(samples, n, &res[i]);
    frag_write_csv(out, run, samples, n);
    frag_print(run, &res[i]);
  }
  frag_write_json(out, scale, seed, res);
  printf("goal, run a: partial slabs under %.0f%% of full slabs over the second half: %s (max %.2f%%)\n",
         100 * FRAG_GOAL, res[0].max_ratio < FRAG_GOAL ? "met" : "NOT met", 100 * res[0].max_ratio);
  free(samples);
  return 0;
}
