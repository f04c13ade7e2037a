/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: replays malloc-lab traces against the allocator serving the
 * process, validates every request and reports utilization and throughput.
 * This file owns the command line and the report; see trace.c (parsing),
 * check.c (validation), replay.c (replays and timing), allocator.c (which
 * allocator runs and its footprint). */
#define _GNU_SOURCE
#include "allocator.h"
#include "mapping.h"
#include "replay.h"
#include "trace.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct options_s {
  unsigned threads;
  unsigned reps;
  int      verbose;
  int      csv;
  int      no_first;  /* --no-first: no first-replay measurements */
} options_t;

typedef struct result_s {
  int    valid;
  size_t ops;
  double util;   /* < 0 when not measured */
  double kops;   /* < 0 when not measured */
  double first_kops; /* the first replay on a fresh heap; < 0 when not measured */
} result_t;

#define RESULT_NONE ((result_t){.util = -1, .kops = -1, .first_kops = -1})

static const char usage[] =
    "usage: mmdriver [-t N] [-v] [-r REPS] [-f text|csv] [--rss] TRACE.rep...\n"
    "\n"
    "Replays malloc-lab traces (4 integer header lines, classically heap size,\n"
    "num_ids, num_ops, weight; then `a id size`, `r id size`, `f id` requests)\n"
    "through malloc/realloc/free of the allocator serving this process:\n"
    "libmanymalloc.so by default, any other with LD_PRELOAD.\n"
    "\n"
    "For each trace, one validated replay checks every block: non-NULL for a\n"
    "size > 0, aligned to 16 bytes (to the largest power of two <= size for\n"
    "sizes below 16), no overlap with any live block, malloc_usable_size >=\n"
    "size, and a pattern written over the block intact at free and, up to\n"
    "min(old, new) bytes, across realloc (blocks over 256 KiB: first and last\n"
    "64 bytes and one word per 4 KiB). With -t N each thread checks overlap\n"
    "among its own blocks; a block handed to two threads shows up as a\n"
    "changed pattern, the patterns being seeded per thread. Then REPS timed\n"
    "replays issue the requests without any checking; throughput is the\n"
    "median of them. First-replay throughput is the median of REPS more\n"
    "unchecked replays, each the first on a fresh heap in a child of its own:\n"
    "the cost of memory faulted in (again) that the repeated replays, on a\n"
    "heap already warm, no longer pay.\n"
    "\n"
    "  -t N      N threads replay each trace at once, each on its own ids;\n"
    "            Kops/s is then the aggregate N * ops / time (default 1)\n"
    "  -r REPS   timed replays per trace; 0 validates only (default 5)\n"
    "  -v        per-trace details on stderr\n"
    "  -f FMT    text (default) or csv\n"
    "  --no-first  no first replays (first_kops empty): what a profile of\n"
    "            the timed replays then counts is theirs alone\n"
    "  --rss     accepted for older command lines: the footprint is always\n"
    "            the resident anonymous memory\n"
    "  -h        this help\n"
    "\n"
    "util = peak live requested bytes / peak footprint charged to the trace in\n"
    "the validated replay, for every allocator alike: the growth of the\n"
    "resident anonymous memory (Anonymous in /proc/self/smaps_rollup, exact)\n"
    "over its value before the trace, read after every request during which\n"
    "the process took a page fault (the only way it grows), so the peak is\n"
    "exact at request boundaries. The baseline\n"
    "is taken after asking the allocator to return cached memory (mm_collect,\n"
    "malloc_trim, jemalloc purge, mi_collect, tcmalloc ReleaseFreeMemory). The\n"
    "driver's own tables are mapped and faulted in before the baseline. Only\n"
    "measured with -t 1.\n"
    "Each trace runs in a child process forked from the untouched driver, so\n"
    "every trace starts on a fresh heap and a crash fails only that trace.\n"
    "\n"
    "csv: stdout holds a header row `trace,ops,valid,util,kops,first_kops` and\n"
    "one row per trace: path, requests, 1/0, util as a fraction (empty when not\n"
    "measured), aggregate Kops/s and first-replay Kops/s (empty when not\n"
    "measured). The allocator line and the summary go to stderr.\n"
    "\n"
    "The last line is `N passed, M failed` over the traces; the exit status is\n"
    "non-zero when any trace failed to load or any request failed validation.\n";

static unsigned options_uint(const char *s, const char *what) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v > 1u << 16) {
    fprintf(stderr, "mmdriver: bad %s `%s`\n%s", what, s, usage);
    exit(2);
  }
  return (unsigned)v;
}

static void options_parse(options_t *o, int argc, char **argv) {
  static const struct option longs[] = {
      {"threads", required_argument, NULL, 't'}, {"reps", required_argument, NULL, 'r'},
      {"verbose", no_argument, NULL, 'v'},       {"format", required_argument, NULL, 'f'},
      {"help", no_argument, NULL, 'h'},          {"rss", no_argument, NULL, 'R'},
      {"no-first", no_argument, NULL, 'N'},      {NULL, 0, NULL, 0}};
  *o = (options_t){.threads = 1, .reps = 5};
  int c;
  while ((c = getopt_long(argc, argv, "t:r:vf:h", longs, NULL)) != -1) {
    switch (c) {
    case 't': o->threads = options_uint(optarg, "thread count"); break;
    case 'r': o->reps = options_uint(optarg, "repetition count"); break;
    case 'v': o->verbose = 1; break;
    case 'R': break; /* the only footprint measure now */
    case 'N': o->no_first = 1; break;
    case 'f':
      if (strcmp(optarg, "csv") != 0 && strcmp(optarg, "text") != 0) {
        fprintf(stderr, "mmdriver: unknown format `%s`\n%s", optarg, usage);
        exit(2);
      }
      o->csv = strcmp(optarg, "csv") == 0;
      break;
    case 'h': fputs(usage, stdout); exit(0);
    default:  fputs(usage, stderr); exit(2);
    }
  }
  if (o->threads == 0 || optind == argc) {
    fputs(usage, stderr);
    exit(2);
  }
}

/* ---------------------------------------------------------------------------
 * Measuring one trace
 * ------------------------------------------------------------------------- */

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median Kops/s over the timed replays. */
static double measure_kops(const trace_t *t, const options_t *o) {
  double *secs = mapping_alloc(o->reps * sizeof(double));
  for (unsigned i = 0; i < o->reps; i++) secs[i] = replay_timed(t, o->threads);
  qsort(secs, o->reps, sizeof(double), compare_double);
  double median = secs[o->reps / 2];
  if (o->verbose)
    fprintf(stderr, "  timed: %u replays, min %.6f s, median %.6f s, max %.6f s\n", o->reps, secs[0],
            median, secs[o->reps - 1]);
  mapping_free(secs, o->reps * sizeof(double));
  double ops = (double)t->num_ops * o->threads;
  return median > 0 ? ops / median / 1e3 : -1;
}

static result_t measure_trace(const char *path, const options_t *o) {
  result_t r = RESULT_NONE;
  trace_t t;
  if (!trace_load(&t, path)) return r;
  replay_check_t c;
  replay_validate(&t, o->threads, &c);
  r.valid = c.errors == 0;
  r.ops = t.num_ops;
  if (o->threads == 1 && c.footprint > 0) r.util = (double)c.peak_live / (double)c.footprint;
  if (o->verbose)
    fprintf(stderr, "%s: %zu ids, %zu requests, %zu failed; peak live %zu bytes, footprint %zu bytes\n",
            path, t.num_ids, t.num_ops, c.errors, c.peak_live, c.footprint);
  if (r.valid && o->reps > 0) r.kops = measure_kops(&t, o);
  trace_unload(&t);
  return r;
}

/* One unchecked replay from a fresh heap, the way a program runs once:
 * what the timed replays after it do not see (memory faulted in for the
 * first time, or again after the allocator gave it back) counts here. */
static result_t measure_first_replay(const char *path, const options_t *o) {
  result_t r = RESULT_NONE;
  trace_t t;
  if (!trace_load(&t, path)) return r;
  double secs = replay_timed(&t, o->threads);
  if (secs > 0) r.first_kops = (double)t.num_ops * o->threads / secs / 1e3;
  trace_unload(&t);
  return r;
}

/* Runs `measure` on a trace in a forked child: every trace then starts from
 * the same fresh heap, so memory an allocator retained from an earlier trace
 * neither hides footprint growth nor lowers throughput, and an allocator
 * that crashes fails that trace alone. */
static result_t measure_isolated(result_t (*measure)(const char *, const options_t *), const char *path,
                                 const options_t *o) {
  result_t r = RESULT_NONE;
  int fds[2];
  fflush(NULL);
  if (pipe(fds) != 0) return measure(path, o);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    r = measure(path, o);
    ssize_t sent = write(fds[1], &r, sizeof(r));
    fflush(NULL);
    _exit(sent == (ssize_t)sizeof(r) ? 0 : 2);
  }
  close(fds[1]);
  ssize_t got = pid > 0 ? read(fds[0], &r, sizeof(r)) : -1;
  close(fds[0]);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    fprintf(stderr, "mmdriver: %s: replay killed by signal %d (%s)\n", path, WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (got != (ssize_t)sizeof(r)) r = RESULT_NONE;
  return r;
}

/* The checked replay and the timed ones in one child; then REPS first
 * replays, each in a child of its own (their median). */
static result_t measure_trace_isolated(const char *path, const options_t *o) {
  result_t r = measure_isolated(measure_trace, path, o);
  if (!r.valid || o->reps == 0 || o->no_first) return r;
  double *kops = mapping_alloc(o->reps * sizeof(double));
  for (unsigned i = 0; i < o->reps; i++) kops[i] = measure_isolated(measure_first_replay, path, o).first_kops;
  qsort(kops, o->reps, sizeof(double), compare_double);
  r.first_kops = kops[o->reps / 2];
  mapping_free(kops, o->reps * sizeof(double));
  return r;
}

/* ---------------------------------------------------------------------------
 * Report
 * ------------------------------------------------------------------------- */

static void report_header(const options_t *o) {
  fprintf(o->csv ? stderr : stdout, "mmdriver: allocator %s, footprint by %s, %u thread%s, %u timed replays\n",
          allocator_path(), allocator_footprint_method(), o->threads, o->threads == 1 ? "" : "s", o->reps);
  if (o->csv) puts("trace,ops,valid,util,kops,first_kops");
  else printf("%-40s %5s %10s %7s %12s %12s\n", "trace", "valid", "ops", "util", "Kops/s", "first Kops/s");
}

static void report_row(const char *path, const result_t *r, const options_t *o) {
  if (o->csv) {
    printf("%s,%zu,%d,", path, r->ops, r->valid);
    if (r->util >= 0) printf("%.4f", r->util);
    putchar(',');
    if (r->kops >= 0) printf("%.1f", r->kops);
    putchar(',');
    if (r->first_kops >= 0) printf("%.1f", r->first_kops);
    putchar('\n');
  } else {
    char util[16] = "-", kops[32] = "-", first[32] = "-";
    if (r->util >= 0) snprintf(util, sizeof(util), "%.1f%%", 100 * r->util);
    if (r->kops >= 0) snprintf(kops, sizeof(kops), "%.1f", r->kops);
    if (r->first_kops >= 0) snprintf(first, sizeof(first), "%.1f", r->first_kops);
    printf("%-40s %5s %10zu %7s %12s %12s\n", path, r->valid ? "yes" : "no", r->ops, util, kops, first);
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  options_t o;
  options_parse(&o, argc, argv);
  allocator_probe();
  report_header(&o);
  int passed = 0, failed = 0;
  for (int i = optind; i < argc; i++) {
    result_t r = measure_trace_isolated(argv[i], &o);
    report_row(argv[i], &r, &o);
    r.valid ? passed++ : failed++;
  }
  fflush(stdout);
  fprintf(o.csv ? stderr : stdout, "%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
