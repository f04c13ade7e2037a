/* SPDX-License-Identifier: Apache-2.0 */
/* dist-tree: one scheduler against a tree of schedulers, in the shape of the
 * Myrmics paper's Fig. 4h. Run it under mpirun with MANYMALLOC_SCHEDULERS
 * unset or 1 (one scheduler), 1,4 or 1,4,16; the other ranks are workers.
 *
 * Each repetition, every worker at once, phases separated by sys_barrier:
 *   alloc     a region of its own (sys_ralloc(0, 0): on its leaf scheduler)
 *             and a linked list of --nodes objects of --node-size bytes in
 *             it, one sys_alloc a node;
 *   exchange  --stages rounds of a ring: each worker sends the list it holds
 *             (its region and the head object) to the next worker with
 *             sys_send and receives the previous one's with sys_recv, then
 *             walks what it received and checks its count and checksum;
 *   free      sys_rfree of its own region.
 * Worker 0 times the phases between barriers; the result is each figure's
 * median over the repetitions. From sys_sched_stats: each worker's wait for
 * scheduler replies during its alloc phase (worker_wait_ns; the mean and the
 * slowest worker, reduced over sys_worker_comm()), and the tree's counters
 * across the alloc phase per 1000 sys_alloc calls. The stats queries and
 * barriers framing the alloc phase cost time, waits and messages of their
 * own: an empty phase of the same shape, run just before, measures them,
 * and the alloc phase's figures are net of it (frame_ms says how much).
 *
 * With MANYMALLOC_DIST_LEASE=0 every sys_alloc is a round trip to the leaf
 * scheduler ("remote"); by default nodes come from leased slabs ("local").
 * Appends one JSON line to --out/tree.jsonl and prints one line.
 *
 *   mpirun -np S+W ./dist-tree [--out DIR] [--reps N] [--nodes L]
 *                              [--node-size B] [--stages K]
 *   (--stages 0, the default: W-1, the full ring)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manymalloc/myrmics.h"
#include "out.h"
#include "timing.h"

typedef struct tree_node {
  struct tree_node *next;
  uint64_t value;
} tree_node_t;

typedef struct tree_opts {
  const char *out;
  int reps, stages;
  long nodes;
  size_t node_size;
} tree_opts_t;

/* One repetition as worker 0 sees it: ns, and the tree's counters. The
 * alloc phase's figures are net of its frame (the barriers and stats
 * queries around it), which an empty phase of the same shape measures. */
typedef struct tree_rep {
  double alloc_ns, exchange_ns, free_ns, total_ns;
  double frame_ns;                      /* the empty phase */
  double wait_mean_ns, wait_max_ns;     /* over the workers, alloc phase */
  double wait_frame_ns;                 /* the mean worker's in the empty phase */
  double sched_messages, requests, forwarded, grants, returns;
} tree_rep_t;

static int tree_me;

static void tree_fail(const char *call) {
  fprintf(stderr, "dist-tree: worker %d: %s failed: %s\n", tree_me, call, sys_strerror(sys_last_error()));
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

/* A node's value: a mix of its list's owner and its position, so that a
 * list delivered whole but from the wrong worker fails the check. */
static uint64_t tree_value(int owner, long i) {
  uint64_t z = ((uint64_t)(unsigned)owner << 40) + (uint64_t)i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t tree_checksum(int owner, long nodes) {
  uint64_t sum = 0;
  for (long i = 0; i < nodes; i++) sum += tree_value(owner, i) * (uint64_t)(i + 1);
  return sum;
}

/* ---------------------------------------------------------------------------
 * The phases
 * ------------------------------------------------------------------------- */

static tree_node_t *tree_build(rid_t r, const tree_opts_t *o) {
  tree_node_t *head = NULL, *tail = NULL;
  for (long i = 0; i < o->nodes; i++) {
    tree_node_t *n = sys_alloc(o->node_size, r);
    if (n == NULL) tree_fail("sys_alloc");
    n->next = NULL;
    n->value = tree_value(tree_me, i);
    if (tail) tail->next = n;
    else head = n;
    tail = n;
  }
  return head;
}

static void tree_check(const tree_node_t *head, int owner, long nodes, uint64_t want, int stage) {
  uint64_t sum = 0;
  long count = 0;
  for (const tree_node_t *n = head; n != NULL && count <= nodes; n = n->next)
    sum += n->value * (uint64_t)++count;
  if (count != nodes || sum != want) {
    fprintf(stderr, "dist-tree: worker %d, stage %d: worker %d's list has %ld nodes, checksum %s\n",
            tree_me, stage, owner, count, sum == want ? "right" : "WRONG");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* The ring's stages: in stage s this worker holds worker (me - s + 1)'s list
 * and passes it on. Even workers send first and odd ones receive first, so
 * that a blocking send never waits on a peer that is itself sending. */
static void tree_exchange(rid_t mine, tree_node_t *head, int workers, const tree_opts_t *o,
                          const uint64_t *sums) {
  rid_t held = mine;
  void *held_head = head;
  int next = (tree_me + 1) % workers, prev = (tree_me + workers - 1) % workers;
  for (int s = 1; s <= o->stages; s++) {
    rid_t got = SYS_NO_REGION;
    void *got_head = NULL;
    for (int turn = 0; turn < 2; turn++) {
      if ((turn == 0) == (tree_me % 2 == 0)) {
        if (sys_send(next, &held, 1, &held_head, 1) != 0) tree_fail("sys_send");
      } else if (sys_recv(prev, &got, 1, &got_head, 1) != 0) {
        tree_fail("sys_recv");
      }
    }
    int owner = ((tree_me - s) % workers + workers) % workers;
    tree_check(got_head, owner, o->nodes, sums[owner], s);
    held = got, held_head = got_head;
  }
}

static void tree_stats(sys_sched_stats_t *s) {
  if (sys_sched_stats(s) != 0) tree_fail("sys_sched_stats");
}

static void tree_barrier(void) {
  if (sys_barrier() != 0) tree_fail("sys_barrier");
}

/* The alloc phase's frame, with or without its allocations: tree counters
 * read by worker 0 after a barrier before it and after the barrier that
 * ends it; each worker's own counters read at its start and end. Returns
 * the phase's ns on worker 0, fills the tree's and this worker's deltas. */
static double tree_alloc_phase(const tree_opts_t *o, int with_allocs, rid_t *r, tree_node_t **head,
                               sys_sched_stats_t *tree_delta, double *wait_ns) {
  sys_sched_stats_t t0 = {0}, t1 = {0}, w0, w1;
  tree_barrier();
  if (tree_me == 0) tree_stats(&t0);
  tree_barrier();
  double start = bench_now_ns();
  tree_stats(&w0);
  if (with_allocs) {
    if ((*r = sys_ralloc(0, 0)) < 0) tree_fail("sys_ralloc");
    *head = tree_build(*r, o);
  }
  tree_stats(&w1);
  tree_barrier();
  double ns = bench_now_ns() - start;
  if (tree_me == 0) tree_stats(&t1);
  *wait_ns = (double)(w1.worker_wait_ns - w0.worker_wait_ns);
  *tree_delta = (sys_sched_stats_t){
    .sched_messages = t1.sched_messages - t0.sched_messages,
    .requests = t1.requests - t0.requests,
    .forwarded = t1.forwarded - t0.forwarded,
    .grants = t1.grants - t0.grants,
    .returns = t1.returns - t0.returns,
    .schedulers = t1.schedulers, .levels = t1.levels};
  return ns;
}

static tree_rep_t tree_once(const tree_opts_t *o, int workers, const uint64_t *sums,
                            sys_sched_stats_t *shape) {
  tree_rep_t rep = {0};
  sys_sched_stats_t empty, full;
  double wait_empty, wait;
  rid_t r = -1;
  tree_node_t *head = NULL;
  rep.frame_ns = tree_alloc_phase(o, 0, NULL, NULL, &empty, &wait_empty);
  rep.alloc_ns = tree_alloc_phase(o, 1, &r, &head, &full, &wait) - rep.frame_ns;
  *shape = full;

  tree_barrier();
  double t0 = bench_now_ns();
  tree_exchange(r, head, workers, o, sums);
  tree_barrier();
  double t1 = bench_now_ns();
  if (sys_rfree(r) != 0) tree_fail("sys_rfree");
  tree_barrier();
  rep.exchange_ns = t1 - t0;
  rep.free_ns = bench_now_ns() - t1;
  rep.total_ns = rep.alloc_ns + rep.exchange_ns + rep.free_ns;

  double net = wait - wait_empty, in[2] = {net, wait_empty}, sum[2] = {0, 0}, max = 0;
  MPI_Comm comm = sys_worker_comm();
  MPI_Reduce(in, sum, 2, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Reduce(&net, &max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  rep.wait_mean_ns = sum[0] / workers;
  rep.wait_frame_ns = sum[1] / workers;
  rep.wait_max_ns = max;
  rep.sched_messages = (double)(full.sched_messages - empty.sched_messages);
  rep.requests = (double)(full.requests - empty.requests);
  rep.forwarded = (double)(full.forwarded - empty.forwarded);
  rep.grants = (double)(full.grants - empty.grants);
  rep.returns = (double)(full.returns - empty.returns);
  return rep;
}

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

/* Each field's median over the repetitions, in place of rep[0]. */
static tree_rep_t tree_medians(tree_rep_t *rep, int reps) {
  enum { N = sizeof(tree_rep_t) / sizeof(double) };
  tree_rep_t m;
  double col[reps];
  for (int j = 0; j < N; j++) {
    for (int k = 0; k < reps; k++) col[k] = ((double *)&rep[k])[j];
    ((double *)&m)[j] = bench_median(col, (size_t)reps);
  }
  return m;
}

static void tree_report(const tree_opts_t *o, int workers, const sys_sched_stats_t *shape, tree_rep_t m) {
  const char *lease = getenv("MANYMALLOC_DIST_LEASE");
  const char *mode = lease != NULL && strcmp(lease, "0") == 0 ? "remote" : "local";
  const char *layout = getenv("MANYMALLOC_SCHEDULERS");
  if (layout == NULL || *layout == '\0') layout = "1";
  double allocs = (double)workers * (double)o->nodes, per_k = 1000.0 / allocs;
  printf("dist-tree, %s, schedulers %s (%lld in %lld levels), %d workers x %ld nodes of %zu B, %d stages: "
         "%.1f ms in all (alloc %.1f, exchange %.1f, free %.1f), alloc-phase wait %.1f ms per worker "
         "(slowest %.1f), %.2f sched messages per 1000 sys_alloc\n",
         mode, layout, (long long)shape->schedulers, (long long)shape->levels, workers, o->nodes,
         o->node_size, o->stages, m.total_ns / 1e6, m.alloc_ns / 1e6, m.exchange_ns / 1e6, m.free_ns / 1e6,
         m.wait_mean_ns / 1e6, m.wait_max_ns / 1e6, m.sched_messages * per_k);
  bench_out_dir("dist-tree", o->out);
  char path[4096];
  snprintf(path, sizeof path, "%s/tree.jsonl", o->out);
  FILE *f = fopen(path, "a");
  if (f == NULL) tree_fail("fopen of tree.jsonl");
  fprintf(f, "{\"mode\": \"%s\", \"layout\": \"%s\", \"schedulers\": %lld, \"levels\": %lld, "
             "\"workers\": %d, \"nodes\": %ld, \"node_size\": %zu, \"stages\": %d, \"reps\": %d, ",
          mode, layout, (long long)shape->schedulers, (long long)shape->levels, workers, o->nodes,
          o->node_size, o->stages, o->reps);
  fprintf(f, "\"total_ms\": %.3f, \"alloc_ms\": %.3f, \"exchange_ms\": %.3f, \"free_ms\": %.3f, "
             "\"frame_ms\": %.3f, ",
          m.total_ns / 1e6, m.alloc_ns / 1e6, m.exchange_ns / 1e6, m.free_ns / 1e6, m.frame_ns / 1e6);
  /* A phase too short to tell from its frame has no rate. */
  if (m.alloc_ns > 0) fprintf(f, "\"allocs_per_s\": %.1f, ", allocs / (m.alloc_ns / 1e9));
  else fprintf(f, "\"allocs_per_s\": null, ");
  fprintf(f, "\"wait_mean_ms\": %.3f, \"wait_max_ms\": %.3f, \"wait_frame_ms\": %.3f, "
             "\"sched_messages_per_1000_allocs\": %.3f, \"requests_per_1000_allocs\": %.3f, "
             "\"forwarded_per_1000_allocs\": %.3f, \"grants\": %.0f, \"returns\": %.0f}\n",
          m.wait_mean_ns / 1e6, m.wait_max_ns / 1e6, m.wait_frame_ns / 1e6, m.sched_messages * per_k,
          m.requests * per_k, m.forwarded * per_k, m.grants, m.returns);
  bench_out_close("dist-tree", f, "tree.jsonl");
}

/* ---------------------------------------------------------------------------
 * Options and main
 * ------------------------------------------------------------------------- */

static void tree_usage(const char *prog) {
  if (tree_me == 0)
    fprintf(stderr, "usage: %s [--out DIR (.)] [--reps N (5)] [--nodes L (30000)] "
                    "[--node-size B (64, >= %zu)] [--stages K (0: workers - 1)]\n", prog, sizeof(tree_node_t));
  exit(2);
}

static long tree_count(const char *prog, const char *s, long min) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < min) tree_usage(prog);
  return v;
}

static void tree_parse(int argc, char **argv, tree_opts_t *o) {
  if (argc % 2 == 0) tree_usage(argv[0]);   /* every option takes a value */
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--out") == 0) o->out = argv[i + 1];
    else if (strcmp(argv[i], "--reps") == 0) o->reps = (int)tree_count(argv[0], argv[i + 1], 1);
    else if (strcmp(argv[i], "--nodes") == 0) o->nodes = tree_count(argv[0], argv[i + 1], 1);
    else if (strcmp(argv[i], "--node-size") == 0)
      o->node_size = (size_t)tree_count(argv[0], argv[i + 1], (long)sizeof(tree_node_t));
    else if (strcmp(argv[i], "--stages") == 0) o->stages = (int)tree_count(argv[0], argv[i + 1], 0);
    else tree_usage(argv[0]);
  }
}

int myrmics_main(int argc, char **argv) {
  tree_opts_t o = {.out = ".", .reps = 5, .stages = 0, .nodes = 30000, .node_size = 64};
  tree_me = sys_worker_id();
  tree_parse(argc, argv, &o);
  int workers = sys_num_workers();
  if (o.stages == 0 || o.stages > workers - 1) o.stages = workers - 1;
  uint64_t *sums = malloc((size_t)workers * sizeof *sums);
  tree_rep_t *rep = malloc((size_t)o.reps * sizeof *rep);
  if (sums == NULL || rep == NULL) tree_fail("malloc");
  for (int w = 0; w < workers; w++) sums[w] = tree_checksum(w, o.nodes);
  sys_sched_stats_t shape = {0};
  for (int k = 0; k < o.reps; k++) rep[k] = tree_once(&o, workers, sums, &shape);
  if (tree_me == 0) tree_report(&o, workers, &shape, tree_medians(rep, o.reps));
  free(sums), free(rep);
  return 0;
}
