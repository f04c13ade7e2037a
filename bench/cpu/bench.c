/* SPDX-License-Identifier: Apache-2.0 */
/* bench.c: option parsing, clock, thread start barrier and the result line
 * shared by the CPU benchmark programs (see bench.h). */
#include "bench.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool bench_verbose = false;

/* ---------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------- */

static void bench_usage(const char *prog, const char *about, const bench_opt_t *opts, size_t n) {
  fprintf(stderr, "usage: %s [-v] [--name value]...\n%s\n\noptions (default in brackets):\n", prog, about);
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, "  --%-10s %s [%ld]\n", opts[i].name, opts[i].help, *opts[i].value);
  fprintf(stderr, "  -v           also print allocator=PATH, the file that defines malloc\n");
}

static bench_opt_t *bench_find_opt(const char *arg, bench_opt_t *opts, size_t n) {
  if (strncmp(arg, "--", 2) != 0) return NULL;
  for (size_t i = 0; i < n; i++)
    if (strcmp(arg + 2, opts[i].name) == 0) return &opts[i];
  return NULL;
}

void bench_parse(int argc, char **argv, const char *about, bench_opt_t *opts, size_t nopts) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0) { bench_verbose = true; continue; }
    bench_opt_t *opt = bench_find_opt(argv[i], opts, nopts);
    if (opt == NULL || i + 1 >= argc) {
      bench_usage(argv[0], about, opts, nopts);
      exit(strcmp(argv[i], "--help") == 0 ? 0 : 2);
    }
    char *end;
    errno = 0;
    long v = strtol(argv[++i], &end, 0);
    if (errno != 0 || *end != '\0' || v < 0) {
      fprintf(stderr, "%s: --%s wants a non-negative integer, got '%s'\n", argv[0], opt->name, argv[i]);
      exit(2);
    }
    *opt->value = v;
  }
}

/* ---------------------------------------------------------------------------
 * Threads and their clock
 * ------------------------------------------------------------------------- */

/* The clock runs from the first worker leaving the start barrier to the last
 * worker returning, both read by the workers themselves: thread creation is
 * not measured, and neither is the main thread's wake-up after the barrier,
 * which on a loaded machine can come after the work is done.
 * Each worker also reads its own CPU time over the same span; the fastest
 * and the slowest are reported, so that a run whose threads did the same
 * work at different speeds (a core shared with other work) shows as such. */
static pthread_barrier_t bench_start;
static _Atomic uint64_t bench_first_start, bench_last_end;
static _Atomic uint64_t bench_cpu_min, bench_cpu_max;
static __thread uint64_t bench_cpu_at_start;

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void bench_lower_to(_Atomic uint64_t *v, uint64_t x) {
  uint64_t seen = atomic_load(v);
  while (x < seen && !atomic_compare_exchange_weak(v, &seen, x)) {}
}

static void bench_raise_to(_Atomic uint64_t *v, uint64_t x) {
  uint64_t seen = atomic_load(v);
  while (x > seen && !atomic_compare_exchange_weak(v, &seen, x)) {}
}

static uint64_t bench_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_start_wait(void) {
  pthread_barrier_wait(&bench_start);
  bench_cpu_at_start = bench_thread_cpu_ns();
  bench_lower_to(&bench_first_start, bench_now_ns());
}

typedef struct bench_worker_s {
  void *(*fn)(void *);
  void *arg;
} bench_worker_t;

static void *bench_worker(void *arg) {
  bench_worker_t *w = arg;
  w->fn(w->arg);
  bench_raise_to(&bench_last_end, bench_now_ns());
  if (bench_cpu_at_start != 0) {
    uint64_t cpu = bench_thread_cpu_ns() - bench_cpu_at_start;
    bench_lower_to(&bench_cpu_min, cpu);
    bench_raise_to(&bench_cpu_max, cpu);
  }
  return NULL;
}

double bench_run_threads(long n, void *(*fn)(void *), void *args, size_t arg_size) {
  pthread_t *tids = malloc((size_t)n * sizeof *tids);
  bench_worker_t *workers = malloc((size_t)n * sizeof *workers);
  if (tids == NULL || workers == NULL) { perror("malloc"); exit(1); }
  atomic_store(&bench_first_start, UINT64_MAX);
  atomic_store(&bench_last_end, 0);
  atomic_store(&bench_cpu_min, UINT64_MAX);
  atomic_store(&bench_cpu_max, 0);
  pthread_barrier_init(&bench_start, NULL, (unsigned)n);
  for (long i = 0; i < n; i++) {
    workers[i] = (bench_worker_t){ fn, (char *)args + (size_t)i * arg_size };
    int rc = pthread_create(&tids[i], NULL, bench_worker, &workers[i]);
    if (rc != 0) { fprintf(stderr, "pthread_create: %s\n", strerror(rc)); exit(1); }
  }
  for (long i = 0; i < n; i++) pthread_join(tids[i], NULL);
  pthread_barrier_destroy(&bench_start);
  free(workers);
  free(tids);
  return (double)(atomic_load(&bench_last_end) - atomic_load(&bench_first_start)) * 1e-9;
}

/* ---------------------------------------------------------------------------
 * Result line
 * ------------------------------------------------------------------------- */

/* The symbol lookup the dynamic linker does for this program's own calls:
 * with LD_PRELOAD it finds the preloaded library first, without it the
 * library this program was linked against. */
static const char *bench_allocator_path(void) {
  Dl_info info;
  void *sym = dlsym(RTLD_DEFAULT, "malloc");
  if (sym == NULL || dladdr(sym, &info) == 0 || info.dli_fname == NULL) return "unknown";
  return info.dli_fname;
}

/* VmHWM, the high-water mark of this program's resident set. The harness's
 * ru_maxrss from wait4 would also count the harness's own pages, which the
 * child carries from fork until exec. Read with plain read(2), so that the
 * measurement does not allocate through the allocator being measured. */
static long bench_peak_rss_kib(void) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char *hwm = strstr(buf, "VmHWM:");
  return hwm ? strtol(hwm + 6, NULL, 10) : -1;
}

int bench_report(const char *name, long threads, long ops, double seconds, long errors) {
  printf("bench=%s threads=%ld ops=%ld seconds=%.6f peak_rss_kib=%ld", name, threads, ops, seconds,
         bench_peak_rss_kib());
  if (atomic_load(&bench_cpu_max) > 0)
    printf(" thread_cpu_min=%.6f thread_cpu_max=%.6f", atomic_load(&bench_cpu_min) * 1e-9, atomic_load(&bench_cpu_max) * 1e-9);
  if (bench_verbose) printf(" allocator=%s", bench_allocator_path());
  printf(" errors=%ld\n", errors);
  if (errors > 0) fprintf(stderr, "%s: %ld corrupted blocks\n", name, errors);
  return errors > 0 ? 1 : 0;
}
