/* SPDX-License-Identifier: Apache-2.0 */
/* bench.h: what every CPU benchmark program shares.
 *
 * Options (`--name value`, all integers, plus -v and --help), a monotonic
 * clock, a per-thread random generator, block tagging that lets a run detect
 * an allocator handing out overlapping or corrupted memory, a start barrier
 * for worker threads, and the one result line the harness (bench/run.py)
 * parses:
 *
 *   bench=NAME threads=N ops=OPS seconds=S peak_rss_kib=K [allocator=PATH] errors=E
 *
 * `allocator=` (printed with -v) is the file that defines the `malloc` this
 * process calls, so the harness can reject a mislabelled run. */
#ifndef BENCH_H
#define BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- options ---- */

typedef struct bench_opt_s {
  const char *name;   /* spelled `--name` on the command line */
  long       *value;  /* holds the default on entry */
  const char *help;
} bench_opt_t;

/* Parses argv into `opts`, the program's own table (--threads among them),
 * plus -v; prints usage and exits on --help or an unknown or invalid option. */
void bench_parse(int argc, char **argv, const char *about, bench_opt_t *opts, size_t nopts);
extern bool bench_verbose;

/* ---- random numbers ---- */

static inline uint64_t bench_rand(uint64_t *state) {
  /* xorshift64*: cheap enough not to show up next to a malloc call. */
  uint64_t x = *state;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t bench_seed(long seed, long thread) {
  return ((uint64_t)seed * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)(thread + 1) << 32) ^ 0x5DEECE66DULL;
}

/* Uniform in [lo, hi]. */
static inline size_t bench_rand_range(uint64_t *state, size_t lo, size_t hi) {
  return lo + (size_t)(bench_rand(state) % (hi - lo + 1));
}

/* ---- block tagging ---- */

/* Writes `tag` into the first and last byte of a block, so the memory is
 * really touched and a later bench_check catches a block that another live
 * block overlapped. */
static inline void bench_touch(void *p, size_t size, unsigned char tag) {
  unsigned char *b = (unsigned char *)p;
  b[0] = tag;
  b[size - 1] = tag;
}

static inline bool bench_check(const void *p, size_t size, unsigned char tag) {
  const unsigned char *b = (const unsigned char *)p;
  return b[0] == tag && b[size - 1] == tag;
}

/* ---- threads and their clock ---- */

uint64_t bench_now_ns(void);  /* CLOCK_MONOTONIC */

/* Runs fn(arg_i) on `n` threads, arg_i = args + i * arg_size, and returns the
 * seconds from the first thread passing bench_start_wait() (which every fn
 * calls before its timed work) to the last fn returning.  bench_report then
 * also prints the least and the most CPU time one of them took over that
 * span (thread_cpu_min=, thread_cpu_max=). */
double bench_run_threads(long n, void *(*fn)(void *), void *args, size_t arg_size);
void bench_start_wait(void);

/* ---- result ---- */

/* Prints the result line; returns the process exit status (1 if errors). */
int bench_report(const char *name, long threads, long ops, double seconds, long errors);

#endif
