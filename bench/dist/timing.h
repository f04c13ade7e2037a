/* SPDX-License-Identifier: Apache-2.0 */
/* bench/dist/timing.h: the dist benchmarks' clock and medians. */
#ifndef MMD_BENCH_TIMING_H
#define MMD_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v and returns its median. */
static inline double bench_median(double *v, size_t n) {
  qsort(v, n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
