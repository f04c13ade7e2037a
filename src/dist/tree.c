/* SPDX-License-Identifier: Apache-2.0 */
/* tree.c: parsing the tree's shape and placing ranks (see tree.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tree.h"
#include "manymalloc/myrmics.h"

/* ---------------------------------------------------------------------------
 * Shape
 * ------------------------------------------------------------------------- */

static int tree_levels(mmd_tree_t *t, const char *s, char *why, size_t whylen) {
  if (s == NULL || *s == '\0') s = "1";
  const char *p = s;
  for (t->nlevels = 0; *p; t->nlevels++) {
    char *end;
    long n = strtol(p, &end, 10);
    if (end == p || n < 1 || n > 1 << 20 || (*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0') ||
        t->nlevels == MMD_TREE_MAX_LEVELS) {
      snprintf(why, whylen, "MANYMALLOC_SCHEDULERS=%s: expected up to %d positive counts, top first, as in 1,4,16",
               s, MMD_TREE_MAX_LEVELS);
      return -1;
    }
    t->level_size[t->nlevels] = (int)n;
    p = *end ? end + 1 : end;
  }
  for (int l = 0; l < t->nlevels; l++) {
    int above = l ? t->level_size[l - 1] : 1;
    if (t->level_size[l] % above != 0 || (l == 0 && t->level_size[0] != 1)) {
      snprintf(why, whylen, "MANYMALLOC_SCHEDULERS=%s: level %d has %d schedulers; it must be %s", s, l + 1,
               t->level_size[l], l == 0 ? "1 (one top scheduler)" : "a multiple of the level above");
      return -1;
    }
    t->level_first[l] = t->nsched;
    t->nsched += t->level_size[l];
  }
  t->nleaves = t->level_size[t->nlevels - 1];
  return 0;
}

static int tree_workers(mmd_tree_t *t, const char *per_leaf, const char *scheds, char *why, size_t whylen) {
  t->nworkers = t->size - t->nsched;
  if (per_leaf && *per_leaf) {
    char *end;
    long w = strtol(per_leaf, &end, 10);
    if (end == per_leaf || *end || w < 1 || w > 1 << 24) {
      snprintf(why, whylen, "MANYMALLOC_WORKERS_PER_SCHEDULER=%s: expected a positive count", per_leaf);
      return -1;
    }
    if ((long)t->nsched + w * t->nleaves != t->size) {
      snprintf(why, whylen, "MANYMALLOC_SCHEDULERS=%s with MANYMALLOC_WORKERS_PER_SCHEDULER=%ld needs %ld MPI ranks, "
               "but %d were started", scheds && *scheds ? scheds : "1", w, t->nsched + w * t->nleaves, t->size);
      return -1;
    }
  }
  if (t->nworkers < t->nleaves) {
    snprintf(why, whylen, "MANYMALLOC_SCHEDULERS=%s: %d scheduler(s) and one worker per leaf need at least %d MPI "
             "ranks, but %d were started", scheds && *scheds ? scheds : "1", t->nsched, t->nsched + t->nleaves, t->size);
    return -1;
  }
  t->leaf_workers = calloc((size_t)t->nleaves, sizeof(int));
  t->leaf_first = calloc((size_t)t->nleaves, sizeof(int));
  if (!t->leaf_workers || !t->leaf_first) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  for (int i = 0, first = 0; i < t->nleaves; i++) {
    t->leaf_workers[i] = t->nworkers / t->nleaves + (i < t->nworkers % t->nleaves);
    t->leaf_first[i] = first;
    first += t->leaf_workers[i];
  }
  return 0;
}

int mmd_tree_parse(mmd_tree_t *t, const char *scheds, const char *per_leaf, int size, char *why,
                   size_t whylen) {
  *t = (mmd_tree_t){.size = size};
  if (tree_levels(t, scheds, why, whylen) != 0) return -1;
  return tree_workers(t, per_leaf, scheds, why, whylen);
}

void mmd_tree_destroy(mmd_tree_t *t) {
  free(t->leaf_workers);
  free(t->leaf_first);
  free(t->sched_rank);
  free(t->worker_rank);
  free(t->role);
  *t = (mmd_tree_t){0};
}

/* ---------------------------------------------------------------------------
 * Placement
 * ------------------------------------------------------------------------- */

/* The ranks not yet placed, grouped by host. */
typedef struct tree_hosts {
  int n;
  int *host;     /* [size]: distinct host IDs, in order of first rank */
  int *left;     /* [n]: ranks of each host not yet placed */
} tree_hosts_t;

static int tree_most_free_host(const tree_hosts_t *h) {
  int best = 0;
  for (int i = 1; i < h->n; i++)
    if (h->left[i] > h->left[best]) best = i;
  return best;
}

/* The lowest unplaced rank of host index hi. */
static int tree_take_rank(const mmd_tree_t *t, const int *host_of, tree_hosts_t *h, int hi) {
  for (int r = 0; r < t->size; r++)
    if (t->role[r] == INT32_MIN && host_of[r] == h->host[hi]) {
      h->left[hi]--;
      return r;
    }
  return -1;
}

/* A leaf's scheduler and workers, from the host with the most ranks left,
 * spilling to the next such host only when that one is full. */
static void tree_place_leaf(mmd_tree_t *t, const int *host_of, tree_hosts_t *h, int leaf) {
  int sched = t->level_first[t->nlevels - 1] + leaf, hi = tree_most_free_host(h);
  for (int i = -1; i < t->leaf_workers[leaf]; i++) {
    if (h->left[hi] == 0) hi = tree_most_free_host(h);
    int r = tree_take_rank(t, host_of, h, hi);
    if (i < 0) {
      t->sched_rank[sched] = r;
      t->role[r] = sched;
    } else {
      int id = t->leaf_first[leaf] + i;
      t->worker_rank[id] = r;
      t->role[r] = -1 - id;
    }
  }
}

int mmd_tree_place(mmd_tree_t *t, const int *host_of) {
  t->sched_rank = malloc((size_t)t->nsched * sizeof(int));
  t->worker_rank = malloc((size_t)t->nworkers * sizeof(int));
  t->role = malloc((size_t)t->size * sizeof(int));
  tree_hosts_t h = {.host = malloc((size_t)t->size * sizeof(int)), .left = calloc((size_t)t->size, sizeof(int))};
  if (!t->sched_rank || !t->worker_rank || !t->role || !h.host || !h.left) {
    free(h.host);
    free(h.left);
    return SYS_ERR_NOMEM;
  }
  for (int r = 0; r < t->size; r++) {
    t->role[r] = INT32_MIN;
    int i = 0;
    while (i < h.n && h.host[i] != host_of[r]) i++;
    if (i == h.n) h.host[h.n++] = host_of[r];
    h.left[i]++;
  }
  for (int leaf = 0; leaf < t->nleaves; leaf++) tree_place_leaf(t, host_of, &h, leaf);
  for (int s = 0, r = 0; s < t->level_first[t->nlevels - 1]; s++) {   /* the levels above: what is left */
    while (t->role[r] != INT32_MIN) r++;
    t->sched_rank[s] = r;
    t->role[r] = s;
  }
  free(h.host);
  free(h.left);
  return 0;
}

/* ---------------------------------------------------------------------------
 * Navigation
 * ------------------------------------------------------------------------- */

int mmd_tree_level(const mmd_tree_t *t, int sched) {
  int l = t->nlevels - 1;
  while (l > 0 && sched < t->level_first[l]) l--;
  return l;
}

int mmd_tree_parent(const mmd_tree_t *t, int sched) {
  int l = mmd_tree_level(t, sched);
  if (l == 0) return -1;
  int fan = t->level_size[l] / t->level_size[l - 1];
  return t->level_first[l - 1] + (sched - t->level_first[l]) / fan;
}

int mmd_tree_nchildren(const mmd_tree_t *t, int sched) {
  int l = mmd_tree_level(t, sched);
  return l == t->nlevels - 1 ? 0 : t->level_size[l + 1] / t->level_size[l];
}

int mmd_tree_first_child(const mmd_tree_t *t, int sched) {
  int l = mmd_tree_level(t, sched);
  return t->level_first[l + 1] + (sched - t->level_first[l]) * mmd_tree_nchildren(t, sched);
}

int mmd_tree_child_toward(const mmd_tree_t *t, int sched, int other) {
  int l = mmd_tree_level(t, sched);
  for (int o = other; o >= 0; o = mmd_tree_parent(t, o))
    if (mmd_tree_level(t, o) == l + 1) return mmd_tree_parent(t, o) == sched ? o : -1;
  return -1;
}

int mmd_tree_subtree_size(const mmd_tree_t *t, int sched) {
  int n = 1, l = mmd_tree_level(t, sched), width = 1;
  for (int k = l + 1; k < t->nlevels; k++) {
    width *= t->level_size[k] / t->level_size[k - 1];
    n += width;
  }
  return n;
}
