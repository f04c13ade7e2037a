/* SPDX-License-Identifier: Apache-2.0 */
/* bench/dist/lists_common.h: what the linked-list exchange (the Myrmics
 * paper's Sect. 6.5, Fig. 4g-h) shares between our version (lists.c) and its
 * peers (lists_mpi.c, lists_rma.c, lists_shmem.c): the 256 B node, how a
 * node is filled, visited and checked, the schedule of pairwise stages, the
 * options and the JSON line every program appends to --out/lists.jsonl.
 *
 * The experiment: each of P processes builds a list of L nodes; then in
 * all-to-all stages (a round-robin tournament: P-1 stages for even P, P with
 * one idle process each for odd P) the two processes of each pair walk each
 * other's list and modify every node (list_visit), by whatever means the
 * implementation has: moving the list and moving it back, or reaching each
 * node remotely. At the end every process checks every node of its own list
 * (list_check): owner, index, how many visits, a stamp that hashes the
 * visitors in stage order, and all payload bytes. A repetition times the
 * build and the exchange, each the slowest process's; a run reports their
 * medians over the repetitions after --warmup untimed ones (1 by default).
 * The checks, every repetition's, are not timed. */
#ifndef MMD_BENCH_LISTS_COMMON_H
#define MMD_BENCH_LISTS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>

#include "out.h"
#include "timing.h"

#define LIST_NODE_SIZE 256
#define LIST_PAYLOAD (LIST_NODE_SIZE - 32)

/* A node. `link` is a pointer where the list is built of pointers (ours,
 * malloc'ed nodes, the symmetric heap) and a byte offset into the owner's
 * block or window where it is not (bulk, MPI RMA). */
typedef struct list_node {
  union {
    struct list_node *next;
    uint64_t off;            /* LIST_END: none */
  } link;
  uint32_t owner, index;
  uint32_t visits, spare;
  uint64_t stamp;
  unsigned char payload[LIST_PAYLOAD];
} list_node_t;
_Static_assert(sizeof(list_node_t) == LIST_NODE_SIZE, "a node is 256 bytes");

#define LIST_END UINT64_MAX

static inline uint64_t list_mix(uint64_t x) {   /* splitmix64's finalizer */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static inline uint64_t list_seed(uint32_t owner, uint32_t index) {
  return list_mix(((uint64_t)owner << 32) | index);
}

static inline unsigned char list_byte(uint32_t owner, uint32_t index, int k) {
  return (unsigned char)(owner * 37u + index * 11u + (unsigned)k);
}

/* A new node's contents, the link aside. */
static inline void list_fill(list_node_t *n, uint32_t owner, uint32_t index) {
  n->owner = owner;
  n->index = index;
  n->visits = 0;
  n->spare = 0;
  n->stamp = list_seed(owner, index);
  for (int k = 0; k < LIST_PAYLOAD; k++) n->payload[k] = list_byte(owner, index, k);
}

/* The visitor's modification, after checking that this is node `index` of
 * `owner`'s list: 0, or 1 when it is not. */
static inline int list_visit(list_node_t *n, uint32_t visitor, uint32_t owner, uint32_t index) {
  int bad = n->owner != owner || n->index != index;
  n->visits++;
  n->stamp = list_mix(n->stamp ^ (visitor + 1u));
  return bad;
}

/* ---------------------------------------------------------------------------
 * The schedule
 * ------------------------------------------------------------------------- */

/* Stages of a round-robin tournament among p processes. */
static inline int list_stages(int p) { return p % 2 ? p : p - 1; }

/* me's partner in stage s (0 <= s < list_stages(p)), or -1 when me sits it
 * out (odd p). The circle method over n = p rounded up to even players:
 * player n-1 stays, the others turn; s and n-1 meet, and i meets 2s - i. */
static inline int list_partner(int me, int p, int s) {
  int n = p + p % 2, m = n - 1, q;
  if (me == m) q = s;
  else if (me == s) q = m;
  else q = ((2 * s - me) % m + m) % m;
  return q < p ? q : -1;
}

/* Checks node `index` of `owner`'s list after every stage: its identity,
 * the visits and stamp that its partners' visits in stage order give, every
 * payload byte. The number of faults found (0 or 1). */
static inline int list_check(const list_node_t *n, int owner, int p, uint32_t index) {
  uint64_t stamp = list_seed((uint32_t)owner, index);
  uint32_t visits = 0;
  for (int s = 0; s < list_stages(p); s++) {
    int q = list_partner(owner, p, s);
    if (q < 0) continue;
    stamp = list_mix(stamp ^ (uint32_t)(q + 1));
    visits++;
  }
  if (n->owner != (uint32_t)owner || n->index != index || n->visits != visits || n->stamp != stamp) return 1;
  for (int k = 0; k < LIST_PAYLOAD; k++)
    if (n->payload[k] != list_byte((uint32_t)owner, index, k)) return 1;
  return 0;
}

/* ---------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------- */

typedef struct list_opts {
  const char *out;     /* where lists.jsonl goes */
  long len;            /* nodes per list */
  int reps;            /* timed repetitions */
  int warmup;          /* untimed ones before them */
  const char *variant; /* the program's variant, NULL: its default */
} list_opts_t;

static inline void list_usage(const char *prog, const char *variants) {
  fprintf(stderr, "usage: %s [--out DIR (.)] [--len L (1000)] [--reps N (5)] [--warmup N (1)]%s%s%s\n", prog,
          variants ? " [--variant " : "", variants ? variants : "", variants ? "]" : "");
  exit(2);
}

static inline list_opts_t list_parse(int argc, char **argv, const char *prog, const char *variants) {
  list_opts_t o = {".", 1000, 5, 1, NULL};
  if (argc % 2 == 0) list_usage(prog, variants);
  for (int i = 1; i < argc; i += 2) {
    char *end;
    if (strcmp(argv[i], "--out") == 0) o.out = argv[i + 1];
    else if (strcmp(argv[i], "--variant") == 0 && variants) o.variant = argv[i + 1];
    else if (strcmp(argv[i], "--len") == 0 || strcmp(argv[i], "--reps") == 0 || strcmp(argv[i], "--warmup") == 0) {
      long v = strtol(argv[i + 1], &end, 10);
      int warmup = argv[i][2] == 'w';
      if (end == argv[i + 1] || *end != '\0' || v < !warmup || v > (1l << 30)) list_usage(prog, variants);
      if (argv[i][2] == 'l') o.len = v;
      else if (warmup) o.warmup = (int)v;
      else o.reps = (int)v;
    } else list_usage(prog, variants);
  }
  if (o.variant) {   /* exactly one of the '|'-separated names in variants */
    size_t n = strlen(o.variant);
    const char *v = variants;
    while (v && !(n && strncmp(v, o.variant, n) == 0 && (v[n] == '|' || v[n] == '\0'))) {
      v = strchr(v, '|');
      if (v) v++;
    }
    if (v == NULL) list_usage(prog, variants);
  }
  return o;
}

/* ---------------------------------------------------------------------------
 * Transport
 * ------------------------------------------------------------------------- */

/* What backs the memory at base, from /proc/self/maps: the file of the
 * mapping that holds it (an MPI window: "osc_sm..." where Open MPI's osc/sm
 * mapped it into every process of the host, and every get or put is a
 * memcpy; the symmetric heap: its sshmem segment), "anonymous" for private
 * memory (osc/pt2pt, osc/ucx registering it), or "unknown". Written into
 * what (at most len bytes). */
static inline void list_backing(const void *base, char *what, size_t len) {
  snprintf(what, len, "unknown");
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == NULL) return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    int at = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2) continue;
    if ((uintptr_t)base < lo || (uintptr_t)base >= hi) continue;
    char *path = line + at;
    path[strcspn(path, " \n")] = '\0';
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    snprintf(what, len, "%s", *name ? name : "anonymous");
    for (char *c = what; *c; c++)
      if (*c == '"' || *c == '\\' || (unsigned char)*c < 32) *c = '?';
    break;
  }
  fclose(f);
}

/* ---------------------------------------------------------------------------
 * Timing and output
 * ------------------------------------------------------------------------- */

/* One repetition as one process saw it, in ns. */
typedef struct list_times {
  double build, exchange;
} list_times_t;

/* A run's result, on process 0. */
typedef struct list_result {
  double build_s, exchange_s, total_s;       /* medians over repetitions */
  double *build, *exchange, *total;          /* each repetition's, s (slowest process) */
  long faults;                               /* nodes that failed a check, all processes */
} list_result_t;

/* The slowest process's build and exchange of each timed repetition (t[0..reps)),
 * and the faults of every process, on rank 0 of comm. */
static inline list_result_t list_reduce(MPI_Comm comm, const list_times_t *t, int reps, long faults) {
  list_result_t r = {0};
  double *mine = malloc(2 * (size_t)reps * sizeof *mine), *slow = malloc(2 * (size_t)reps * sizeof *slow);
  if (!mine || !slow) {
    fprintf(stderr, "lists: out of memory\n");
    MPI_Abort(comm, 1);
    exit(1);
  }
  for (int k = 0; k < reps; k++) mine[k] = t[k].build, mine[reps + k] = t[k].exchange;
  MPI_Reduce(mine, slow, 2 * reps, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&faults, &r.faults, 1, MPI_LONG, MPI_SUM, 0, comm);
  r.build = malloc((size_t)reps * sizeof(double));
  r.exchange = malloc((size_t)reps * sizeof(double));
  r.total = malloc((size_t)reps * sizeof(double));
  double b[reps], e[reps], s[reps];
  for (int k = 0; k < reps; k++) {
    b[k] = r.build[k] = slow[k] / 1e9;
    e[k] = r.exchange[k] = slow[reps + k] / 1e9;
    s[k] = r.total[k] = b[k] + e[k];
  }
  r.build_s = bench_median(b, (size_t)reps);
  r.exchange_s = bench_median(e, (size_t)reps);
  r.total_s = bench_median(s, (size_t)reps);
  free(mine), free(slow);
  return r;
}

static inline void list_json_array(FILE *f, const char *key, const double *v, int n) {
  fprintf(f, ", \"%s\": [", key);
  for (int i = 0; i < n; i++) fprintf(f, "%s%.6f", i ? ", " : "", v[i]);
  fprintf(f, "]");
}

/* Appends the run's line to out/lists.jsonl and prints a line. `extra`, if
 * not NULL, is more JSON members (", \"key\": value ...") from the program. */
static inline int list_report(const char *prog, const list_opts_t *o, const char *impl, int procs, int ranks,
                              const list_result_t *r, const char *extra) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  printf("%s: %s, %d processes, L=%ld: build %.4f s, exchange %.4f s, total %.4f s (medians of %d)%s\n",
         prog, impl, procs, o->len, r->build_s, r->exchange_s, r->total_s, o->reps,
         r->faults ? ", NODES FAILED THEIR CHECKS" : "");
  bench_out_dir(prog, o->out);
  char path[4096];
  snprintf(path, sizeof path, "%s/lists.jsonl", o->out);
  FILE *f = fopen(path, "a");
  if (f == NULL) {
    fprintf(stderr, "%s: cannot append to %s\n", prog, path);
    return 1;
  }
  fprintf(f, "{\"impl\": \"%s\", \"workers\": %d, \"ranks\": %d, \"len\": %ld, \"node_bytes\": %d, "
             "\"stages\": %d, \"reps\": %d, \"warmup\": %d, \"host\": \"%s\", \"build_s\": %.6f, \"exchange_s\": %.6f, "
             "\"total_s\": %.6f, \"faults\": %ld, \"nodes_checked\": %ld",
          impl, procs, ranks, o->len, LIST_NODE_SIZE, list_stages(procs), o->reps, o->warmup, host, r->build_s,
          r->exchange_s, r->total_s, r->faults, (long)procs * o->len * (o->reps + o->warmup));
  list_json_array(f, "build_s_reps", r->build, o->reps);
  list_json_array(f, "exchange_s_reps", r->exchange, o->reps);
  list_json_array(f, "total_s_reps", r->total, o->reps);
  fprintf(f, "%s}\n", extra ? extra : "");
  bench_out_close(prog, f, "lists.jsonl");
  return r->faults != 0;
}

#endif
