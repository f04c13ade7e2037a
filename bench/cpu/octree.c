/* SPDX-License-Identifier: Apache-2.0 */
/* bench-octree: a Barnes-Hut step loop, the octree built from malloc'd
 * cells, traversed, and freed whole at every step (written anew).
 *
 * Each thread owns its own --bodies bodies (--threads N runs N independent
 * simulations: the one-thread run is the shape, more threads check that
 * it scales).  A step inserts every body into a fresh octree (one malloc
 * per cell, split as bodies land in the same leaf), sums masses and
 * centres up the tree, walks it once per body to compute the force with
 * the opening angle 0.5, moves the bodies and frees the tree cell by cell.
 * The allocator sees bursts of tens of thousands of same-size mallocs,
 * read-mostly pointer chasing through them, and a burst of frees that
 * empties every page it used, step after step. */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct octree_body_s {
  double pos[3], vel[3], acc[3], mass;
} octree_body_t;

typedef struct octree_cell_s octree_cell_t;
struct octree_cell_s {
  double centre[3], half;        /* the cube this cell covers */
  double mass, com[3];           /* total mass and centre of mass below */
  octree_cell_t *child[8];
  octree_body_t *body;           /* a leaf's one body (NULL in inner cells) */
  unsigned long tag;             /* checked before the cell is freed */
};

typedef struct octree_thread_s {
  long bodies, steps, seed, index;
  long cells, errors;
} octree_thread_t;

static unsigned long octree_tag(const octree_cell_t *c) { return (unsigned long)(uintptr_t)c ^ 0x5bd1e995UL; }

static octree_cell_t *octree_cell(octree_thread_t *t, const double centre[3], double half) {
  octree_cell_t *c = malloc(sizeof *c);
  if (c == NULL) { perror("malloc"); exit(1); }
  *c = (octree_cell_t){ .centre = { centre[0], centre[1], centre[2] }, .half = half };
  c->tag = octree_tag(c);
  t->cells++;
  return c;
}

static unsigned octree_octant(const octree_cell_t *c, const double pos[3]) {
  return (pos[0] > c->centre[0]) | (pos[1] > c->centre[1]) << 1 | (pos[2] > c->centre[2]) << 2;
}

static octree_cell_t *octree_child(octree_thread_t *t, octree_cell_t *c, unsigned oct) {
  if (c->child[oct] == NULL) {
    double h = c->half / 2, centre[3];
    for (int d = 0; d < 3; d++) centre[d] = c->centre[d] + ((oct >> d) & 1 ? h : -h);
    c->child[oct] = octree_cell(t, centre, h);
  }
  return c->child[oct];
}

static void octree_insert(octree_thread_t *t, octree_cell_t *c, octree_body_t *b) {
  for (int depth = 0; depth < 64; depth++) {
    bool leaf = true;
    for (int i = 0; i < 8; i++) leaf = leaf && c->child[i] == NULL;
    if (leaf && c->body == NULL) { c->body = b; return; }
    if (leaf) {   /* split: the resident body moves one level down */
      octree_body_t *old = c->body;
      c->body = NULL;
      octree_child(t, c, octree_octant(c, old->pos))->body = old;
    }
    c = octree_child(t, c, octree_octant(c, b->pos));
  }
  c->body = b;  /* coincident bodies past 64 levels share the deepest cell's slot: the last one stays */
}

static void octree_summarize(octree_cell_t *c) {
  if (c->body != NULL) {
    c->mass = c->body->mass;
    for (int d = 0; d < 3; d++) c->com[d] = c->body->pos[d];
    return;
  }
  for (int i = 0; i < 8; i++) {
    octree_cell_t *k = c->child[i];
    if (k == NULL) continue;
    octree_summarize(k);
    c->mass += k->mass;
    for (int d = 0; d < 3; d++) c->com[d] += k->com[d] * k->mass;
  }
  if (c->mass > 0) for (int d = 0; d < 3; d++) c->com[d] /= c->mass;
}

static void octree_force(const octree_cell_t *c, octree_body_t *b) {
  if (c->mass == 0 || c->body == b) return;
  double dx[3], r2 = 1e-6;
  for (int d = 0; d < 3; d++) { dx[d] = c->com[d] - b->pos[d]; r2 += dx[d] * dx[d]; }
  bool far = 4 * c->half * c->half < 0.25 * r2;   /* (size / distance)^2 < theta^2 */
  if (c->body != NULL || far) {
    double f = c->mass / (r2 * sqrt(r2));
    for (int d = 0; d < 3; d++) b->acc[d] += f * dx[d];
    return;
  }
  for (int i = 0; i < 8; i++) if (c->child[i] != NULL) octree_force(c->child[i], b);
}

static void octree_free(octree_thread_t *t, octree_cell_t *c) {
  for (int i = 0; i < 8; i++) if (c->child[i] != NULL) octree_free(t, c->child[i]);
  if (c->tag != octree_tag(c)) t->errors++;
  free(c);
}

static void *octree_thread(void *arg) {
  octree_thread_t *t = arg;
  uint64_t rng = bench_seed(t->seed, t->index);
  octree_body_t *bodies = calloc((size_t)t->bodies, sizeof *bodies);
  if (bodies == NULL) { perror("calloc"); exit(1); }
  for (long i = 0; i < t->bodies; i++) {
    for (int d = 0; d < 3; d++) bodies[i].pos[d] = (double)(bench_rand(&rng) >> 11) * 0x1p-53 * 2 - 1;
    bodies[i].mass = 1.0 / (double)t->bodies;
  }
  bench_start_wait();
  for (long s = 0; s < t->steps; s++) {
    const double origin[3] = { 0, 0, 0 };
    octree_cell_t *root = octree_cell(t, origin, 64);
    for (long i = 0; i < t->bodies; i++) octree_insert(t, root, &bodies[i]);
    octree_summarize(root);
    for (long i = 0; i < t->bodies; i++) {
      octree_body_t *b = &bodies[i];
      b->acc[0] = b->acc[1] = b->acc[2] = 0;
      octree_force(root, b);
      for (int d = 0; d < 3; d++) {
        b->vel[d] += 1e-4 * b->acc[d];
        b->pos[d] = fmax(-63, fmin(63, b->pos[d] + 1e-4 * b->vel[d]));
      }
    }
    octree_free(t, root);
  }
  free(bodies);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = 1, bodies = 20000, steps = 10, seed = 1;
  bench_opt_t opts[] = {
    { "threads", &threads, "independent simulations, one per thread" },
    { "bodies",  &bodies,  "bodies per simulation" },
    { "steps",   &steps,   "time steps (one octree built, walked and freed each)" },
    { "seed",    &seed,    "random seed" },
  };
  bench_parse(argc, argv, "Barnes-Hut steps: an octree of malloc'd cells built, walked and freed at every step.",
              opts, sizeof opts / sizeof opts[0]);
  if (threads < 1 || bodies < 1) { fprintf(stderr, "bench-octree: bad options\n"); return 2; }

  octree_thread_t *ts = calloc((size_t)threads, sizeof *ts);
  for (long i = 0; i < threads; i++)
    ts[i] = (octree_thread_t){ .bodies = bodies, .steps = steps, .seed = seed, .index = i };
  double seconds = bench_run_threads(threads, octree_thread, ts, sizeof *ts);
  long errors = 0, cells = 0;
  for (long i = 0; i < threads; i++) { errors += ts[i].errors; cells += ts[i].cells; }
  free(ts);
  return bench_report("octree", threads, cells, seconds, errors);
}
