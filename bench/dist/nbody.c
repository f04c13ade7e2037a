/* SPDX-License-Identifier: Apache-2.0 */
/* dist-nbody: the Barnes-Hut N-body simulation of the Myrmics paper's
 * Sect. 6.3 (Fig. 4e-f) on the region allocator. Run it under mpirun with
 * MANYMALLOC_SCHEDULERS unset or 1 (one scheduler), 1,2 or 1,4 (a tree);
 * the other ranks are workers, a power of two of them.
 *
 * Bodies: a Plummer sphere (N-body units, total mass 1), body i drawn from
 * its own random stream, so the initial conditions do not depend on the
 * number of workers. Worker w starts with bodies [w N / P, (w+1) N / P);
 * one recursive bisection (below) with unit costs spreads them in space
 * before the first step.
 *
 * Each step, on every worker:
 *   build     its local octree, one region per tree level: a region for the
 *             step (sys_ralloc(0, 0)) and under it one for each level; the
 *             level's cells (128 B) by one sys_balloc per level (--alloc
 *             alloc: one sys_alloc a cell), a leaf's bodies (--leaf at
 *             most; x, y, z, m) in an object of the leaf's level;
 *   exchange  the bounding boxes of all workers' bodies (MPI_Allgather),
 *             then P-1 pairwise stages (partner: me XOR k): from the
 *             partner's box the levels of my tree it can open (a cell is
 *             opened for some point of the box when its side >= theta x its
 *             distance to the box), and sys_send of those levels' regions
 *             with the root as the object; sys_recv of the partner's. The
 *             received roots are grafted: the force walk descends into them
 *             as into the local tree, pointers as they arrived, and counts
 *             as a violation every cell it must open whose children were
 *             not sent (there must be none);
 *   force     Barnes-Hut, a body against the local tree and every grafted
 *             one: a cell is taken whole when side < theta x distance,
 *             Plummer softening eps; a body's cost is its interactions
 *             (cells taken whole and bodies of opened leaves; the paper's
 *             "force calculations"), or with --cost visits those plus the
 *             cells it visited, or with --cost time the ns of its walk;
 *   move      v += a dt, x += v dt;
 *   balance   recursive bisection (orthogonal recursive bisection, ORB) over
 *             sys_worker_comm(): in groups of P, P/2, ... 2 workers, the
 *             group's longest dimension is cut where the costs of the last
 *             step split in half (two 1024-bin histograms) and each worker
 *             of the lower half trades bodies with its partner in the upper
 *             half (MPI_Sendrecv);
 *   free      sys_rfree of the step's region: every level at once. The first
 *             cut of the balance is a collective of all workers, so every
 *             worker has finished its force walk over the copies of this
 *             tree before it is freed (a copy of a freed region may be
 *             discarded by the receiver's resident check).
 *
 * Time per worker (the paper's stacked bars): scheduler communication is
 * worker_wait_ns from sys_sched_stats, read before and after the timed
 * phases that call the allocator (the queries themselves left out);
 * worker communication is the time inside sys_send, sys_recv and the MPI
 * calls less the scheduler wait inside them (sys_send asks the scheduler to
 * pack, sys_recv may run the resident check); computation is the rest.
 * --warmup steps (untimed) come first, then --steps timed ones. Also per
 * timed step: the slowest worker's time (step_ms_each) and the force
 * phase's imbalance, slowest over mean (force_imbalance_per_step).
 *
 * Checks, none of them timed:
 *   - violations: no cell a force walk opened lacked its children;
 *   - acceleration: for about --sample bodies, the first step's
 *     Barnes-Hut acceleration against the direct sum over all N bodies,
 *     relative error, mean and max (limits --acc-tol, 10x it for the max);
 *   - positions after all steps against a serial run of the same steps:
 *     --check ref: worker 0 runs them alone, in the same program (one tree
 *     of all bodies, same theta, same code); --compare FILE: against a
 *     positions file that a 1-worker run wrote with --dump FILE. The rms
 *     and max of |x - x_serial| over the bodies, relative to the rms of the
 *     serial displacement |x_serial - x_initial|, within --pos-tol (rms)
 *     and 10x it (max). With theta 0 both are direct sums and agree to
 *     rounding.
 * Appends one JSON line to --out/nbody.jsonl and prints one line; exits 1
 * when a check fails.
 *
 *   mpirun -np S+P ./dist-nbody [--out DIR] [--bodies N] [--steps K]
 *       [--warmup K] [--theta T] [--dt D] [--eps E] [--leaf B]
 *       [--alloc balloc|alloc] [--cost interactions|visits|time]
 *       [--check ref|none] [--sample S]
 *       [--dump FILE] [--compare FILE] [--seed X] [--pos-tol F] [--acc-tol F]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "manymalloc/myrmics.h"
#include "out.h"
#include "timing.h"

#define NB_MAXL 48       /* tree levels at most; a cell of the last one is a leaf whatever it holds */
#define NB_BINS 1024     /* histogram bins of a bisection's cut, per pass */
#define NB_OPEN_SLACK (1.0 - 1e-9)   /* the box test opens a hair more than the body test */

/* A cell of the octree: 128 B, two cache lines. */
typedef struct nb_cell {
  double com[3], mass;         /* centre of mass and mass of all below */
  double half;                 /* half its cube's side */
  int32_t depth;               /* its level, which is its region */
  int32_t nleaf;               /* 0: inner; else a leaf of this many bodies */
  double (*body)[4];           /* a leaf's bodies (x, y, z, m), in its level's region */
  uint64_t pad;
  struct nb_cell *child[8];    /* an inner cell's octants, NULL where empty */
} nb_cell_t;
_Static_assert(sizeof(nb_cell_t) == 128, "a cell is two cache lines");

typedef struct nb_body {
  double x[3], v[3], a[3], m;
  double cost;                 /* its last force walk's cost (--cost), what the bisection balances */
  double inter;                /* its last force walk's interactions */
  int64_t id;
} nb_body_t;

typedef struct nb_opts {
  const char *out, *dump, *compare, *check, *alloc, *cost;
  long bodies;
  int steps, warmup, leaf, sample;
  double theta, dt, eps, pos_tol, acc_tol;
  uint64_t seed;
} nb_opts_t;

/* A worker's tree of one step. */
typedef struct nb_tree {
  rid_t step, level[NB_MAXL];
  int nlevels;
  nb_cell_t *root;
  long cells, leaves;
  double bytes[NB_MAXL];       /* slot bytes of each level: what its region holds */
  double lo[3], hi[3];         /* bounding box of the bodies */
} nb_tree_t;

/* What a worker measures over the timed steps, ns unless said. */
typedef struct nb_acct {
  double build, exchange, force, move, balance, free;   /* phases, wall */
  double comm;          /* inside sys_send, sys_recv and MPI calls */
  double wait_x;        /* scheduler wait in the exchange phase (inside sys_send/sys_recv) */
  double wait;          /* scheduler wait in all phases */
  double stats;         /* the sys_sched_stats queries themselves */
  double calls;         /* requests to the scheduler, the queries left out */
  double essential;     /* computing the levels each peer needs (in exchange, computation) */
  double levels, cells, sent_levels, sent_bytes, sends, interactions, violations;
} nb_acct_t;
#define NB_ACCT_N (sizeof(nb_acct_t) / sizeof(double))

static int nb_me, nb_workers;
static MPI_Comm nb_comm;
static nb_acct_t nb_acc;                /* the running account; zeroed before the timed steps */
static double *nb_step_force;           /* each timed step's force phase, ns */
static double *nb_step_wall;            /* each timed step's phases, ns */
static int nb_step_at = -1;             /* the timed step under way; -1 in warm-up */
static int64_t nb_wait_seen, nb_calls_seen;

static void nb_fail(const char *what) {
  fprintf(stderr, "dist-nbody: worker %d: %s failed: %s\n", nb_me, what, sys_strerror(sys_last_error()));
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void *nb_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) nb_fail("malloc");
  return p;
}

/* Worker communication: the call's wall time goes to the account. */
#define NB_COMM(call)                                   \
  do {                                                  \
    double nb_t0_ = bench_now_ns();                     \
    call;                                               \
    nb_acc.comm += bench_now_ns() - nb_t0_;             \
  } while (0)

/* The scheduler wait since the last query, less this query's own (its wall
 * time, a bound on its wait), which is also left out of every phase. */
static double nb_wait_since(void) {
  sys_sched_stats_t s;
  double t0 = bench_now_ns();
  if (sys_sched_stats(&s) != 0) nb_fail("sys_sched_stats");
  double own = bench_now_ns() - t0;
  double d = (double)(s.worker_wait_ns - nb_wait_seen) - own;
  nb_acc.stats += own;
  nb_acc.calls += (double)(s.worker_calls - nb_calls_seen - 1);
  nb_wait_seen = s.worker_wait_ns;
  nb_calls_seen = s.worker_calls;
  return d > 0 ? d : 0;
}

/* ---------------------------------------------------------------------------
 * Initial conditions: a Plummer sphere, body by body
 * ------------------------------------------------------------------------- */

static uint64_t nb_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1) from the body's stream. */
static double nb_uniform(uint64_t *s) {
  *s += 0x9e3779b97f4a7c15ull;
  return (double)(nb_mix(*s) >> 11) * 0x1.0p-53;
}

static void nb_direction(uint64_t *s, double r, double out[3]) {
  double z = 2 * nb_uniform(s) - 1, phi = 2 * M_PI * nb_uniform(s), q = sqrt(1 - z * z);
  out[0] = r * q * cos(phi), out[1] = r * q * sin(phi), out[2] = r * z;
}

/* Body id of n in a Plummer model (Aarseth, Henon and Wielen 1974), radii
 * cut at 99.9% of the mass, scaled to N-body units (virial radius 1). */
static void nb_plummer(uint64_t seed, int64_t id, long n, nb_body_t *b) {
  uint64_t s = nb_mix(seed ^ nb_mix((uint64_t)id + 1));
  double scale = 3 * M_PI / 16;
  double X = 1e-10 + nb_uniform(&s) * (0.999 - 1e-10);
  double r = 1 / sqrt(pow(X, -2.0 / 3.0) - 1);
  double x, y;
  do {
    x = nb_uniform(&s), y = 0.1 * nb_uniform(&s);
  } while (y > x * x * pow(1 - x * x, 3.5));
  double v = x * sqrt(2.0) * pow(1 + r * r, -0.25);
  memset(b, 0, sizeof *b);
  nb_direction(&s, r * scale, b->x);
  nb_direction(&s, v / sqrt(scale), b->v);
  b->m = 1.0 / (double)n;
  b->cost = 1;
  b->id = id;
}

/* ---------------------------------------------------------------------------
 * The tree: built level by level, one region a level
 * ------------------------------------------------------------------------- */

typedef struct nb_spec {      /* a cell to make at the next level */
  nb_cell_t *parent;
  int oct;
  long lo, hi;                /* its bodies: idx[lo, hi) */
  double c[3];                /* its centre */
} nb_spec_t;

typedef struct nb_scratch {
  long *idx, *tmp;
  nb_spec_t *cur, *next;
  nb_cell_t **cells;          /* every cell, level by level */
  void **objs;
  nb_body_t *sorted;
  long cap, cells_cap;
} nb_scratch_t;

static void nb_scratch_fit(nb_scratch_t *s, long n) {
  if (n <= s->cap) return;
  free(s->idx), free(s->tmp), free(s->cur), free(s->next), free(s->cells), free(s->objs), free(s->sorted);
  s->cap = n + n / 4 + 64;
  size_t c = (size_t)s->cap, cells = 2 * c;   /* grown in nb_build when a level needs more */
  s->cells_cap = (long)cells;
  s->idx = nb_malloc(c * sizeof *s->idx);
  s->tmp = nb_malloc(c * sizeof *s->tmp);
  s->cur = nb_malloc(c * sizeof *s->cur);
  s->next = nb_malloc(c * sizeof *s->next);
  s->cells = nb_malloc(cells * sizeof *s->cells);
  s->objs = nb_malloc(c * sizeof *s->objs);
  s->sorted = nb_malloc(c * sizeof *s->sorted);
}

static void nb_bounds(const nb_body_t *b, long n, double lo[3], double hi[3]) {
  for (int k = 0; k < 3; k++) lo[k] = INFINITY, hi[k] = -INFINITY;
  for (long i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      if (b[i].x[k] < lo[k]) lo[k] = b[i].x[k];
      if (b[i].x[k] > hi[k]) hi[k] = b[i].x[k];
    }
}

/* count objects of size bytes in region r, into objs: one sys_balloc, or
 * one sys_alloc each. */
static void nb_objects(const nb_opts_t *o, rid_t r, size_t size, long count, void **objs) {
  if (count == 0) return;
  if (o->alloc[0] == 'b') {
    if (sys_balloc(size, r, (int)count, objs) != 0) nb_fail("sys_balloc");
    return;
  }
  for (long i = 0; i < count; i++)
    if ((objs[i] = sys_alloc(size, r)) == NULL) nb_fail("sys_alloc");
}

static int nb_octant(const double x[3], const double c[3]) {
  return (x[0] >= c[0]) | (x[1] >= c[1]) << 1 | (x[2] >= c[2]) << 2;
}

/* Partitions idx[lo, hi) by octant around c; start[0..8] the octants' ranges. */
static void nb_partition(const nb_body_t *b, nb_scratch_t *s, long lo, long hi, const double c[3],
                         long start[9]) {
  long count[8] = {0};
  for (long i = lo; i < hi; i++) count[nb_octant(b[s->idx[i]].x, c)]++;
  start[0] = lo;
  for (int k = 0; k < 8; k++) start[k + 1] = start[k] + count[k];
  long at[8];
  memcpy(at, start, sizeof at);
  for (long i = lo; i < hi; i++) s->tmp[at[nb_octant(b[s->idx[i]].x, c)]++] = s->idx[i];
  memcpy(s->idx + lo, s->tmp + lo, (size_t)(hi - lo) * sizeof *s->idx);
}

/* Builds the tree of b[0, n) in a new step region, breadth first: the cells
 * of level d are allocated together in region level[d] when level d-1 is
 * done. Then reorders b in tree order (the force walk of neighbours in
 * memory then touches the same cells) and sums the centres of mass bottom up. */
static void nb_build(const nb_opts_t *o, nb_body_t *b, long n, nb_tree_t *t, nb_scratch_t *s) {
  memset(t, 0, sizeof *t);
  if ((t->step = sys_ralloc(0, 0)) < 0) nb_fail("sys_ralloc of a step");
  nb_bounds(b, n, t->lo, t->hi);
  if (n == 0) return;
  nb_scratch_fit(s, n);
  double half = 0, c[3];
  for (int k = 0; k < 3; k++) {
    c[k] = 0.5 * (t->lo[k] + t->hi[k]);
    if (0.5 * (t->hi[k] - t->lo[k]) > half) half = 0.5 * (t->hi[k] - t->lo[k]);
  }
  half = half * (1 + 1e-12) + 1e-300;
  for (long i = 0; i < n; i++) s->idx[i] = i;
  long ncur = 1, ncells = 0;
  s->cur[0] = (nb_spec_t){.parent = NULL, .lo = 0, .hi = n, .c = {c[0], c[1], c[2]}};
  size_t block = (size_t)o->leaf * sizeof(double[4]);
  for (int d = 0; ncur > 0; d++, half *= 0.5) {
    rid_t r = sys_ralloc(t->step, 0);
    if (r < 0) nb_fail("sys_ralloc of a level");
    t->level[d] = r;
    t->nlevels = d + 1;
    nb_objects(o, r, sizeof(nb_cell_t), ncur, s->objs);
    if (ncells + ncur > s->cells_cap) {   /* long chains of one-child cells */
      s->cells_cap = 2 * (ncells + ncur);
      if ((s->cells = realloc(s->cells, (size_t)s->cells_cap * sizeof *s->cells)) == NULL) nb_fail("realloc");
    }
    nb_cell_t **level = s->cells + ncells;
    memcpy(level, s->objs, (size_t)ncur * sizeof *level);
    ncells += ncur;
    t->bytes[d] = (double)ncur * sizeof(nb_cell_t);
    /* The leaves of this level and their bodies' blocks. */
    long nleaves = 0;
    for (long j = 0; j < ncur; j++)
      if (s->cur[j].hi - s->cur[j].lo <= o->leaf) nleaves++;
    nb_objects(o, r, block, nleaves, s->objs);
    t->bytes[d] += (double)nleaves * (double)block;
    long leaf = 0, nnext = 0;
    for (long j = 0; j < ncur; j++) {
      const nb_spec_t *sp = &s->cur[j];
      nb_cell_t *cell = level[j];
      memset(cell, 0, sizeof *cell);
      cell->half = half;
      cell->depth = d;
      if (sp->parent) sp->parent->child[sp->oct] = cell;
      else t->root = cell;
      long count = sp->hi - sp->lo;
      if (count <= o->leaf || d == NB_MAXL - 1) {
        double (*blk)[4];
        if (count <= o->leaf) {
          blk = s->objs[leaf++];
        } else {   /* the last level: all its bodies, however many */
          if ((blk = sys_alloc((size_t)count * sizeof(double[4]), r)) == NULL) nb_fail("sys_alloc of a leaf");
          t->bytes[d] += (double)count * sizeof(double[4]);
        }
        cell->nleaf = (int32_t)count;
        cell->body = blk;
        for (long i = 0; i < count; i++) {
          const nb_body_t *q = &b[s->idx[sp->lo + i]];
          blk[i][0] = q->x[0], blk[i][1] = q->x[1], blk[i][2] = q->x[2], blk[i][3] = q->m;
          for (int k = 0; k < 3; k++) cell->com[k] += q->m * q->x[k];
          cell->mass += q->m;
        }
        t->leaves++;
        continue;
      }
      long start[9];
      nb_partition(b, s, sp->lo, sp->hi, sp->c, start);
      for (int k = 0; k < 8; k++) {
        if (start[k + 1] == start[k]) continue;
        nb_spec_t *ch = &s->next[nnext++];
        *ch = (nb_spec_t){.parent = cell, .oct = k, .lo = start[k], .hi = start[k + 1]};
        for (int a = 0; a < 3; a++) ch->c[a] = sp->c[a] + ((k >> a) & 1 ? 0.5 : -0.5) * half;
      }
    }
    nb_spec_t *sw = s->cur;
    s->cur = s->next, s->next = sw;
    ncur = nnext;
  }
  t->cells = ncells;
  /* Centres of mass: children come after their parent, so backwards. */
  for (long j = ncells - 1; j >= 0; j--) {
    nb_cell_t *cell = s->cells[j];
    if (cell->nleaf == 0)
      for (int k = 0; k < 8; k++) {
        const nb_cell_t *ch = cell->child[k];
        if (ch == NULL) continue;
        for (int a = 0; a < 3; a++) cell->com[a] += ch->com[a];   /* still mass-weighted */
        cell->mass += ch->mass;
      }
  }
  for (long j = 0; j < ncells; j++) {
    nb_cell_t *cell = s->cells[j];
    if (cell->mass > 0)
      for (int a = 0; a < 3; a++) cell->com[a] /= cell->mass;
  }
  for (long i = 0; i < n; i++) s->sorted[i] = b[s->idx[i]];
  memcpy(b, s->sorted, (size_t)n * sizeof *b);
}

/* ---------------------------------------------------------------------------
 * The essential levels and the exchange
 * ------------------------------------------------------------------------- */

/* The levels of c's tree that a body anywhere in [lo, hi] can reach: a cell
 * is opened when its side >= theta x the distance from its centre of mass
 * to the box, the nearest any body there can be. */
static void nb_need(const nb_cell_t *c, const double lo[3], const double hi[3], double theta2, int *need) {
  if (c->depth + 1 > *need) *need = c->depth + 1;
  if (c->nleaf) return;   /* its bodies are in its own level */
  double d2 = 0;
  for (int k = 0; k < 3; k++) {
    double e = c->com[k] < lo[k] ? lo[k] - c->com[k] : c->com[k] > hi[k] ? c->com[k] - hi[k] : 0;
    d2 += e * e;
  }
  double side = 2 * c->half;
  if (side * side < theta2 * d2 * NB_OPEN_SLACK) return;
  for (int k = 0; k < 8; k++)
    if (c->child[k]) nb_need(c->child[k], lo, hi, theta2, need);
}

typedef struct nb_graft {     /* the trees a force walk visits: [0] the local one */
  nb_cell_t **root;
  int *levels;                /* levels present: a cell of depth >= levels - 1 has no children here */
  int n;
} nb_graft_t;

typedef struct nb_box {
  double lo[3], hi[3], n;
} nb_box_t;

/* Exchanges the essential levels with every other worker; g gets the local
 * root and the received ones. */
static void nb_exchange(const nb_opts_t *o, nb_tree_t *t, long n, nb_graft_t *g, nb_box_t *boxes) {
  nb_box_t mine = {.n = (double)n};
  memcpy(mine.lo, t->lo, sizeof mine.lo);
  memcpy(mine.hi, t->hi, sizeof mine.hi);
  NB_COMM(MPI_Allgather(&mine, 7, MPI_DOUBLE, boxes, 7, MPI_DOUBLE, nb_comm));
  g->n = 0;
  if (n > 0) {
    g->root[g->n] = t->root;
    g->levels[g->n++] = t->nlevels;
  }
  double theta2 = o->theta * o->theta;
  for (int k = 1; k < nb_workers; k++) {
    int peer = nb_me ^ k;
    if (n == 0 || boxes[peer].n == 0) continue;   /* both know: nothing either way */
    double e0 = bench_now_ns();
    int need = 0;
    nb_need(t->root, boxes[peer].lo, boxes[peer].hi, theta2, &need);
    nb_acc.essential += bench_now_ns() - e0;
    rid_t got[NB_MAXL];
    void *root = NULL;
    for (int turn = 0; turn < 2; turn++) {
      if ((turn == 0) == (nb_me < peer)) {
        int rc;
        NB_COMM(rc = sys_send(peer, t->level, need, (void **)&t->root, 1));
        if (rc != 0) nb_fail("sys_send");
      } else {
        int rc;
        NB_COMM(rc = sys_recv(peer, got, NB_MAXL, &root, 1));
        if (rc != 0) nb_fail("sys_recv");
      }
    }
    int levels = 0;
    while (levels < NB_MAXL && got[levels] != SYS_NO_REGION) levels++;
    g->root[g->n] = root;
    g->levels[g->n++] = levels;
    nb_acc.sends++;
    nb_acc.sent_levels += need;
    for (int d = 0; d < need; d++) nb_acc.sent_bytes += t->bytes[d];
  }
}

/* ---------------------------------------------------------------------------
 * Forces and motion
 * ------------------------------------------------------------------------- */

/* b's acceleration from every grafted tree: its interactions (with a cell
 * taken whole, or with a body of an opened leaf) and the cells it visited. */
static void nb_force_one(nb_body_t *b, const nb_graft_t *g, double theta2, double eps2, double *violations,
                         double *visits) {
  const nb_cell_t *stack[8 * NB_MAXL + 8];
  double ax = 0, ay = 0, az = 0, cost = 0, seen = 0;
  const double x = b->x[0], y = b->x[1], z = b->x[2];
  for (int t = 0; t < g->n; t++) {
    int sp = 0, deepest = g->levels[t] - 1;   /* a cell at this depth has no children here */
    stack[sp++] = g->root[t];
    while (sp > 0) {
      const nb_cell_t *c = stack[--sp];
      seen++;
      double dx = c->com[0] - x, dy = c->com[1] - y, dz = c->com[2] - z;
      double d2 = dx * dx + dy * dy + dz * dz, side = 2 * c->half;
      int open = side * side >= theta2 * d2;
      if (open && c->nleaf) {
        for (int i = 0; i < c->nleaf; i++) {
          double ex = c->body[i][0] - x, ey = c->body[i][1] - y, ez = c->body[i][2] - z;
          double r2 = ex * ex + ey * ey + ez * ez + eps2, inv = 1 / sqrt(r2);
          double f = c->body[i][3] * inv * inv * inv;
          ax += f * ex, ay += f * ey, az += f * ez;
        }
        cost += c->nleaf;
        continue;
      }
      if (open && c->depth < deepest) {
        for (int k = 0; k < 8; k++)
          if (c->child[k]) stack[sp++] = c->child[k];
        continue;
      }
      if (open) ++*violations;   /* should have been opened, but its children were not sent */
      double r2 = d2 + eps2, inv = 1 / sqrt(r2), f = c->mass * inv * inv * inv;
      ax += f * dx, ay += f * dy, az += f * dz;
      cost += 1;
    }
  }
  b->a[0] = ax, b->a[1] = ay, b->a[2] = az;
  b->inter = cost;
  *visits = seen;
}

/* Every body's acceleration; its cost, as --cost says: its interactions
 * (the paper's force calculations), those plus the cells it visited, or
 * the ns its walk took. */
static void nb_forces(const nb_opts_t *o, nb_body_t *b, long n, const nb_graft_t *g, double *violations) {
  double theta2 = o->theta * o->theta, eps2 = o->eps * o->eps, visits;
  char how = o->cost[0];
  for (long i = 0; i < n; i++) {
    double t0 = how == 't' ? bench_now_ns() : 0;
    nb_force_one(&b[i], g, theta2, eps2, violations, &visits);
    b[i].cost = how == 't' ? bench_now_ns() - t0 : how == 'v' ? b[i].inter + visits : b[i].inter;
  }
}

static void nb_move(const nb_opts_t *o, nb_body_t *b, long n) {
  for (long i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      b[i].v[k] += b[i].a[k] * o->dt;
      b[i].x[k] += b[i].v[k] * o->dt;
    }
}

/* ---------------------------------------------------------------------------
 * Recursive bisection
 * ------------------------------------------------------------------------- */

typedef struct nb_bodies {
  nb_body_t *b;
  long n, cap;
} nb_bodies_t;

static void nb_reserve(nb_bodies_t *s, long n) {
  if (n <= s->cap) return;
  s->cap = n + n / 2 + 64;
  nb_body_t *p = realloc(s->b, (size_t)s->cap * sizeof *p);
  if (p == NULL) nb_fail("realloc of the bodies");
  s->b = p;
}

static MPI_Comm nb_group[32];   /* [l]: the 2^-l part of the workers this one belongs to */
static int nb_levels_lb;

/* The coordinate along dim below which half the group's cost lies: a
 * histogram of NB_BINS bins over [lo, hi], then one over the bin where half
 * is reached; the cut is the edge of the second's bins nearest to half. */
static double nb_cut(MPI_Comm comm, const nb_body_t *b, long n, int dim, double lo, double hi) {
  double hist[NB_BINS], sum[NB_BINS], below = 0, total = 0;
  for (int pass = 0; pass < 2; pass++) {
    double w = (hi - lo) / NB_BINS;
    memset(hist, 0, sizeof hist);
    for (long i = 0; i < n; i++) {
      double x = b[i].x[dim];
      long k = x < lo ? -1 : w > 0 ? (long)((x - lo) / w) : 0;
      if (pass == 0) k = k < 0 ? 0 : k >= NB_BINS ? NB_BINS - 1 : k;   /* the box holds them all */
      if (k >= 0 && k < NB_BINS) hist[k] += b[i].cost;
    }
    NB_COMM(MPI_Allreduce(hist, sum, NB_BINS, MPI_DOUBLE, MPI_SUM, comm));
    if (pass == 0)
      for (int k = 0; k < NB_BINS; k++) total += sum[k];
    double target = 0.5 * total;
    int k = 0;
    while (k < NB_BINS - 1 && below + sum[k] < target) below += sum[k++];
    if (pass == 1 || w <= 0) return lo + w * (k + (below + sum[k] - target < target - below));
    lo += k * w, hi = lo + w;
  }
  return lo;
}

static void nb_balance(nb_bodies_t *s) {
  for (int l = 0; l < nb_levels_lb; l++) {
    MPI_Comm comm = nb_group[l];
    int gsize = nb_workers >> l, halfsz = gsize / 2, lower = (nb_me % gsize) < halfsz;
    double lo[3], hi[3], ext[6], red[6];
    nb_bounds(s->b, s->n, lo, hi);
    for (int k = 0; k < 3; k++) ext[k] = lo[k], ext[3 + k] = -hi[k];
    NB_COMM(MPI_Allreduce(ext, red, 6, MPI_DOUBLE, MPI_MIN, comm));
    int dim = 0;
    for (int k = 1; k < 3; k++)
      if (-red[3 + k] - red[k] > -red[3 + dim] - red[dim]) dim = k;
    double cut = nb_cut(comm, s->b, s->n, dim, red[dim], -red[3 + dim]);
    /* Keep my side at the front, the partner's at the back. */
    long keep = 0;
    for (long i = 0; i < s->n; i++)
      if ((s->b[i].x[dim] < cut) == lower) {
        nb_body_t tmp = s->b[keep];
        s->b[keep++] = s->b[i];
        s->b[i] = tmp;
      }
    long out = s->n - keep, in = 0;
    int peer = nb_me ^ halfsz;
    NB_COMM(MPI_Sendrecv(&out, 1, MPI_LONG, peer, 1, &in, 1, MPI_LONG, peer, 1, nb_comm, MPI_STATUS_IGNORE));
    nb_body_t *outgoing = nb_malloc((size_t)out * sizeof *outgoing);
    memcpy(outgoing, s->b + keep, (size_t)out * sizeof *outgoing);
    nb_reserve(s, keep + in);
    NB_COMM(MPI_Sendrecv(outgoing, (int)(out * (long)sizeof(nb_body_t)), MPI_BYTE, peer, 2, s->b + keep,
                         (int)(in * (long)sizeof(nb_body_t)), MPI_BYTE, peer, 2, nb_comm, MPI_STATUS_IGNORE));
    free(outgoing);
    s->n = keep + in;
  }
}

/* ---------------------------------------------------------------------------
 * A step
 * ------------------------------------------------------------------------- */

typedef struct nb_state {
  nb_bodies_t bodies;
  nb_scratch_t scratch;
  nb_graft_t graft;
  nb_box_t *boxes;
  long sample_stride;          /* bodies whose id is a multiple of it are sampled; 0: none */
  /* The first step's accelerations of the sampled bodies: id, a[3]. */
  double *acc;
  long nacc;
} nb_state_t;

static void nb_record_sample(nb_state_t *st) {
  const nb_body_t *b = st->bodies.b;
  st->nacc = 0;
  for (long i = 0; i < st->bodies.n; i++)
    if (st->sample_stride && b[i].id % st->sample_stride == 0) st->nacc++;
  st->acc = nb_malloc((size_t)st->nacc * 4 * sizeof(double));
  long j = 0;
  for (long i = 0; i < st->bodies.n; i++)
    if (st->sample_stride && b[i].id % st->sample_stride == 0) {
      st->acc[4 * j] = (double)b[i].id;
      memcpy(st->acc + 4 * j + 1, b[i].a, 3 * sizeof(double));
      j++;
    }
}

/* One step. The scheduler wait is read just before and just after the
 * exchange (the only phase with worker communication through the
 * allocator); what the build and the free of the step wait is in the
 * reading before the next exchange, or the one after the last step. */
static void nb_step(const nb_opts_t *o, nb_state_t *st, int first) {
  nb_tree_t t;
  nb_bodies_t *s = &st->bodies;
  nb_acct_t before = nb_acc;
  double t0 = bench_now_ns();
  nb_build(o, s->b, s->n, &t, &st->scratch);
  double t1 = bench_now_ns();
  nb_acc.build += t1 - t0;
  nb_acc.levels += t.nlevels;
  nb_acc.cells += (double)t.cells;
  nb_acc.wait += nb_wait_since();

  t0 = bench_now_ns();
  nb_exchange(o, &t, s->n, &st->graft, st->boxes);
  t1 = bench_now_ns();
  nb_acc.exchange += t1 - t0;
  double w = nb_wait_since();
  nb_acc.wait += w, nb_acc.wait_x += w;

  t0 = bench_now_ns();
  nb_forces(o, s->b, s->n, &st->graft, &nb_acc.violations);
  t1 = bench_now_ns();
  nb_acc.force += t1 - t0;
  if (nb_step_at >= 0) nb_step_force[nb_step_at] = t1 - t0;
  for (long i = 0; i < s->n; i++) nb_acc.interactions += s->b[i].inter;
  if (first) nb_record_sample(st);

  t0 = bench_now_ns();
  nb_move(o, s->b, s->n);
  t1 = bench_now_ns();
  nb_acc.move += t1 - t0;

  t0 = bench_now_ns();
  nb_balance(s);   /* its first collective: every worker is done with the trees */
  t1 = bench_now_ns();
  nb_acc.balance += t1 - t0;

  t0 = bench_now_ns();
  if (sys_rfree(t.step) != 0) nb_fail("sys_rfree");
  t1 = bench_now_ns();
  nb_acc.free += t1 - t0;
  if (nb_step_at >= 0)
    nb_step_wall[nb_step_at] = nb_acc.build + nb_acc.exchange + nb_acc.force + nb_acc.move + nb_acc.balance +
                               nb_acc.free - (before.build + before.exchange + before.force + before.move +
                                              before.balance + before.free);
}

/* ---------------------------------------------------------------------------
 * Checks
 * ------------------------------------------------------------------------- */

/* A barrier that sleeps while it waits, so that a worker running a long
 * check alone keeps the cores (the runs here are oversubscribed). */
static void nb_idle_barrier(void) {
  MPI_Request r;
  int done = 0;
  MPI_Ibarrier(nb_comm, &r);
  while (MPI_Test(&r, &done, MPI_STATUS_IGNORE), !done) nanosleep(&(struct timespec){0, 200000}, NULL);
}

typedef struct nb_check {
  double acc_mean, acc_max, acc_samples;
  double pos_rms, pos_max, disp_rms, compared;   /* compared: 1 if positions were compared */
  double violations;
  int passed;
  const char *against;
} nb_check_t;

/* The direct-sum acceleration of body x against all n initial bodies. */
static void nb_direct(const double (*all)[4], long n, const double x[3], double eps2, double a[3]) {
  double ax = 0, ay = 0, az = 0;
  for (long j = 0; j < n; j++) {
    double ex = all[j][0] - x[0], ey = all[j][1] - x[1], ez = all[j][2] - x[2];
    double r2 = ex * ex + ey * ey + ez * ez + eps2, inv = 1 / sqrt(r2), f = all[j][3] * inv * inv * inv;
    ax += f * ex, ay += f * ey, az += f * ez;
  }
  a[0] = ax, a[1] = ay, a[2] = az;
}

/* Each worker checks its own sampled bodies' first-step accelerations
 * against direct sums over the initial conditions; max and mean of the
 * relative error over all workers. */
static void nb_check_acc(const nb_opts_t *o, const nb_state_t *st, nb_check_t *c) {
  long n = o->bodies;
  double (*all)[4] = nb_malloc((size_t)n * sizeof *all);
  for (long i = 0; i < n; i++) {
    nb_body_t b;
    nb_plummer(o->seed, i, n, &b);
    all[i][0] = b.x[0], all[i][1] = b.x[1], all[i][2] = b.x[2], all[i][3] = b.m;
  }
  double sum = 0, max = 0, cnt = (double)st->nacc;
  for (long j = 0; j < st->nacc; j++) {
    long id = (long)st->acc[4 * j];
    double a[3], e2 = 0, n2 = 0;
    nb_direct((const double (*)[4])all, n, all[id], o->eps * o->eps, a);
    for (int k = 0; k < 3; k++) {
      double d = st->acc[4 * j + 1 + k] - a[k];
      e2 += d * d, n2 += a[k] * a[k];
    }
    double rel = sqrt(e2 / n2);
    sum += rel;
    if (rel > max) max = rel;
  }
  free(all);
  double in[2] = {sum, cnt}, tot[2];
  MPI_Allreduce(in, tot, 2, MPI_DOUBLE, MPI_SUM, nb_comm);
  MPI_Allreduce(&max, &c->acc_max, 1, MPI_DOUBLE, MPI_MAX, nb_comm);
  c->acc_mean = tot[1] > 0 ? tot[0] / tot[1] : 0;
  c->acc_samples = tot[1];
}

/* Every body's final position, by id, on worker 0 (NULL elsewhere). */
static double *nb_gather_positions(const nb_opts_t *o, const nb_bodies_t *s) {
  int mine = (int)s->n, *counts = NULL, *displs = NULL;
  double *send = nb_malloc((size_t)s->n * 4 * sizeof *send), *recv = NULL, *pos = NULL;
  for (long i = 0; i < s->n; i++) {
    send[4 * i] = (double)s->b[i].id;
    memcpy(send + 4 * i + 1, s->b[i].x, 3 * sizeof(double));
  }
  if (nb_me == 0) {
    counts = nb_malloc((size_t)nb_workers * sizeof *counts);
    displs = nb_malloc((size_t)nb_workers * sizeof *displs);
  }
  MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, nb_comm);
  if (nb_me == 0) {
    long at = 0;
    for (int w = 0; w < nb_workers; w++) {
      displs[w] = (int)(4 * at);
      at += counts[w];
      counts[w] *= 4;
    }
    if (at != o->bodies) {
      fprintf(stderr, "dist-nbody: %ld bodies at the end, %ld at the start\n", at, o->bodies);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    recv = nb_malloc((size_t)at * 4 * sizeof *recv);
  }
  MPI_Gatherv(send, 4 * mine, MPI_DOUBLE, recv, counts, displs, MPI_DOUBLE, 0, nb_comm);
  if (nb_me == 0) {
    pos = nb_malloc((size_t)o->bodies * 3 * sizeof *pos);
    for (long i = 0; i < o->bodies; i++) pos[i * 3] = NAN;
    for (long i = 0; i < o->bodies; i++) {
      long id = (long)recv[4 * i];
      if (id < 0 || id >= o->bodies || !isnan(pos[3 * id])) {
        fprintf(stderr, "dist-nbody: body %ld lost or duplicated\n", id);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      memcpy(pos + 3 * id, recv + 4 * i + 1, 3 * sizeof(double));
    }
  }
  free(send), free(recv), free(counts), free(displs);
  return pos;
}

/* Worker 0 alone: the same steps on all bodies, one tree, in the same
 * program. Positions by id. */
static double *nb_serial(const nb_opts_t *o) {
  nb_state_t st = {0};
  long n = o->bodies;
  nb_reserve(&st.bodies, n);
  for (long i = 0; i < n; i++) nb_plummer(o->seed, i, n, &st.bodies.b[i]);
  st.bodies.n = n;
  nb_cell_t *root[1];
  int levels[1];
  st.graft = (nb_graft_t){.root = root, .levels = levels};
  double violations = 0;
  for (int k = 0; k < o->warmup + o->steps; k++) {
    nb_tree_t t;
    nb_build(o, st.bodies.b, n, &t, &st.scratch);
    st.graft.n = 1, root[0] = t.root, levels[0] = t.nlevels;
    nb_forces(o, st.bodies.b, n, &st.graft, &violations);
    nb_move(o, st.bodies.b, n);
    if (sys_rfree(t.step) != 0) nb_fail("sys_rfree");
  }
  double *pos = nb_malloc((size_t)n * 3 * sizeof *pos);
  for (long i = 0; i < n; i++) memcpy(pos + 3 * st.bodies.b[i].id, st.bodies.b[i].x, 3 * sizeof(double));
  nb_scratch_t *s = &st.scratch;
  free(s->idx), free(s->tmp), free(s->cur), free(s->next), free(s->cells), free(s->objs), free(s->sorted);
  free(st.bodies.b);
  return pos;
}

static const char nb_magic[8] = "NBPOS1\n";

static double *nb_read_positions(const char *path, long n) {
  FILE *f = fopen(path, "rb");
  char magic[8];
  int64_t count;
  double *pos = nb_malloc((size_t)n * 3 * sizeof *pos);
  if (f == NULL || fread(magic, 8, 1, f) != 1 || memcmp(magic, nb_magic, 8) != 0 ||
      fread(&count, 8, 1, f) != 1 || count != n || fread(pos, sizeof(double[3]), (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "dist-nbody: %s: not a positions file of %ld bodies%s%s\n", path, n,
            f ? "" : ": ", f ? "" : strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fclose(f);
  return pos;
}

static void nb_write_positions(const char *path, const double *pos, long n) {
  FILE *f = fopen(path, "wb");
  int64_t count = n;
  if (f == NULL || fwrite(nb_magic, 8, 1, f) != 1 || fwrite(&count, 8, 1, f) != 1 ||
      fwrite(pos, sizeof(double[3]), (size_t)n, f) != (size_t)n || fclose(f) != 0) {
    fprintf(stderr, "dist-nbody: cannot write %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* Worker 0: pos against ref, relative to the rms displacement of ref. */
static void nb_compare(const nb_opts_t *o, const double *pos, const double *ref, nb_check_t *c) {
  double sq = 0, max = 0, disp = 0;
  for (long i = 0; i < o->bodies; i++) {
    nb_body_t b;
    nb_plummer(o->seed, i, o->bodies, &b);
    double e2 = 0, d2 = 0;
    for (int k = 0; k < 3; k++) {
      double e = pos[3 * i + k] - ref[3 * i + k], d = ref[3 * i + k] - b.x[k];
      e2 += e * e, d2 += d * d;
    }
    sq += e2, disp += d2;
    if (e2 > max) max = e2;
  }
  c->disp_rms = sqrt(disp / (double)o->bodies);
  c->pos_rms = sqrt(sq / (double)o->bodies) / c->disp_rms;
  c->pos_max = sqrt(max) / c->disp_rms;
  c->compared = 1;
}

static void nb_checks(const nb_opts_t *o, const nb_state_t *st, nb_check_t *c) {
  memset(c, 0, sizeof *c);
  c->against = o->compare ? "file" : strcmp(o->check, "ref") == 0 ? "serial" : "none";
  MPI_Allreduce(&nb_acc.violations, &c->violations, 1, MPI_DOUBLE, MPI_SUM, nb_comm);
  nb_check_acc(o, st, c);
  double *pos = nb_gather_positions(o, &st->bodies);
  if (nb_me == 0) {
    double *ref = NULL;
    if (o->compare) ref = nb_read_positions(o->compare, o->bodies);
    else if (strcmp(o->check, "ref") == 0) ref = nb_workers == 1 ? NULL : nb_serial(o);
    if (strcmp(c->against, "none") != 0) {
      if (ref) nb_compare(o, pos, ref, c);
      else c->compared = 1, c->against = "self";   /* one worker: the serial run is this run */
    }
    if (o->dump) nb_write_positions(o->dump, pos, o->bodies);
    free(ref);
  }
  free(pos);
  nb_idle_barrier();
  c->passed = c->violations == 0 && c->acc_mean <= o->acc_tol && c->acc_max <= 10 * o->acc_tol &&
              (!c->compared || (c->pos_rms <= o->pos_tol && c->pos_max <= 10 * o->pos_tol));
  MPI_Bcast(c, (int)(offsetof(nb_check_t, passed) / sizeof(double)), MPI_DOUBLE, 0, nb_comm);
  MPI_Bcast(&c->passed, 1, MPI_INT, 0, nb_comm);
}

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

static void nb_report(const nb_opts_t *o, const nb_acct_t *all, double wall_ns, const nb_check_t *c,
                      const sys_sched_stats_t *shape, const double *imbalance, const double *step_wall) {
  const char *lease = getenv("MANYMALLOC_DIST_LEASE");
  const char *mode = lease != NULL && strcmp(lease, "0") == 0 ? "remote" : "local";
  const char *layout = getenv("MANYMALLOC_SCHEDULERS");
  if (layout == NULL || *layout == '\0') layout = "1";
  int P = nb_workers;
  double per = 1e6 * o->steps;   /* ns in all -> ms per step */
  double comp[P], wcomm[P], sched[P], total[P], m_comp = 0, m_wcomm = 0, m_sched = 0, frac_max = 0;
  double force_max = 0;
  nb_acct_t mean = {0};
  for (int w = 0; w < P; w++) {
    const nb_acct_t *a = &all[w];
    total[w] = a->build + a->exchange + a->force + a->move + a->balance + a->free;
    sched[w] = a->wait;
    wcomm[w] = a->comm - a->wait_x;
    if (wcomm[w] < 0) wcomm[w] = 0;
    comp[w] = total[w] - wcomm[w] - sched[w];
    m_comp += comp[w] / P, m_wcomm += wcomm[w] / P, m_sched += sched[w] / P;
    if (sched[w] / total[w] > frac_max) frac_max = sched[w] / total[w];
    if (a->force > force_max) force_max = a->force;
    for (size_t k = 0; k < NB_ACCT_N; k++) ((double *)&mean)[k] += ((const double *)a)[k] / P;
  }
  double m_total = m_comp + m_wcomm + m_sched;
  printf("dist-nbody, %s, schedulers %s, %d workers, %ld bodies, %d steps (+%d warm-up), theta %g: "
         "%.1f ms a step; a worker's mean: computation %.1f, worker comm %.1f, sched comm %.2f ms "
         "(%.2f%%, max %.2f%%); checks %s (acc err mean %.2e max %.2e, pos rms %.2e max %.2e vs %s, "
         "%.0f violations)\n",
         mode, layout, P, o->bodies, o->steps, o->warmup, o->theta, wall_ns / per, m_comp / per,
         m_wcomm / per, m_sched / per, 100 * m_sched / m_total, 100 * frac_max, c->passed ? "passed" : "FAILED",
         c->acc_mean, c->acc_max, c->pos_rms, c->pos_max, c->against, c->violations);
  bench_out_dir("dist-nbody", o->out);
  char path[4096];
  snprintf(path, sizeof path, "%s/nbody.jsonl", o->out);
  FILE *f = fopen(path, "a");
  if (f == NULL) nb_fail("fopen of nbody.jsonl");
  fprintf(f, "{\"mode\": \"%s\", \"layout\": \"%s\", \"schedulers\": %lld, \"levels\": %lld, \"workers\": %d, "
             "\"bodies\": %ld, \"steps\": %d, \"warmup\": %d, \"theta\": %g, \"dt\": %g, \"eps\": %g, "
             "\"leaf\": %d, \"alloc\": \"%s\", \"cost\": \"%s\", \"seed\": %llu, ",
          mode, layout, (long long)shape->schedulers, (long long)shape->levels, P, o->bodies, o->steps,
          o->warmup, o->theta, o->dt, o->eps, o->leaf, o->alloc, o->cost, (unsigned long long)o->seed);
  fprintf(f, "\"step_ms\": %.4f, \"comp_ms\": %.4f, \"wcomm_ms\": %.4f, \"sched_ms\": %.4f, "
             "\"sched_frac\": %.5f, \"sched_frac_max\": %.5f, ",
          wall_ns / per, m_comp / per, m_wcomm / per, m_sched / per, m_sched / m_total, frac_max);
  fprintf(f, "\"phases_ms\": {\"build\": %.4f, \"exchange\": %.4f, \"force\": %.4f, \"move\": %.4f, "
             "\"balance\": %.4f, \"free\": %.4f, \"essential\": %.4f, \"queries\": %.4f}, ",
          mean.build / per, mean.exchange / per, mean.force / per, mean.move / per, mean.balance / per,
          mean.free / per, mean.essential / per, mean.stats / per);
  double steps = o->steps;
  fprintf(f, "\"sched_calls_per_step\": %.1f, \"tree_levels\": %.2f, \"cells_per_step\": %.1f, "
             "\"levels_sent\": %.2f, \"sent_mib_per_step\": %.4f, \"interactions_per_body\": %.1f, "
             "\"force_imbalance\": %.3f, ",
          mean.calls / steps, mean.levels / steps, mean.cells / steps,
          mean.sends > 0 ? mean.sent_levels / mean.sends : 0, P * mean.sent_bytes / steps / 1048576.0,
          P * mean.interactions / steps / (double)o->bodies, mean.force > 0 ? force_max / mean.force : 1);
  fprintf(f, "\"step_ms_each\": [");
  for (int k = 0; k < o->steps; k++) fprintf(f, "%s%.3f", k ? ", " : "", step_wall[k] / 1e6);
  fprintf(f, "], \"force_imbalance_per_step\": [");
  for (int k = 0; k < o->steps; k++) fprintf(f, "%s%.3f", k ? ", " : "", imbalance[k]);
  fprintf(f, "], \"per_worker\": [");
  for (int w = 0; w < P; w++)
    fprintf(f, "%s{\"comp_ms\": %.4f, \"wcomm_ms\": %.4f, \"sched_ms\": %.4f, \"force_ms\": %.4f, "
               "\"sched_calls_per_step\": %.1f}",
            w ? ", " : "", comp[w] / per, wcomm[w] / per, sched[w] / per, all[w].force / per, all[w].calls / steps);
  fprintf(f, "], \"check\": {\"against\": \"%s\", \"passed\": %s, \"violations\": %.0f, "
             "\"acc_samples\": %.0f, \"acc_err_mean\": %.4e, \"acc_err_max\": %.4e, \"acc_tol_mean\": %g, "
             "\"acc_tol_max\": %g, \"compared\": %s, \"pos_err_rms\": %.4e, \"pos_err_max\": %.4e, "
             "\"disp_rms\": %.4e, \"pos_tol_rms\": %g, \"pos_tol_max\": %g}}\n",
          c->against, c->passed ? "true" : "false", c->violations, c->acc_samples, c->acc_mean, c->acc_max,
          o->acc_tol, 10 * o->acc_tol, c->compared ? "true" : "false", c->pos_rms, c->pos_max, c->disp_rms,
          o->pos_tol, 10 * o->pos_tol);
  bench_out_close("dist-nbody", f, "nbody.jsonl");
}

/* ---------------------------------------------------------------------------
 * Options and main
 * ------------------------------------------------------------------------- */

static void nb_usage(const char *prog) {
  if (nb_me == 0)
    fprintf(stderr, "usage: %s [--out DIR (.)] [--bodies N (20000)] [--steps K (3)] [--warmup K (1)] "
                    "[--theta T (0.5)] [--dt D (0.01)] [--eps E (0.025)] [--leaf B (8)] "
                    "[--alloc balloc|alloc] [--cost interactions|visits|time] [--check ref|none] [--sample S (256)] "
                    "[--dump FILE] "
                    "[--compare FILE] [--seed X (1)] [--pos-tol F (1e-3; theta 0: 1e-9)] "
                    "[--acc-tol F (1e-2; theta 0: 1e-9)]\n"
                    "  a power of two of workers\n", prog);
  exit(2);
}

static double nb_number(const char *prog, const char *s, double min) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= min)) nb_usage(prog);
  return v;
}

static void nb_parse(int argc, char **argv, nb_opts_t *o) {
  if (argc % 2 == 0) nb_usage(argv[0]);
  for (int i = 1; i < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (strcmp(k, "--out") == 0) o->out = v;
    else if (strcmp(k, "--bodies") == 0) o->bodies = (long)nb_number(argv[0], v, 1);
    else if (strcmp(k, "--steps") == 0) o->steps = (int)nb_number(argv[0], v, 1);
    else if (strcmp(k, "--warmup") == 0) o->warmup = (int)nb_number(argv[0], v, 0);
    else if (strcmp(k, "--theta") == 0) o->theta = nb_number(argv[0], v, 0);
    else if (strcmp(k, "--dt") == 0) o->dt = nb_number(argv[0], v, 0);
    else if (strcmp(k, "--eps") == 0) o->eps = nb_number(argv[0], v, 1e-12);
    else if (strcmp(k, "--leaf") == 0) o->leaf = (int)nb_number(argv[0], v, 1);
    else if (strcmp(k, "--sample") == 0) o->sample = (int)nb_number(argv[0], v, 0);
    else if (strcmp(k, "--seed") == 0) o->seed = (uint64_t)nb_number(argv[0], v, 0);
    else if (strcmp(k, "--pos-tol") == 0) o->pos_tol = nb_number(argv[0], v, 0);
    else if (strcmp(k, "--acc-tol") == 0) o->acc_tol = nb_number(argv[0], v, 0);
    else if (strcmp(k, "--dump") == 0) o->dump = v;
    else if (strcmp(k, "--compare") == 0) o->compare = v;
    else if (strcmp(k, "--alloc") == 0 && (strcmp(v, "balloc") == 0 || strcmp(v, "alloc") == 0)) o->alloc = v;
    else if (strcmp(k, "--cost") == 0 && (strcmp(v, "interactions") == 0 || strcmp(v, "visits") == 0 ||
                                          strcmp(v, "time") == 0)) o->cost = v;
    else if (strcmp(k, "--check") == 0 && (strcmp(v, "ref") == 0 || strcmp(v, "none") == 0)) o->check = v;
    else nb_usage(argv[0]);
  }
  if (o->bodies > INT32_MAX / 4 || o->leaf > 64) nb_usage(argv[0]);
  if (o->theta == 0) {   /* direct sums on both sides: only the order of the sums differs */
    if (o->pos_tol < 0) o->pos_tol = 1e-9;
    if (o->acc_tol < 0) o->acc_tol = 1e-9;
  }
  if (o->pos_tol < 0) o->pos_tol = 1e-3;
  if (o->acc_tol < 0) o->acc_tol = 1e-2;
}

int myrmics_main(int argc, char **argv) {
  nb_opts_t o = {.out = ".", .check = "ref", .alloc = "balloc", .cost = "interactions", .bodies = 20000, .steps = 3, .warmup = 1,
                 .leaf = 8, .sample = 256, .theta = 0.5, .dt = 0.01, .eps = 0.025, .pos_tol = -1,
                 .acc_tol = -1, .seed = 1};
  nb_me = sys_worker_id();
  nb_workers = sys_num_workers();
  nb_comm = sys_worker_comm();
  nb_parse(argc, argv, &o);
  nb_step_force = nb_malloc((size_t)o.steps * sizeof *nb_step_force);
  nb_step_wall = nb_malloc((size_t)o.steps * sizeof *nb_step_wall);
  if (nb_workers & (nb_workers - 1)) nb_usage(argv[0]);
  for (nb_levels_lb = 0; (1 << nb_levels_lb) < nb_workers; nb_levels_lb++)
    MPI_Comm_split(nb_comm, nb_me / (nb_workers >> nb_levels_lb), nb_me, &nb_group[nb_levels_lb]);

  nb_state_t st = {0};
  st.sample_stride = o.sample > 0 && o.sample < o.bodies ? o.bodies / o.sample : 1;
  if (o.sample == 0) st.sample_stride = 0;
  long lo = o.bodies * nb_me / nb_workers, hi = o.bodies * (nb_me + 1) / nb_workers;
  nb_reserve(&st.bodies, hi - lo);
  for (long i = lo; i < hi; i++) nb_plummer(o.seed, i, o.bodies, &st.bodies.b[i - lo]);
  st.bodies.n = hi - lo;
  st.graft.root = nb_malloc((size_t)nb_workers * sizeof *st.graft.root);
  st.graft.levels = nb_malloc((size_t)nb_workers * sizeof *st.graft.levels);
  st.boxes = nb_malloc((size_t)nb_workers * sizeof *st.boxes);
  nb_balance(&st.bodies);   /* spread in space, unit costs */

  nb_wait_since();
  for (int k = 0; k < o.warmup; k++) nb_step(&o, &st, k == 0);
  MPI_Barrier(nb_comm);
  memset(&nb_acc, 0, sizeof nb_acc);
  nb_wait_since();
  nb_acc.stats = 0, nb_acc.calls = 0;
  MPI_Barrier(nb_comm);
  double t0 = bench_now_ns();
  for (int k = 0; k < o.steps; k++) {
    nb_step_at = k;
    nb_step(&o, &st, o.warmup == 0 && k == 0);
  }
  nb_acc.wait += nb_wait_since();   /* the last step's free */
  MPI_Barrier(nb_comm);
  double wall = bench_now_ns() - t0 - nb_acc.stats, wall_max;
  MPI_Reduce(&wall, &wall_max, 1, MPI_DOUBLE, MPI_MAX, 0, nb_comm);

  nb_acct_t *all = nb_me == 0 ? nb_malloc((size_t)nb_workers * sizeof *all) : NULL;
  double *fmax = nb_malloc((size_t)o.steps * sizeof *fmax), *fsum = nb_malloc((size_t)o.steps * sizeof *fsum);
  MPI_Reduce(nb_step_force, fmax, o.steps, MPI_DOUBLE, MPI_MAX, 0, nb_comm);
  MPI_Reduce(nb_step_force, fsum, o.steps, MPI_DOUBLE, MPI_SUM, 0, nb_comm);
  for (int k = 0; k < o.steps; k++) fmax[k] = fsum[k] > 0 ? fmax[k] * nb_workers / fsum[k] : 1;
  double *wmax = nb_malloc((size_t)o.steps * sizeof *wmax);
  MPI_Reduce(nb_step_wall, wmax, o.steps, MPI_DOUBLE, MPI_MAX, 0, nb_comm);
  MPI_Gather(&nb_acc, (int)NB_ACCT_N, MPI_DOUBLE, all, (int)NB_ACCT_N, MPI_DOUBLE, 0, nb_comm);
  nb_acct_t timed = nb_acc;
  nb_check_t check;
  nb_checks(&o, &st, &check);
  nb_acc = timed;
  sys_sched_stats_t shape;
  if (sys_sched_stats(&shape) != 0) nb_fail("sys_sched_stats");
  if (nb_me == 0) nb_report(&o, all, wall_max, &check, &shape, fmax, wmax);
  for (int l = 0; l < nb_levels_lb; l++) MPI_Comm_free(&nb_group[l]);
  free(all), free(st.bodies.b), free(st.graft.root), free(st.graft.levels), free(st.boxes), free(st.acc);
  free(fmax), free(fsum), free(wmax), free(nb_step_force), free(nb_step_wall);
  return check.passed ? 0 : 1;
}
