/* SPDX-License-Identifier: Apache-2.0 */
/* dist-delaunay: the Delaunay triangulation of the Myrmics paper's Sect. 6.4
 * (Fig. 4d, Fig. 5) on the region allocator. Run it under mpirun with
 * P = 1, 4, 16, ... (a power of four) workers and one scheduler (or a tree,
 * MANYMALLOC_SCHEDULERS).
 *
 * Points: n uniform in [0, 1)^2, point i from its own random stream (the
 * same set whatever P), plus the four corners of the frame [-1, 2]^2: the
 * paper's "placeholder triangles that form the borders" are the frame's two
 * triangles, and the result is the Delaunay triangulation of all n + 4
 * points, whose hull is the frame's 4 corners: 2 (n + 4) - 2 - 4 = 2n + 2
 * triangles, every one of them checked like any other.
 *
 * Regions (the paper's grid decomposition): the unit square is cut into
 * G x G cells, G = 2 sqrt(P), so 4P cells, four times the workers. Each cell
 * is a leaf region of a degree-4 hierarchy: the root region owns the whole
 * square, its four children the quadrants, theirs the sub-quadrants, down to
 * the cells (sys_ralloc(parent, depth + 1)). A triangle (64 B: its vertices,
 * neighbours, each neighbour's cell, its circumcentre) is allocated by
 * sys_alloc in the cell of its circumcentre (clamped to the square), and a
 * cell header (an anchor triangle and the cell's count) lives in each cell.
 *
 * Insertion is Bowyer-Watson as in Arens' code: walk to the triangle that
 * holds the point (visibility walk), grow the cavity of triangles whose
 * circumcircle holds it (incircle determinant; a cavity edge the point does
 * not see strictly is also crossed, which keeps the cavity star-shaped under
 * rounding), sys_free the cavity, sys_alloc the fan of new triangles and link
 * them. A worker may only read or write triangles of the cells it owns; a
 * point whose walk, cavity, cavity neighbours or new triangles touch a cell it
 * does not own is postponed, nothing changed (each triangle keeps its
 * neighbours' cells, so a foreign triangle is never even read).
 *
 * Phases, with P = 4^k:
 *   round 0      worker 0 owns every cell and inserts the first
 *                --round-points x 4 points (all of them when P = 1);
 *   round r      (1 <= r <= k) each owner of a depth r-1 quadrant sys_sends
 *                three of its four sub-quadrant regions (with their cells)
 *                to three more workers and keeps one: 4^r workers, each
 *                inserting its quadrant's share of the next points, up to
 *                --round-points x 4^(r+1) in all, and all remaining points in
 *                round k, where each worker owns 2 x 2 cells (four leaf
 *                regions, Fig. 5's sub-quadrants). Points postponed in a
 *                round < k are retried in the next round;
 *   retri right, retri down, retri left (P > 1): the three re-triangulation
 *                phases of Fig. 5: the 2 x 2 blocks of cells shifted by one
 *                cell to the right, then down, then left (with wrap-around at
 *                the square's edge), the cells that change owner sys_sent as
 *                leaf regions, and the postponed points retried by the owner
 *                of their cell;
 *   fallback     the simplification (the paper assumes every point can be
 *                triangulated within two adjacent sub-quadrants, which does
 *                not hold for every point, e.g. those outside the hull of
 *                the points inserted so far, whose cavity reaches frame
 *                triangles with far circumcentres): every cell is sent to
 *                worker 0, which inserts whatever is still postponed. Timed
 *                as a phase only when some point is left; the paper's fourth
 *                rotation (up, back to the start) is not made, as no round
 *                follows.
 * Each phase change sends, per pair of workers (XOR stages, the lower ID
 * first), the regions that change owner, a whole quadrant where all of it
 * moves. Within a phase a worker inserts its points in BRIO order: by round
 * of doubling index ranges (the points are random, so that is a random
 * order), each round along a Hilbert curve.
 *
 * Timing: --reps repetitions of the whole triangulation (regions made,
 * phases, check, sys_rfree of the root), each phase between two barriers:
 * its wall time (worker 0), the slowest worker's transfer and insertion,
 * and the mean worker's scheduler wait (sys_sched_stats worker_wait_ns); the
 * JSON has each phase's median over the repetitions and the total's.
 *
 * Checks (untimed; the last repetition, after every cell is gathered to
 * worker 0): every triangle reachable from a cell's anchor, positively
 * oriented, its links mutual, its neighbours' cells and its own right, the
 * count 2n + 2 and equal to the cells' counts, every point a vertex, the
 * areas summing to the frame's 9; and on --sample triangles (every one when
 * fewer; default 100000) no point strictly inside the circumcircle: incircle
 * determinant (coordinates relative to the point) above 1e-10 times its
 * permanent (the sum of the absolute terms) counts as a violation. Points
 * are found with a bucket grid. Every repetition checks the count.
 * Appends one JSON line to --out/delaunay.jsonl, prints one line, exits 1
 * when a check fails.
 *
 *   mpirun -np 1+P ./dist-delaunay [--out DIR] [--points N] [--reps R]
 *       [--round-points M] [--sample S] [--seed X]
 */
#define _GNU_SOURCE
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manymalloc/myrmics.h"
#include "out.h"
#include "timing.h"

#define DL_NONE 0xffffu      /* no neighbour (a frame edge) */
#define DL_MAXPH 16          /* phases at most */
#define DL_TOL 1e-10         /* the check's incircle tolerance, relative to the permanent */

/* A triangle: one 64 B slot. Vertices counter-clockwise; n[i] is the
 * neighbour across the edge opposite v[i], ncell[i] its cell. */
typedef struct dl_tri {
  int32_t v[3];
  uint16_t ncell[3];
  uint16_t cell;               /* the cell of its circumcentre: its region */
  uint32_t mark;               /* the cavity (or check) it was last put in */
  struct dl_tri *n[3];
  double cx, cy;               /* circumcentre */
} dl_tri_t;
_Static_assert(sizeof(dl_tri_t) == 64, "a triangle is one 64 B slot");

typedef struct dl_hdr {        /* in each cell's region */
  dl_tri_t *anchor;            /* a live triangle of the cell, or NULL */
  int64_t count;               /* live triangles of the cell */
} dl_hdr_t;

typedef struct dl_opts {
  const char *out;
  long points, round_points, sample;
  int reps;
  uint64_t seed;
} dl_opts_t;

typedef struct dl_bd {         /* a cavity boundary edge a -> b, p on its left */
  int32_t a, b;
  dl_tri_t *nb;                /* the triangle beyond it (kept), or NULL */
  dl_tri_t *t;                 /* its new triangle (p, a, b) */
  double cx, cy;
  uint16_t cell;
} dl_bd_t;

/* A phase's numbers in one repetition. */
typedef struct dl_phase {
  char name[24];
  int active;                  /* workers that own cells */
  double wall, transfer, insert, sync, sched;   /* ns: wall (worker 0), slowest transfer/insert, sync, mean sched wait */
  double calls;                /* requests to the scheduler, all workers */
  double attempted, inserted, postponed, regions_sent, tris_sent, tris_after;
} dl_phase_t;

static int dl_me, dl_P, dl_k, dl_G, dl_L;   /* P = 4^k workers, G = 2^(k+1) cells a side, L = k + 1 leaf depth */
static int dl_ncells;
static MPI_Comm dl_comm;
static long dl_n;                            /* real points; n .. n+3 are the frame */
static double (*dl_pt)[2];
static rid_t *dl_rid;                        /* region of tree node (d, m) at dl_node(d, m) */
static dl_hdr_t **dl_hdr;                    /* by cell (Morton index) */
static uint8_t *dl_owned;                    /* by cell, this phase */
static int *dl_owner, *dl_prev;              /* by cell: this phase's and the last phase's owner */
static long **dl_cellpts, *dl_cellnpts;      /* each cell's points, ascending */

/* Scratch of one worker. */
static dl_tri_t **dl_cav;
static dl_bd_t *dl_bd;
static long dl_cavcap, dl_bdcap;
static int32_t *dl_slot;                     /* vertex -> boundary edge starting there, -1 */
static uint32_t dl_stamp;
static dl_tri_t *dl_last;
static uint64_t dl_rng = 0x2545f4914f6cdd1dull;
static int64_t dl_wait_seen, dl_calls_seen;
static double dl_last_calls;                 /* requests to the scheduler between the last two queries */
static long dl_errors;                       /* insertions that failed for a reason other than ownership */

static void dl_fail(const char *what) {
  fprintf(stderr, "dist-delaunay: worker %d: %s failed: %s\n", dl_me, what, sys_strerror(sys_last_error()));
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void *dl_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) dl_fail("malloc");
  return p;
}

static double dl_sched_wait(void) {
  sys_sched_stats_t s;
  if (sys_sched_stats(&s) != 0) dl_fail("sys_sched_stats");
  double d = (double)(s.worker_wait_ns - dl_wait_seen);
  dl_last_calls = (double)(s.worker_calls - dl_calls_seen - 1);   /* this query left out */
  dl_wait_seen = s.worker_wait_ns;
  dl_calls_seen = s.worker_calls;
  return d;
}

/* ---------------------------------------------------------------------------
 * Points, cells, the region tree
 * ------------------------------------------------------------------------- */

static uint64_t dl_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double dl_uniform(uint64_t *s) {
  *s += 0x9e3779b97f4a7c15ull;
  return (double)(dl_mix(*s) >> 11) * 0x1.0p-53;
}

static uint32_t dl_spread(uint32_t x) {   /* bits of x to the even positions */
  x &= 0xffff;
  x = (x | (x << 8)) & 0x00ff00ff;
  x = (x | (x << 4)) & 0x0f0f0f0f;
  x = (x | (x << 2)) & 0x33333333;
  x = (x | (x << 1)) & 0x55555555;
  return x;
}

static uint32_t dl_squash(uint32_t x) {
  x &= 0x55555555;
  x = (x | (x >> 1)) & 0x33333333;
  x = (x | (x >> 2)) & 0x0f0f0f0f;
  x = (x | (x >> 4)) & 0x00ff00ff;
  x = (x | (x >> 8)) & 0x0000ffff;
  return x;
}

static int dl_morton(int x, int y) { return (int)(dl_spread((uint32_t)x) | dl_spread((uint32_t)y) << 1); }

static int dl_coord(double x) {
  int c = (int)floor(x * dl_G);   /* NaN (a degenerate circumcentre) goes to 0 */
  return c >= 0 && c < dl_G ? c : c >= dl_G ? dl_G - 1 : 0;
}

static uint16_t dl_cell_of(double x, double y) { return (uint16_t)dl_morton(dl_coord(x), dl_coord(y)); }

/* Tree nodes (d, m), d = 0 .. L, m < 4^d, numbered level by level. */
static int dl_node(int d, int m) { return (int)(((1L << 2 * d) - 1) / 3) + m; }

/* Hilbert index of (x, y) on a 2^16 grid. */
static uint32_t dl_hilbert(double fx, double fy) {
  uint32_t n = 1u << 16, x = (uint32_t)(fx * n), y = (uint32_t)(fy * n), d = 0;
  if (x >= n) x = n - 1;
  if (y >= n) y = n - 1;
  for (uint32_t s = n / 2; s > 0; s /= 2) {
    uint32_t rx = (x & s) > 0, ry = (y & s) > 0;
    d += s * s * ((3 * rx) ^ ry);
    if (ry == 0) {
      if (rx == 1) x = s - 1 - x, y = s - 1 - y;
      uint32_t t = x;
      x = y, y = t;
    }
  }
  return d;
}

static void dl_make_points(const dl_opts_t *o) {
  dl_pt = dl_malloc((size_t)(dl_n + 4) * sizeof *dl_pt);
  for (long i = 0; i < dl_n; i++) {
    uint64_t s = dl_mix(o->seed ^ dl_mix((uint64_t)i + 1));
    dl_pt[i][0] = dl_uniform(&s);
    dl_pt[i][1] = dl_uniform(&s);
  }
  static const double frame[4][2] = {{-1, -1}, {2, -1}, {2, 2}, {-1, 2}};
  memcpy(dl_pt[dl_n], frame, sizeof frame);
  /* Each cell's points, ascending (a counting sort). */
  dl_cellnpts = calloc((size_t)dl_ncells, sizeof *dl_cellnpts);
  dl_cellpts = dl_malloc((size_t)dl_ncells * sizeof *dl_cellpts);
  uint16_t *c = dl_malloc((size_t)dl_n * sizeof *c);
  for (long i = 0; i < dl_n; i++) dl_cellnpts[c[i] = dl_cell_of(dl_pt[i][0], dl_pt[i][1])]++;
  for (int j = 0; j < dl_ncells; j++) dl_cellpts[j] = dl_malloc((size_t)dl_cellnpts[j] * sizeof **dl_cellpts), dl_cellnpts[j] = 0;
  for (long i = 0; i < dl_n; i++) dl_cellpts[c[i]][dl_cellnpts[c[i]]++] = i;
  free(c);
}

/* Worker 0 makes the region tree and the cell headers; every worker learns
 * their IDs and addresses. */
static void dl_make_regions(void) {
  int nodes = dl_node(dl_L + 1, 0);
  if (dl_me == 0) {
    if ((dl_rid[0] = sys_ralloc(0, 1)) < 0) dl_fail("sys_ralloc of the root");
    for (int d = 1; d <= dl_L; d++)
      for (int m = 0; m < 1 << 2 * d; m++)
        if ((dl_rid[dl_node(d, m)] = sys_ralloc(dl_rid[dl_node(d - 1, m >> 2)], d + 1)) < 0) dl_fail("sys_ralloc");
    for (int c = 0; c < dl_ncells; c++) {
      if ((dl_hdr[c] = sys_alloc(sizeof(dl_hdr_t), dl_rid[dl_node(dl_L, c)])) == NULL) dl_fail("sys_alloc of a header");
      dl_hdr[c]->anchor = NULL, dl_hdr[c]->count = 0;
    }
  }
  MPI_Bcast(dl_rid, nodes, MPI_INT64_T, 0, dl_comm);
  MPI_Bcast(dl_hdr, dl_ncells * (int)sizeof *dl_hdr, MPI_BYTE, 0, dl_comm);
}

/* ---------------------------------------------------------------------------
 * Geometry
 * ------------------------------------------------------------------------- */

static double dl_orient(const double *a, const double *b, const double *c) {
  return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}

/* > 0 when p is inside the circle through a, b, c (counter-clockwise); the
 * permanent (sum of the absolute terms) in *perm when asked. */
static double dl_incircle(const double *a, const double *b, const double *c, const double *p, double *perm) {
  double adx = a[0] - p[0], ady = a[1] - p[1], bdx = b[0] - p[0], bdy = b[1] - p[1];
  double cdx = c[0] - p[0], cdy = c[1] - p[1];
  double al = adx * adx + ady * ady, bl = bdx * bdx + bdy * bdy, cl = cdx * cdx + cdy * cdy;
  double bc = bdx * cdy - cdx * bdy, ca = cdx * ady - adx * cdy, ab = adx * bdy - bdx * ady;
  if (perm)
    *perm = al * (fabs(bdx * cdy) + fabs(cdx * bdy)) + bl * (fabs(cdx * ady) + fabs(adx * cdy)) +
            cl * (fabs(adx * bdy) + fabs(bdx * ady));
  return al * bc + bl * ca + cl * ab;
}

static void dl_circumcentre(const double *a, const double *b, const double *c, double *ox, double *oy) {
  double bx = b[0] - a[0], by = b[1] - a[1], cx = c[0] - a[0], cy = c[1] - a[1];
  double d = 2 * (bx * cy - by * cx), bl = bx * bx + by * by, cl = cx * cx + cy * cy;
  *ox = a[0] + (cy * bl - by * cl) / d;
  *oy = a[1] + (bx * cl - cx * bl) / d;
}

/* ---------------------------------------------------------------------------
 * Insertion
 * ------------------------------------------------------------------------- */

static dl_tri_t *dl_new_tri(int32_t a, int32_t b, int32_t c, double cx, double cy, uint16_t cell) {
  dl_tri_t *t = sys_alloc(sizeof *t, dl_rid[dl_node(dl_L, cell)]);
  if (t == NULL) dl_fail("sys_alloc of a triangle");
  t->v[0] = a, t->v[1] = b, t->v[2] = c;
  t->cell = cell;
  t->mark = 0;
  t->cx = cx, t->cy = cy;
  t->n[0] = t->n[1] = t->n[2] = NULL;
  t->ncell[0] = t->ncell[1] = t->ncell[2] = DL_NONE;
  dl_hdr_t *h = dl_hdr[cell];
  h->anchor = t;
  h->count++;
  return t;
}

static void dl_del_tri(dl_tri_t *t) {
  dl_hdr_t *h = dl_hdr[t->cell];
  if (h->anchor == t) h->anchor = NULL;
  h->count--;
  if (sys_free(t) != 0) dl_fail("sys_free of a triangle");
}

/* The frame's two triangles, by worker 0 at round 0. */
static void dl_seed_frame(void) {
  int32_t c0 = (int32_t)dl_n, c1 = c0 + 1, c2 = c0 + 2, c3 = c0 + 3;
  double x, y;
  dl_circumcentre(dl_pt[c0], dl_pt[c1], dl_pt[c2], &x, &y);
  uint16_t cell = dl_cell_of(x, y);
  dl_tri_t *t1 = dl_new_tri(c0, c1, c2, x, y, cell), *t2 = dl_new_tri(c0, c2, c3, x, y, cell);
  t1->n[1] = t2, t1->ncell[1] = cell;   /* edge c2-c0, opposite c1 */
  t2->n[2] = t1, t2->ncell[2] = cell;   /* edge c0-c2, opposite c3 */
}

static void dl_grow(void **p, long *cap, long need, size_t size) {
  if (need <= *cap) return;
  *cap = 2 * need + 64;
  if ((*p = realloc(*p, (size_t)*cap * size)) == NULL) dl_fail("realloc");
}

static dl_tri_t *dl_any_anchor(void) {
  for (int c = 0; c < dl_ncells; c++)
    if (dl_owned[c] && dl_hdr[c]->anchor) return dl_hdr[c]->anchor;
  return NULL;
}

/* Walks from t to the triangle holding p: NULL when the walk would enter a
 * triangle of a cell this worker does not own. */
static dl_tri_t *dl_walk(dl_tri_t *t, const double *p) {
  for (long steps = 0; steps < (1L << 24); steps++) {
    dl_rng ^= dl_rng << 13, dl_rng ^= dl_rng >> 7, dl_rng ^= dl_rng << 17;
    int r = (int)(dl_rng % 3), moved = 0;
    for (int e = 0; e < 3; e++) {
      int i = (r + e) % 3;
      if (dl_orient(dl_pt[t->v[(i + 1) % 3]], dl_pt[t->v[(i + 2) % 3]], p) < 0) {
        if (t->n[i] == NULL || !dl_owned[t->ncell[i]]) return NULL;   /* (a frame edge: cannot happen) */
        t = t->n[i];
        moved = 1;
        break;
      }
    }
    if (!moved) return t;
  }
  return NULL;
}

/* Inserts point pi: 1, or 0 (postponed, nothing changed) when it needs a
 * cell this worker does not own. */
static int dl_insert(int32_t pi) {
  const double *p = dl_pt[pi];
  uint16_t home = dl_cell_of(p[0], p[1]);
  dl_tri_t *t = NULL;
  if (dl_last) t = dl_walk(dl_last, p);
  if (t == NULL && dl_owned[home] && dl_hdr[home]->anchor && dl_hdr[home]->anchor != dl_last)
    t = dl_walk(dl_hdr[home]->anchor, p);
  if (t == NULL && dl_last == NULL) {
    dl_tri_t *any = dl_any_anchor();
    if (any) t = dl_walk(any, p);
  }
  if (t == NULL) return 0;
  for (int i = 0; i < 3; i++)
    if (t->v[i] == pi || (dl_pt[t->v[i]][0] == p[0] && dl_pt[t->v[i]][1] == p[1])) {
      dl_errors++;   /* a duplicate point: left out */
      return 1;
    }
  /* The cavity. */
  uint32_t stamp = dl_stamp += (uint32_t)dl_P;
  long ncav = 0, nbd = 0;
  dl_grow((void **)&dl_cav, &dl_cavcap, 1, sizeof *dl_cav);
  dl_cav[ncav++] = t;
  t->mark = stamp;
  for (long ci = 0; ci < ncav; ci++) {
    dl_tri_t *c = dl_cav[ci];
    for (int i = 0; i < 3; i++) {
      dl_tri_t *nb = c->n[i];
      int32_t a = c->v[(i + 1) % 3], b = c->v[(i + 2) % 3];
      if (nb != NULL) {
        if (!dl_owned[c->ncell[i]]) return 0;
        if (nb->mark == stamp) continue;
        if (dl_incircle(dl_pt[nb->v[0]], dl_pt[nb->v[1]], dl_pt[nb->v[2]], p, NULL) > 0 ||
            dl_orient(dl_pt[a], dl_pt[b], p) <= 0) {
          nb->mark = stamp;
          dl_grow((void **)&dl_cav, &dl_cavcap, ncav + 1, sizeof *dl_cav);
          dl_cav[ncav++] = nb;
          continue;
        }
      } else if (dl_orient(dl_pt[a], dl_pt[b], p) <= 0) {
        dl_errors++;   /* outside the frame: cannot happen */
        return 1;
      }
      dl_grow((void **)&dl_bd, &dl_bdcap, nbd + 1, sizeof *dl_bd);
      dl_bd[nbd++] = (dl_bd_t){.a = a, .b = b, .nb = nb};
    }
  }
  /* Edges to triangles that joined the cavity later are inner ones; the new
   * triangles' cells must be ours. */
  long m = 0;
  for (long j = 0; j < nbd; j++) {
    dl_bd_t *e = &dl_bd[j];
    if (e->nb != NULL && e->nb->mark == stamp) continue;
    dl_circumcentre(p, dl_pt[e->a], dl_pt[e->b], &e->cx, &e->cy);
    e->cell = dl_cell_of(e->cx, e->cy);
    if (!dl_owned[e->cell]) return 0;
    dl_bd[m++] = *e;
  }
  for (long j = 0; j < m; j++) {
    if (dl_slot[dl_bd[j].a] >= 0) {   /* the boundary is not one cycle: rounding gone wrong */
      for (long q = 0; q < j; q++) dl_slot[dl_bd[q].a] = -1;
      dl_errors++;
      return 1;
    }
    dl_slot[dl_bd[j].a] = (int32_t)j;
  }
  for (long j = 0; j < m; j++)
    if (dl_slot[dl_bd[j].b] < 0) {
      for (long q = 0; q < m; q++) dl_slot[dl_bd[q].a] = -1;
      dl_errors++;
      return 1;
    }
  /* Commit: free the cavity, make the fan, link it. */
  for (long ci = 0; ci < ncav; ci++) dl_del_tri(dl_cav[ci]);
  for (long j = 0; j < m; j++) {
    dl_bd_t *e = &dl_bd[j];
    dl_tri_t *nt = e->t = dl_new_tri(pi, e->a, e->b, e->cx, e->cy, e->cell);
    nt->n[0] = e->nb;
    if (e->nb != NULL) {
      nt->ncell[0] = e->nb->cell;
      dl_tri_t *nb = e->nb;
      for (int q = 0; q < 3; q++)
        if (nb->v[q] != e->a && nb->v[q] != e->b) {
          nb->n[q] = nt;
          nb->ncell[q] = e->cell;
        }
    }
  }
  for (long j = 0; j < m; j++) {
    dl_bd_t *e = &dl_bd[j], *f = &dl_bd[dl_slot[e->b]];   /* f starts where e ends: edge (p, b) */
    e->t->n[1] = f->t, e->t->ncell[1] = f->cell;
    f->t->n[2] = e->t, f->t->ncell[2] = e->cell;
  }
  for (long j = 0; j < m; j++) dl_slot[dl_bd[j].a] = -1;
  dl_last = dl_bd[0].t;
  return 1;
}

/* ---------------------------------------------------------------------------
 * Ownership and transfers
 * ------------------------------------------------------------------------- */

/* Round r (0 .. k): the depth-r quadrant of Morton index q is worker q 4^(k-r)'s. */
static void dl_map_round(int r) {
  for (int c = 0; c < dl_ncells; c++) dl_owner[c] = (c >> 2 * (dl_L - r)) << 2 * (dl_k - r);
}

/* The final round's 2 x 2 blocks shifted by (sx, sy) cells, wrapping. */
static void dl_map_shift(int sx, int sy) {
  for (int c = 0; c < dl_ncells; c++) {
    int x = (int)dl_squash((uint32_t)c), y = (int)dl_squash((uint32_t)c >> 1);
    dl_owner[c] = dl_morton(((x - sx + dl_G) % dl_G) / 2, ((y - sy + dl_G) % dl_G) / 2);
  }
}

static void dl_map_all(int w) {
  for (int c = 0; c < dl_ncells; c++) dl_owner[c] = w;
}

/* The regions that go from src to dst: the largest subtrees all of whose
 * cells move from src to dst. */
static int dl_moving(int d, int m, int src, int dst, rid_t *out, int n) {
  int lo = m << 2 * (dl_L - d), hi = (m + 1) << 2 * (dl_L - d), all = 1, any = 0;
  for (int c = lo; c < hi; c++) {
    int mv = dl_prev[c] == src && dl_owner[c] == dst;
    all &= mv, any |= mv;
  }
  if (!any) return n;
  if (all) {
    out[n++] = dl_rid[dl_node(d, m)];
    return n;
  }
  for (int j = 0; j < 4; j++) n = dl_moving(d + 1, 4 * m + j, src, dst, out, n);
  return n;
}

static double dl_tris_of(int d, int m) {
  double s = 0;
  for (int c = m << 2 * (dl_L - d); c < (m + 1) << 2 * (dl_L - d); c++) s += (double)dl_hdr[c]->count;
  return s;
}

/* Sends the regions that change owner between dl_prev and dl_owner. */
static void dl_transfer(dl_phase_t *ph) {
  int cap = dl_ncells;
  rid_t *out = dl_malloc((size_t)cap * sizeof *out), *in = dl_malloc((size_t)cap * sizeof *in);
  for (int k = 1; k < dl_P; k++) {
    int peer = dl_me ^ k;
    int nout = dl_moving(0, 0, dl_me, peer, out, 0);
    int nin = dl_moving(0, 0, peer, dl_me, in, 0);
    for (int turn = 0; turn < 2; turn++) {
      if ((turn == 0) == (dl_me < peer)) {
        if (nout == 0) continue;
        for (int j = 0; j < nout; j++)   /* the triangles sent: what the cells hold */
          for (int d = 0; d <= dl_L; d++)
            for (int m = 0; m < 1 << 2 * d; m++)
              if (dl_rid[dl_node(d, m)] == out[j]) ph->tris_sent += dl_tris_of(d, m);
        ph->regions_sent += nout;
        if (sys_send(peer, out, nout, NULL, 0) != 0) dl_fail("sys_send");
      } else {
        if (nin == 0) continue;
        if (sys_recv(peer, in, cap, NULL, 0) != 0) dl_fail("sys_recv");
      }
    }
  }
  free(out), free(in);
}

/* ---------------------------------------------------------------------------
 * A phase
 * ------------------------------------------------------------------------- */

typedef struct dl_key {
  uint64_t key;
  int32_t i;
} dl_key_t;

static int dl_cmp_key(const void *a, const void *b) {
  uint64_t x = ((const dl_key_t *)a)->key, y = ((const dl_key_t *)b)->key;
  return (x > y) - (x < y);
}

static uint64_t dl_brio(long i) { return (uint64_t)(64 - __builtin_clzll((uint64_t)(i >> 8) + 1)); }

/* The global list of postponed points, and this phase's new one. */
typedef struct dl_pending {
  int32_t *idx;
  long n, cap;
} dl_pending_t;

/* Runs one phase: the owners are in dl_owner (dl_prev the last phase's);
 * inserts the points of [lo, hi) in cells this worker owns and those of
 * *pend; *pend becomes what every worker postponed. */
static void dl_phase(const char *name, long lo, long hi, dl_pending_t *pend, dl_phase_t *ph) {
  memset(ph, 0, sizeof *ph);
  snprintf(ph->name, sizeof ph->name, "%s", name);
  int seen[1024] = {0};
  for (int c = 0; c < dl_ncells; c++) {
    dl_owned[c] = dl_owner[c] == dl_me;
    if (dl_owner[c] < 1024 && !seen[dl_owner[c]]) seen[dl_owner[c]] = 1, ph->active++;
  }
  dl_sched_wait();
  MPI_Barrier(dl_comm);
  double t0 = bench_now_ns();
  dl_transfer(ph);
  double t1 = bench_now_ns();
  /* My points: the range's in my cells, then the pending ones in my cells. */
  long count = 0;
  for (int c = 0; c < dl_ncells; c++)
    if (dl_owned[c]) {
      const long *v = dl_cellpts[c];
      long a = 0, b = dl_cellnpts[c];
      while (a < b) {   /* first >= lo */
        long mid = (a + b) / 2;
        if (v[mid] < lo) a = mid + 1; else b = mid;
      }
      for (long j = a; j < dl_cellnpts[c] && v[j] < hi; j++) count++;
    }
  for (long j = 0; j < pend->n; j++) count += dl_owned[dl_cell_of(dl_pt[pend->idx[j]][0], dl_pt[pend->idx[j]][1])];
  dl_key_t *keys = dl_malloc((size_t)count * sizeof *keys);
  long nk = 0;
  for (int c = 0; c < dl_ncells; c++)
    if (dl_owned[c]) {
      const long *v = dl_cellpts[c];
      long a = 0, b = dl_cellnpts[c];
      while (a < b) {
        long mid = (a + b) / 2;
        if (v[mid] < lo) a = mid + 1; else b = mid;
      }
      for (long j = a; j < dl_cellnpts[c] && v[j] < hi; j++) keys[nk++].i = (int32_t)v[j];
    }
  for (long j = 0; j < pend->n; j++)
    if (dl_owned[dl_cell_of(dl_pt[pend->idx[j]][0], dl_pt[pend->idx[j]][1])]) keys[nk++].i = pend->idx[j];
  for (long j = 0; j < nk; j++)
    keys[j].key = dl_brio(keys[j].i) << 32 | dl_hilbert(dl_pt[keys[j].i][0], dl_pt[keys[j].i][1]);
  qsort(keys, (size_t)nk, sizeof *keys, dl_cmp_key);
  int32_t *mine = dl_malloc((size_t)(nk ? nk : 1) * sizeof *mine);
  long nmine = 0, ok = 0;
  dl_last = NULL;
  for (long j = 0; j < nk; j++) {
    if (dl_insert(keys[j].i)) ok++;
    else mine[nmine++] = keys[j].i;
  }
  free(keys);
  double t2 = bench_now_ns();
  /* Everyone's postponed points. */
  int cnt = (int)nmine, *counts = dl_malloc((size_t)dl_P * sizeof *counts), *displs = dl_malloc((size_t)dl_P * sizeof *displs);
  MPI_Allgather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, dl_comm);
  long total = 0;
  for (int w = 0; w < dl_P; w++) displs[w] = (int)total, total += counts[w];
  if (total > pend->cap) {
    pend->cap = total + 1024;
    free(pend->idx);
    pend->idx = dl_malloc((size_t)pend->cap * sizeof *pend->idx);
  }
  MPI_Allgatherv(mine, cnt, MPI_INT32_T, pend->idx, counts, displs, MPI_INT32_T, dl_comm);
  pend->n = total;
  free(mine), free(counts), free(displs);
  double t3 = bench_now_ns();
  MPI_Barrier(dl_comm);
  double t4 = bench_now_ns();
  double wait = dl_sched_wait();
  double mine_v[4] = {t1 - t0, t2 - t1, t3 - t2, 0}, max_v[4];
  MPI_Reduce(mine_v, max_v, 3, MPI_DOUBLE, MPI_MAX, 0, dl_comm);
  double sums_in[6] = {(double)nk, (double)ok, wait / dl_P, ph->regions_sent, ph->tris_sent, dl_last_calls}, sums[6];
  MPI_Reduce(sums_in, sums, 6, MPI_DOUBLE, MPI_SUM, 0, dl_comm);
  double tris_in = 0;
  for (int c = 0; c < dl_ncells; c++)
    if (dl_owned[c]) tris_in += (double)dl_hdr[c]->count;
  MPI_Reduce(&tris_in, &ph->tris_after, 1, MPI_DOUBLE, MPI_SUM, 0, dl_comm);
  ph->wall = t4 - t0;
  ph->transfer = max_v[0], ph->insert = max_v[1], ph->sync = max_v[2];
  ph->attempted = sums[0], ph->inserted = sums[1], ph->sched = sums[2], ph->regions_sent = sums[3];
  ph->tris_sent = sums[4], ph->calls = sums[5];
  ph->postponed = (double)pend->n;
  memcpy(dl_prev, dl_owner, (size_t)dl_ncells * sizeof *dl_prev);
}

/* ---------------------------------------------------------------------------
 * The check (worker 0, every cell at hand)
 * ------------------------------------------------------------------------- */

typedef struct dl_check {
  double triangles, expected, header_count, reached, sampled, violations, bad_links, bad_orient, bad_cells;
  double missing_points, area, max_rel;
  int passed;
} dl_check_t;

static void dl_check(const dl_opts_t *o, dl_check_t *ck) {
  memset(ck, 0, sizeof *ck);
  ck->expected = 2.0 * (double)dl_n + 2;
  for (int c = 0; c < dl_ncells; c++) ck->header_count += (double)dl_hdr[c]->count;
  /* Every triangle, breadth first from the anchors. */
  uint32_t stamp = dl_stamp += (uint32_t)dl_P;
  long cap = (long)ck->header_count + 16, nt = 0;
  dl_tri_t **all = dl_malloc((size_t)cap * sizeof *all);
  for (int c = 0; c < dl_ncells; c++) {
    dl_tri_t *a = dl_hdr[c]->anchor;
    if (a == NULL || a->mark == stamp) continue;
    a->mark = stamp;
    if (nt < cap) all[nt++] = a;
    for (long j = nt - 1; j < nt; j++)
      for (int i = 0; i < 3; i++) {
        dl_tri_t *nb = all[j]->n[i];
        if (nb != NULL && nb->mark != stamp && nt < cap) nb->mark = stamp, all[nt++] = nb;
      }
  }
  ck->reached = (double)nt;
  ck->triangles = (double)nt;
  uint8_t *seen = calloc((size_t)dl_n + 4, 1);
  for (long j = 0; j < nt; j++) {
    dl_tri_t *t = all[j];
    const double *a = dl_pt[t->v[0]], *b = dl_pt[t->v[1]], *c = dl_pt[t->v[2]];
    double ar = dl_orient(a, b, c);
    if (!(ar > 0)) ck->bad_orient++;
    ck->area += ar / 2;
    double x, y;
    dl_circumcentre(a, b, c, &x, &y);
    if (t->cell != dl_cell_of(x, y) && t->cell != dl_cell_of(t->cx, t->cy)) ck->bad_cells++;
    for (int i = 0; i < 3; i++) {
      seen[t->v[i]] = 1;
      dl_tri_t *nb = t->n[i];
      if (nb == NULL) {   /* only the frame's edges */
        if (t->v[(i + 1) % 3] < dl_n || t->v[(i + 2) % 3] < dl_n) ck->bad_links++;
        continue;
      }
      if (t->ncell[i] != nb->cell) ck->bad_cells++;
      int back = 0;
      for (int q = 0; q < 3; q++)
        if (nb->n[q] == t && nb->v[(q + 1) % 3] == t->v[(i + 2) % 3] && nb->v[(q + 2) % 3] == t->v[(i + 1) % 3]) back++;
      if (back != 1) ck->bad_links++;
    }
  }
  for (long i = 0; i < dl_n + 4; i++) ck->missing_points += !seen[i];
  free(seen);
  /* The empty-circle test on a sample, the points in buckets. */
  int B = (int)ceil(sqrt((double)dl_n / 2.0));
  if (B < 1) B = 1;
  long *start = calloc((size_t)B * B + 1, sizeof *start), *bucket = dl_malloc((size_t)(dl_n + 1) * sizeof *bucket);
  for (long i = 0; i < dl_n; i++) {
    int bx = (int)(dl_pt[i][0] * B), by = (int)(dl_pt[i][1] * B);
    start[(long)(by < B ? by : B - 1) * B + (bx < B ? bx : B - 1) + 1]++;
  }
  for (long j = 0; j < (long)B * B; j++) start[j + 1] += start[j];
  long *fill = dl_malloc((size_t)B * B * sizeof *fill);
  memcpy(fill, start, (size_t)B * B * sizeof *fill);
  for (long i = 0; i < dl_n; i++) {
    int bx = (int)(dl_pt[i][0] * B), by = (int)(dl_pt[i][1] * B);
    bucket[fill[(long)(by < B ? by : B - 1) * B + (bx < B ? bx : B - 1)]++] = i;
  }
  free(fill);
  long stride = o->sample > 0 && nt > o->sample ? nt / o->sample : 1;
  for (long j = 0; j < nt; j += stride) {
    dl_tri_t *t = all[j];
    const double *a = dl_pt[t->v[0]], *b = dl_pt[t->v[1]], *c = dl_pt[t->v[2]];
    double x, y;
    dl_circumcentre(a, b, c, &x, &y);
    double r = sqrt((a[0] - x) * (a[0] - x) + (a[1] - y) * (a[1] - y)) * (1 + 1e-6) + 1e-12;
    int x0 = (int)floor((x - r) * B), x1 = (int)floor((x + r) * B), y0 = (int)floor((y - r) * B), y1 = (int)floor((y + r) * B);
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0, x1 = x1 >= B ? B - 1 : x1, y1 = y1 >= B ? B - 1 : y1;
    if (!isfinite(x) || !isfinite(y) || !isfinite(r)) x0 = 0, y0 = 0, x1 = B - 1, y1 = B - 1;
    ck->sampled++;
    for (long q = dl_n; q < dl_n + 4; q++)
      if (q != t->v[0] && q != t->v[1] && q != t->v[2]) {
        double perm, det = dl_incircle(a, b, c, dl_pt[q], &perm);
        if (det > DL_TOL * perm) ck->violations++;
        if (perm > 0 && det / perm > ck->max_rel) ck->max_rel = det / perm;
      }
    for (int by = y0; by <= y1; by++)
      for (int bx = x0; bx <= x1; bx++)
        for (long s = start[(long)by * B + bx]; s < start[(long)by * B + bx + 1]; s++) {
          long q = bucket[s];
          if (q == t->v[0] || q == t->v[1] || q == t->v[2]) continue;
          double perm, det = dl_incircle(a, b, c, dl_pt[q], &perm);
          if (det > DL_TOL * perm) ck->violations++;
          if (perm > 0 && det / perm > ck->max_rel) ck->max_rel = det / perm;
        }
  }
  free(start), free(bucket), free(all);
  ck->passed = ck->triangles == ck->expected && ck->header_count == ck->expected && ck->violations == 0 &&
               ck->bad_links == 0 && ck->bad_orient == 0 && ck->bad_cells == 0 && ck->missing_points == 0 &&
               fabs(ck->area - 9.0) < 1e-9 * 9.0;
}

/* ---------------------------------------------------------------------------
 * Report, options, main
 * ------------------------------------------------------------------------- */

static void dl_report(const dl_opts_t *o, dl_phase_t (*ph)[DL_MAXPH], int nph, const double *total,
                      const double *fb_gather, const dl_check_t *ck, long errors, const sys_sched_stats_t *shape) {
  const char *lease = getenv("MANYMALLOC_DIST_LEASE");
  const char *mode = lease != NULL && strcmp(lease, "0") == 0 ? "remote" : "local";
  const char *layout = getenv("MANYMALLOC_SCHEDULERS");
  if (layout == NULL || *layout == '\0') layout = "1";
  int R = o->reps;
  double *v = dl_malloc((size_t)R * sizeof *v), tot[R];
  memcpy(tot, total, (size_t)R * sizeof *tot);
  double total_med = bench_median(tot, (size_t)R);
  bench_out_dir("dist-delaunay", o->out);
  char path[4096];
  snprintf(path, sizeof path, "%s/delaunay.jsonl", o->out);
  FILE *f = fopen(path, "a");
  if (f == NULL) dl_fail("fopen of delaunay.jsonl");
  fprintf(f, "{\"mode\": \"%s\", \"layout\": \"%s\", \"schedulers\": %lld, \"levels\": %lld, \"workers\": %d, "
             "\"points\": %ld, \"reps\": %d, \"round_points\": %ld, \"cells\": %d, \"regions\": %d, \"seed\": %llu, "
             "\"total_ms\": %.4f, \"total_ms_each\": [",
          mode, layout, (long long)shape->schedulers, (long long)shape->levels, dl_P, dl_n, R, o->round_points,
          dl_ncells, dl_node(dl_L + 1, 0), (unsigned long long)o->seed, total_med / 1e6);
  for (int r = 0; r < R; r++) fprintf(f, "%s%.4f", r ? ", " : "", total[r] / 1e6);
  for (int r = 0; r < R; r++) v[r] = fb_gather[r];
  fprintf(f, "], \"gather_ms\": %.4f, \"phases\": [", bench_median(v, (size_t)R) / 1e6);
  for (int p = 0; p < nph; p++) {
    fprintf(f, "%s{\"name\": \"%s\", \"active\": %d", p ? ", " : "", ph[0][p].name, ph[0][p].active);
    static const char *fields[] = {"wall_ms", "transfer_ms", "insert_ms", "sync_ms", "sched_ms"};
    for (int q = 0; q < 5; q++) {
      for (int r = 0; r < R; r++) {
        const dl_phase_t *x = &ph[r][p];
        v[r] = (q == 0 ? x->wall : q == 1 ? x->transfer : q == 2 ? x->insert : q == 3 ? x->sync : x->sched) / 1e6;
      }
      fprintf(f, ", \"%s\": %.4f", fields[q], bench_median(v, (size_t)R));
    }
    const dl_phase_t *x = &ph[R - 1][p];
    fprintf(f, ", \"attempted\": %.0f, \"inserted\": %.0f, \"postponed\": %.0f, \"regions_sent\": %.0f, "
               "\"triangles_sent\": %.0f, \"triangles_after\": %.0f, \"sched_calls\": %.0f}",
            x->attempted, x->inserted, x->postponed, x->regions_sent, x->tris_sent, x->tris_after, x->calls);
  }
  fprintf(f, "], \"check\": {\"passed\": %s, \"triangles\": %.0f, \"expected\": %.0f, \"header_count\": %.0f, "
             "\"sampled\": %.0f, \"violations\": %.0f, \"max_rel_incircle\": %.3e, \"tolerance\": %g, "
             "\"bad_links\": %.0f, \"bad_orient\": %.0f, \"bad_cells\": %.0f, \"missing_points\": %.0f, "
             "\"area\": %.12f, \"insert_errors\": %ld}}\n",
          ck->passed ? "true" : "false", ck->triangles, ck->expected, ck->header_count, ck->sampled, ck->violations,
          ck->max_rel, DL_TOL, ck->bad_links, ck->bad_orient, ck->bad_cells, ck->missing_points, ck->area, errors);
  bench_out_close("dist-delaunay", f, "delaunay.jsonl");
  printf("dist-delaunay, %s, schedulers %s, %d workers, %ld points, %d reps: %.1f ms (median)", mode, layout, dl_P,
         dl_n, R, total_med / 1e6);
  for (int p = 0; p < nph; p++) {
    for (int r = 0; r < R; r++) v[r] = ph[r][p].wall;
    printf("%s %s %.1f", p ? "," : ";", ph[0][p].name, bench_median(v, (size_t)R) / 1e6);
  }
  printf("; check %s: %.0f triangles (expected %.0f), %.0f sampled, %.0f violations (max det/perm %.1e), "
         "%.0f bad links\n", ck->passed ? "passed" : "FAILED", ck->triangles, ck->expected, ck->sampled,
         ck->violations, ck->max_rel, ck->bad_links);
  free(v);
}

static void dl_usage(const char *prog) {
  if (dl_me == 0)
    fprintf(stderr, "usage: mpirun -np 1+P %s [--out DIR (.)] [--points N (20000)] [--reps R (3)] "
                    "[--round-points M (1024)] [--sample S (100000)] [--seed X (1)]\n"
                    "P workers: a power of four (1, 4, 16, ...)\n", prog);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

static void dl_parse(int argc, char **argv, dl_opts_t *o) {
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) dl_usage(argv[0]);
    const char *k = argv[i], *v = argv[++i];
    if (strcmp(k, "--out") == 0) o->out = v;
    else if (strcmp(k, "--points") == 0) o->points = atol(v);
    else if (strcmp(k, "--reps") == 0) o->reps = atoi(v);
    else if (strcmp(k, "--round-points") == 0) o->round_points = atol(v);
    else if (strcmp(k, "--sample") == 0) o->sample = atol(v);
    else if (strcmp(k, "--seed") == 0) o->seed = strtoull(v, NULL, 0);
    else dl_usage(argv[0]);
  }
  if (o->points < 1 || o->points > INT32_MAX - 8 || o->reps < 1 || o->round_points < 1) dl_usage(argv[0]);
}

int myrmics_main(int argc, char **argv) {
  dl_opts_t o = {.out = ".", .points = 20000, .reps = 3, .round_points = 1024, .sample = 100000, .seed = 1};
  dl_me = sys_worker_id();
  dl_P = sys_num_workers();
  dl_comm = sys_worker_comm();
  dl_parse(argc, argv, &o);
  for (dl_k = 0; (1 << 2 * dl_k) < dl_P; dl_k++) {}
  if ((1 << 2 * dl_k) != dl_P || dl_k > 6) dl_usage(argv[0]);
  dl_L = dl_k + 1, dl_G = 1 << dl_L, dl_ncells = dl_G * dl_G;
  dl_n = o.points;
  dl_stamp = (uint32_t)dl_me + 1;
  dl_rng ^= dl_mix((uint64_t)dl_me + 7);
  dl_make_points(&o);
  dl_rid = dl_malloc((size_t)dl_node(dl_L + 1, 0) * sizeof *dl_rid);
  dl_hdr = dl_malloc((size_t)dl_ncells * sizeof *dl_hdr);
  dl_owned = dl_malloc((size_t)dl_ncells);
  dl_owner = dl_malloc((size_t)dl_ncells * sizeof *dl_owner);
  dl_prev = dl_malloc((size_t)dl_ncells * sizeof *dl_prev);
  dl_slot = dl_malloc((size_t)(dl_n + 4) * sizeof *dl_slot);
  for (long i = 0; i < dl_n + 4; i++) dl_slot[i] = -1;

  dl_phase_t (*ph)[DL_MAXPH] = calloc((size_t)o.reps, sizeof *ph);
  double *total = dl_malloc((size_t)o.reps * sizeof *total), *gather = calloc((size_t)o.reps, sizeof *gather);
  dl_pending_t pend = {0};
  dl_check_t ck = {0};
  int nph = 0, passed = 1;
  long errors_all = 0;
  for (int rep = 0; rep < o.reps; rep++) {
    nph = 0;
    dl_errors = 0;
    pend.n = 0;
    MPI_Barrier(dl_comm);
    double t0 = bench_now_ns();
    dl_make_regions();
    dl_map_all(0);
    memcpy(dl_prev, dl_owner, (size_t)dl_ncells * sizeof *dl_prev);
    if (dl_me == 0) dl_seed_frame();
    double setup = bench_now_ns() - t0;
    /* Rounds: 1, 4, ... P workers. */
    long done = 0;
    for (int r = 0; r <= dl_k; r++) {
      long upto = r == dl_k ? dl_n : o.round_points * (1L << 2 * (r + 1));
      if (upto > dl_n) upto = dl_n;
      if (upto < done) upto = done;
      dl_map_round(r);
      char name[24];
      snprintf(name, sizeof name, "round %d", r);
      dl_phase(name, done, upto, &pend, &ph[rep][nph++]);
      done = upto;
    }
    if (dl_k > 0) {
      static const int shift[3][2] = {{1, 0}, {1, 1}, {0, 1}};
      static const char *names[3] = {"retri right", "retri down", "retri left"};
      for (int s = 0; s < 3; s++) {
        dl_map_shift(shift[s][0], shift[s][1]);
        dl_phase(names[s], 0, 0, &pend, &ph[rep][nph++]);
      }
    }
    dl_map_all(0);
    if (pend.n > 0) {
      dl_phase("fallback", 0, 0, &pend, &ph[rep][nph++]);
    } else {   /* the gather for the check only: untimed */
      dl_phase_t g;
      dl_phase("gather", 0, 0, &pend, &g);
      gather[rep] = g.wall;
    }
    total[rep] = setup;
    for (int p = 0; p < nph; p++) total[rep] += ph[rep][p].wall;
    long errs = dl_errors, errs_sum = 0;
    MPI_Reduce(&errs, &errs_sum, 1, MPI_LONG, MPI_SUM, 0, dl_comm);
    errors_all += errs_sum;
    if (dl_me == 0) {
      if (rep == o.reps - 1) {
        dl_check(&o, &ck);
      } else {
        double h = 0;
        for (int c = 0; c < dl_ncells; c++) h += (double)dl_hdr[c]->count;
        if (h != 2.0 * (double)dl_n + 2) passed = 0;
      }
      if (pend.n > 0 || errs_sum > 0) passed = 0;
      ph[rep][0].wall += setup;   /* the regions' making counts in round 0 */
    }
    MPI_Barrier(dl_comm);
    if (dl_me == 0 && sys_rfree(dl_rid[0]) != 0) dl_fail("sys_rfree");
    if (sys_barrier() != 0) dl_fail("sys_barrier");
  }
  sys_sched_stats_t shape;
  if (sys_sched_stats(&shape) != 0) dl_fail("sys_sched_stats");
  if (dl_me == 0) {
    ck.passed = ck.passed && passed;
    dl_report(&o, ph, nph, total, gather, &ck, errors_all, &shape);
  }
  MPI_Bcast(&ck.passed, 1, MPI_INT, 0, dl_comm);
  free(ph), free(total), free(gather), free(pend.idx), free(dl_pt), free(dl_rid), free(dl_hdr), free(dl_owned);
  free(dl_owner), free(dl_prev), free(dl_slot), free(dl_cav), free(dl_bd);
  for (int c = 0; c < dl_ncells; c++) free(dl_cellpts[c]);
  free(dl_cellpts), free(dl_cellnpts);
  return ck.passed ? 0 : 1;
}
